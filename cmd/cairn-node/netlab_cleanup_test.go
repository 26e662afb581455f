//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The labs alive in this process, so that an interrupt can remove them.
// A test's cleanups do not run when the test binary is interrupted, and
// a namespace, unlike a process, outlives its maker.
var (
	labsMu     sync.Mutex
	labsAlive  = map[*netLab]bool{}
	labsSignal sync.Once
)

// registerLab records lab and, the first time, starts watching for
// SIGINT and SIGTERM: on either, every live lab is torn down and the
// test binary exits, as it would have without the handler.
func registerLab(lab *netLab) {
	labsMu.Lock()
	labsAlive[lab] = true
	labsMu.Unlock()
	labsSignal.Do(func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-sig
			labsMu.Lock()
			var alive []*netLab
			for l := range labsAlive {
				alive = append(alive, l)
			}
			labsMu.Unlock()
			for _, l := range alive {
				l.teardown()
			}
			fmt.Fprintf(os.Stderr, "partition suite: %v: removed %d network labs\n", s, len(alive))
			os.Exit(2)
		}()
	})
}

func unregisterLab(lab *netLab) {
	labsMu.Lock()
	delete(labsAlive, lab)
	labsMu.Unlock()
}

// sweepLeftoverLabs removes the namespaces and bridges that an earlier
// test process left behind when it was killed (a timeout's panic skips
// cleanups), along with any process still running in them. A name
// belongs to a dead run when the PID it carries is gone; labs of live
// processes, such as a run in parallel, are left alone.
func sweepLeftoverLabs(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) > 0 && leftover(fields[0]) {
				t.Logf("removing namespace %s, left by an earlier run", fields[0])
				killNetnsProcesses(fields[0])
				runTool("ip", "netns", "del", fields[0])
			}
		}
	}
	out, err = exec.Command("ip", "-o", "link", "show", "type", "bridge").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		// Lines read "7: name: <FLAGS> ...".
		fields := strings.Fields(line)
		if len(fields) > 1 {
			name := strings.TrimSuffix(fields[1], ":")
			if leftover(name) {
				t.Logf("removing bridge %s, left by an earlier run", name)
				runTool("ip", "link", "del", name)
			}
		}
	}
}

// leftover reports whether name is a lab's and its maker is gone.
func leftover(name string) bool {
	rest, ok := strings.CutPrefix(name, labPrefix)
	if !ok {
		return false
	}
	pid36, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pid, err := strconv.ParseInt(pid36, 36, 32)
	if err != nil || pid <= 0 {
		return false
	}
	_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

// freeSubnet picks a /24 in 10.0.0.0/8 for a lab that overlaps no route
// of this namespace (the machine's own networks, other labs' bridges).
// It starts from one drawn from the PID and sequence number, so two
// processes starting at once seldom try the same one first.
func freeSubnet(pid, seq int) (netip.Prefix, error) {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("ip route: %v", err)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		dst := fields[0]
		if fields[0] == "local" || fields[0] == "broadcast" {
			if len(fields) < 2 {
				continue
			}
			dst = fields[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	start := (pid*131 + seq*7) % (1 << 16)
	for i := range 1 << 16 {
		k := (start + i) % (1 << 16)
		candidate := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(k >> 8), byte(k), 0}), 24)
		if !overlapsAny(candidate, used) {
			return candidate, nil
		}
	}
	return netip.Prefix{}, errors.New("every /24 of 10.0.0.0/8 overlaps a route")
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if p.Overlaps(u) {
			return true
		}
	}
	return false
}
