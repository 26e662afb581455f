package live

import (
	"net"
	"testing"
)

// A dial to a port nothing listens on is refused, which the runtime takes
// for a peer whose process is gone; a dial to a listening port is not,
// and neither is a failure of another kind.
func TestADialToAClosedPortIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if c, err := net.Dial("tcp", addr); err != nil || refused(err) {
		t.Fatalf("a dial to a listening port: %v", err)
	} else {
		c.Close()
	}
	ln.Close()
	_, err = net.Dial("tcp", addr)
	if !refused(err) {
		t.Fatalf("a dial to a closed port failed with %v, not taken for a refusal", err)
	}
	if _, err := net.Dial("tcp", "127.0.0.1:bad"); err == nil || refused(err) {
		t.Fatalf("a dial to a malformed address: %v", err)
	}
}
