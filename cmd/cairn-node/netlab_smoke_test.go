//go:build linux

package main

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"
)

// labHelperEnv, when set in a test binary's environment, makes
// TestNetLabHelperProcess act as a tiny TCP peer inside a namespace:
// "listen ADDR" answers every connection with "ok", "dial ADDR" connects
// and exits 0 on that answer, 2 on a timeout and 1 on any other error.
const labHelperEnv = "CAIRN_NETLAB_HELPER"

// labDialWait is how long a smoke-test dial waits. A dropped SYN is
// retransmitted after a second, so a dial that is not answered in this
// time was not answered at all.
const labDialWait = 700 * time.Millisecond

// TestNetLabHelperProcess is not a test: it is the helper above, run by
// TestNetLabCuts in the namespaces; without the variable it returns.
func TestNetLabHelperProcess(t *testing.T) {
	mode, addr := os.Getenv(labHelperEnv), os.Getenv(labHelperEnv+"_ADDR")
	switch mode {
	case "listen":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(1)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Write([]byte("ok\n"))
			c.Close()
		}
	case "dial":
		switch err := labDial(addr); {
		case err == nil:
			os.Exit(0)
		case isTimeout(err):
			os.Exit(2)
		default:
			os.Exit(1)
		}
	}
}

// labDial connects to addr and reads the helper's answer.
func labDial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, labDialWait)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(labDialWait))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ok\n" {
		err = errors.New("unexpected answer " + line)
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestNetLabCuts checks the namespace harness itself on two namespaces
// with a listener in each: that the test's namespace and the peers reach
// each node, that a cut from peers leaves the test's namespace through
// while peers time out (silently: no reset, so no refusal), that
// isolation cuts the test's namespace off too, that healing restores
// both, and that an armed cut changes nothing until fired.
func TestNetLabCuts(t *testing.T) {
	lab := newNetLab(t, 2)
	for i, nd := range lab.nodes {
		cmd := lab.helper(i, "listen", netip.AddrPortFrom(nd.addr, 9000).String())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	n1 := netip.AddrPortFrom(lab.nodes[0].addr, 9000).String()
	waitListening(t, n1)
	reach := func(when string, fromTest, fromPeer bool) {
		t.Helper()
		if err := labDial(n1); (err == nil) != fromTest || (!fromTest && !isTimeout(err)) {
			t.Errorf("%s: the test's namespace reaching n1: %v (want reached %v, or else a timeout)", when, err, fromTest)
		}
		err := lab.helper(1, "dial", n1).Run()
		var exit *exec.ExitError
		switch {
		case fromPeer && err != nil:
			t.Errorf("%s: n2 cannot reach n1: %v", when, err)
		case !fromPeer && !(errors.As(err, &exit) && exit.ExitCode() == 2):
			t.Errorf("%s: n2 reaching n1 should time out: %v\nn1's rules:\n%s", when, err, lab.rules(0))
		}
	}
	reach("before any cut", true, true)
	mustLab(t, lab.cut(0, cutPeers))
	reach("n1 cut from its peers", true, false)
	mustLab(t, lab.heal(0))
	reach("healed", true, true)
	mustLab(t, lab.cut(0, cutAll))
	reach("n1 isolated", false, false)
	mustLab(t, lab.heal(0))
	reach("healed again", true, true)
	armed, err := lab.arm(0, cutPeers)
	mustLab(t, err)
	armed.disarm()
	reach("a cut armed and disarmed", true, true)
	armed, err = lab.arm(0, cutPeers)
	mustLab(t, err)
	mustLab(t, armed.fire())
	reach("an armed cut fired", true, false)
}

// helper is the helper process in node i's namespace.
func (lab *netLab) helper(i int, mode, addr string) *exec.Cmd {
	cmd := exec.Command("ip", "netns", "exec", lab.nodes[i].netns, os.Args[0], "-test.run=^TestNetLabHelperProcess$")
	cmd.Env = append(os.Environ(), labHelperEnv+"="+mode, labHelperEnv+"_ADDR="+addr)
	cmd.SysProcAttr = diesWithTest()
	return cmd
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for labDial(addr) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("nothing listening at %s after 10s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustLab(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
