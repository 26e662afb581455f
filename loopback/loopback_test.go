package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrsAreDistinctFreeAndOutsideTheEphemeralRange asks for a
// cluster's worth of addresses and binds every one of them.
func TestAddrsAreDistinctFreeAndOutsideTheEphemeralRange(t *testing.T) {
	const n = 12
	addrs, err := Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != n {
		t.Fatalf("got %d addresses, want %d", len(addrs), n)
	}
	low := ephemeralLow()
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("address %s given twice in %v", a, addrs)
		}
		seen[a] = true
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if p < portLow || p >= low {
			t.Fatalf("port %d is outside [%d, %d)", p, portLow, low)
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("address %s is not free: %v", a, err)
		}
		defer ln.Close()
	}
}

// TestAddrsSkipsAPortInUse holds one port and starts the probe at it:
// the held one is skipped and the ports after it are returned.
func TestAddrsSkipsAPortInUse(t *testing.T) {
	addrs, err := Addrs(1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(addrs[0])
	p, _ := strconv.Atoi(port)
	again, err := addrsFrom(3, p-portLow, ephemeralLow()-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range again {
		if a == addrs[0] {
			t.Fatalf("addrsFrom returned %s, which is held", a)
		}
	}
	_, first, _ := net.SplitHostPort(again[0])
	if f, _ := strconv.Atoi(first); p+1 < ephemeralLow()-100 && (f <= p || f > p+100) {
		t.Fatalf("the probe from the held port %d began its answer at %d, not just after it", p, f)
	}
}
