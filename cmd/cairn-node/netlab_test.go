//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A netLab is a private network for one test cluster: one Linux network
// namespace per node, each joined to a bridge in the test's own
// namespace by a veth pair, on a /24 of 10.0.0.0/8 that exists only on
// that bridge and inside the namespaces. The bridge carries the .1
// address, so the test's clients reach every node directly; node i
// (from 1) is .(10+i).
//
// Partitions are iptables DROP rules inside a node's namespace, so they
// are silent: a dropped packet draws no reset and no ICMP error, and the
// two ends learn of the cut only from their own timeouts.
//
// Every name starts with labPrefix, then the test process's PID and a
// sequence number, both in base 36: "cpt" + at most 5 + "-" + at most 2
// + a suffix of at most 3 stays within the 15 bytes Linux allows an
// interface name. A later run finds what a killed run left behind by
// that PID (see sweepLeftoverLabs).
type netLab struct {
	t      *testing.T
	tag    string // labPrefix, PID and sequence number
	subnet netip.Prefix
	bridge string
	nodes  []labNode
	once   sync.Once
}

// labNode is one node's namespace and its end of the bridge.
type labNode struct {
	netns string     // the namespace's name
	veth  string     // the interface inside the namespace
	host  string     // its peer, a port of the bridge
	addr  netip.Addr // the node's address, on veth
}

// labPrefix starts the name of everything a netLab makes.
const labPrefix = "cpt"

// Where a lab node listens inside its namespace. Every node has an
// address of its own, so the ports can be the same on all.
const (
	labPeerPort   = 7100
	labClientPort = 7000
	labHTTPPort   = 7200
)

var (
	labSeqMu sync.Mutex
	labSeq   int
)

// newNetLab builds a network of n namespaces, or skips the test with
// the reason it cannot: not root, a tool missing, or namespaces refused
// (a container without the privilege). Everything it makes is removed
// when the test ends, pass or fail.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if err := labPrerequisites(); err != nil {
		t.Skipf("the partition suite needs network namespaces: %v", err)
	}
	sweepLeftoverLabs(t)
	labSeqMu.Lock()
	labSeq++
	seq := labSeq
	labSeqMu.Unlock()
	tag := labPrefix + strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strconv.FormatInt(int64(seq%1296), 36)
	subnet, err := freeSubnet(os.Getpid(), seq)
	if err != nil {
		t.Skipf("the partition suite needs a free /24 in 10.0.0.0/8: %v", err)
	}
	lab := &netLab{t: t, tag: tag, subnet: subnet, bridge: tag + "b"}
	registerLab(lab)
	t.Cleanup(lab.teardown)
	if err := lab.build(n); err != nil {
		t.Fatalf("building the network lab: %v", err)
	}
	return lab
}

// labPrerequisites says why this process cannot build a lab, if it
// cannot: it must be root and have ip, iptables and iptables-restore.
func labPrerequisites() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not running as root (uid %d)", os.Geteuid())
	}
	for _, tool := range []string{"ip", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (install iproute2 and iptables)", tool)
		}
	}
	labProbe.Do(func() { labProbeErr = probeNamespaces() })
	return labProbeErr
}

var (
	labProbe    sync.Once
	labProbeErr error
)

// probeNamespaces makes a namespace, sets a rule in it and removes it:
// a container may refuse either, even to root. Once it has worked, a
// lab that fails to build is a failure, not a reason to skip.
func probeNamespaces() error {
	ns := labPrefix + strconv.FormatInt(int64(os.Getpid()), 36) + "-probe"
	if err := runTool("ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("cannot make a network namespace: %v", err)
	}
	defer runTool("ip", "netns", "del", ns)
	if err := runTool("ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-s", "10.0.0.1", "-j", "DROP"); err != nil {
		return fmt.Errorf("cannot set an iptables rule in a namespace: %v", err)
	}
	return nil
}

// build makes the bridge, then one namespace per node with its veth
// pair and address.
func (lab *netLab) build(n int) error {
	base := lab.subnet.Addr().As4()
	bridgeAddr := netip.AddrFrom4([4]byte{base[0], base[1], base[2], 1})
	steps := [][]string{
		{"link", "add", lab.bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(bridgeAddr, 24).String(), "dev", lab.bridge},
		{"link", "set", lab.bridge, "up"},
	}
	for i := range n {
		nd := labNode{
			netns: fmt.Sprintf("%sn%d", lab.tag, i+1),
			veth:  fmt.Sprintf("%sv%d", lab.tag, i+1),
			host:  fmt.Sprintf("%sh%d", lab.tag, i+1),
			addr:  netip.AddrFrom4([4]byte{base[0], base[1], base[2], byte(11 + i)}),
		}
		lab.nodes = append(lab.nodes, nd)
		steps = append(steps,
			[]string{"netns", "add", nd.netns},
			[]string{"-n", nd.netns, "link", "set", "lo", "up"},
			[]string{"link", "add", nd.host, "type", "veth", "peer", "name", nd.veth},
			[]string{"link", "set", nd.veth, "netns", nd.netns},
			[]string{"link", "set", nd.host, "master", lab.bridge},
			[]string{"link", "set", nd.host, "up"},
			[]string{"-n", nd.netns, "addr", "add", netip.PrefixFrom(nd.addr, 24).String(), "dev", nd.veth},
			[]string{"-n", nd.netns, "link", "set", nd.veth, "up"},
		)
	}
	for _, s := range steps {
		if err := runTool("ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// addrs are the lab's nodes' listening addresses, for newProcClusterAt.
func (lab *netLab) addrs() []procAddrs {
	var out []procAddrs
	for _, nd := range lab.nodes {
		at := func(port int) string { return netip.AddrPortFrom(nd.addr, uint16(port)).String() }
		out = append(out, procAddrs{peer: at(labPeerPort), client: at(labClientPort), http: at(labHTTPPort), netns: nd.netns})
	}
	return out
}

// nodeConfig is the configuration every lab node needs beyond its peers:
// its HTTP port must listen on the namespace's address, not on the
// loopback its default chooses, for the test to read its status. It
// opens a table, so it goes last among a node's top-level settings.
const nodeConfig = "[listen]\nhttp = \"0.0.0.0:7200\"\n"

// runTool runs a command and returns its output in the error if it fails.
func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// teardown kills whatever still runs in the lab's namespaces and removes
// them and the bridge; removing a namespace removes its veth pair. It
// runs once, from the test's cleanup or from an interrupt.
func (lab *netLab) teardown() {
	lab.once.Do(func() {
		for _, nd := range lab.nodes {
			killNetnsProcesses(nd.netns)
			runTool("ip", "netns", "del", nd.netns)
		}
		runTool("ip", "link", "del", lab.bridge)
		unregisterLab(lab)
	})
}

// killNetnsProcesses SIGKILLs every process in namespace ns.
func killNetnsProcesses(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}
