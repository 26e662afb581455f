// Package loopback finds free TCP addresses on 127.0.0.1 for the
// clusters that tests and benchmarks start on one machine.
//
// Asking the kernel for port 0, reading the port it chose and releasing
// it is racy in a particular way: the port comes from the ephemeral
// range, the same range the kernel draws from for every outgoing
// connection. Between the release and the node's own bind, any client
// dialling anything (a test's own clients, another package's tests run
// in parallel) can be given that port as its local end, and the node
// then fails with "address already in use". Ports below the ephemeral
// range are never handed out that way, so only a program that binds a
// fixed port could take one, and Addrs starts at a random place in that
// range so that two test processes rarely probe the same ports.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Fallback bounds of the ephemeral range where the kernel does not tell
// (Linux's default; other systems start theirs higher, at 49152).
const (
	ephemeralLowDefault = 32768
	// portLow is the first port Addrs considers: below it sit the
	// registered ports of services a machine may run.
	portLow = 10000
)

// Addrs returns n distinct "127.0.0.1:port" addresses that were free a
// moment ago, all outside the kernel's ephemeral port range. It probes
// each port by binding it, holding every chosen port until all n are
// found so that none is chosen twice.
func Addrs(n int) ([]string, error) {
	high := ephemeralLow() - 1
	if high <= portLow {
		return nil, fmt.Errorf("loopback: the ephemeral port range starts at %d, leaving no ports below it to use", high+1)
	}
	return addrsFrom(n, rand.IntN(high-portLow+1), high)
}

// addrsFrom probes ports from portLow+start upward, wrapping at high.
func addrsFrom(n, start, high int) ([]string, error) {
	span := high - portLow + 1
	var out []string
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for i := 0; i < span && len(out) < n; i++ {
		addr := "127.0.0.1:" + strconv.Itoa(portLow+(start+i)%span)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken; try the next
		}
		held = append(held, ln)
		out = append(out, addr)
	}
	if len(out) < n {
		return nil, fmt.Errorf("loopback: found %d free ports between %d and %d, wanted %d", len(out), portLow, high, n)
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, read
// from /proc on Linux.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralLowDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return ephemeralLowDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 0 {
		return ephemeralLowDefault
	}
	return low
}
