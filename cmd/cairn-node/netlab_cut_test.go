//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// linkCut is a kind of partition of one node, made inside its namespace.
type linkCut int

const (
	// cutPeers drops every packet between the node and its peers, both
	// ways; the test's clients, on the bridge's address, still reach it.
	cutPeers linkCut = iota
	// cutPeersInbound drops only what the peers send the node: it still
	// talks to them and hears nothing back.
	cutPeersInbound
	// cutPeersOutbound drops only what the node sends its peers.
	cutPeersOutbound
	// cutAll isolates the node: nothing leaves or reaches its namespace,
	// clients' packets included.
	cutAll
)

func (c linkCut) String() string {
	switch c {
	case cutPeers:
		return "cut from its peers"
	case cutPeersInbound:
		return "deaf to its peers"
	case cutPeersOutbound:
		return "mute to its peers"
	case cutAll:
		return "isolated"
	}
	return fmt.Sprintf("linkCut(%d)", int(c))
}

// cut partitions node i (from 0) as kind says, adding to any cut it is
// under already. The rules go in one iptables-restore call, so the cut
// starts at one instant rather than peer by peer.
func (lab *netLab) cut(i int, kind linkCut) error {
	return lab.restore(lab.nodes[i], lab.cutRules(i, kind), "--noflush")
}

// cutRules is the iptables-restore input for cut kind of node i.
func (lab *netLab) cutRules(i int, kind linkCut) string {
	nd := lab.nodes[i]
	var rules []string
	if kind == cutAll {
		rules = append(rules, "-A INPUT -i "+nd.veth+" -j DROP", "-A OUTPUT -o "+nd.veth+" -j DROP")
	}
	for j, peer := range lab.nodes {
		if j == i || kind == cutAll {
			continue
		}
		if kind == cutPeers || kind == cutPeersInbound {
			rules = append(rules, "-A INPUT -s "+peer.addr.String()+" -j DROP")
		}
		if kind == cutPeers || kind == cutPeersOutbound {
			rules = append(rules, "-A OUTPUT -d "+peer.addr.String()+" -j DROP")
		}
	}
	return "*filter\n" + strings.Join(rules, "\n") + "\nCOMMIT\n"
}

// heal removes every cut of node i: the namespace's filter table holds
// nothing but the lab's rules, so it is flushed whole.
func (lab *netLab) heal(i int) error {
	return lab.restore(lab.nodes[i], "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n")
}

// restore feeds rules to iptables-restore inside nd's namespace.
func (lab *netLab) restore(nd labNode, rules string, flags ...string) error {
	args := append([]string{"netns", "exec", nd.netns, "iptables-restore"}, flags...)
	cmd := exec.Command("ip", args...)
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore in %s: %v: %s\nrules:\n%s", nd.netns, err, strings.TrimSpace(string(out)), rules)
	}
	return nil
}

// rules lists node i's iptables rules, for a failure report.
func (lab *netLab) rules(i int) string {
	out, err := exec.Command("ip", "netns", "exec", lab.nodes[i].netns, "iptables", "-S").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("iptables -S: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// armedCut is a cut made ready in advance: iptables-restore already runs
// in the node's namespace, waiting for its rules on stdin, so firing it
// costs a pipe write and the parse rather than starting two processes
// (some tens of milliseconds). It is how a test cuts a node in the
// middle of a step that takes about as long.
type armedCut struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	rules string
	out   bytes.Buffer
}

// arm readies cut kind of node i.
func (lab *netLab) arm(i int, kind linkCut) (*armedCut, error) {
	nd := lab.nodes[i]
	a := &armedCut{rules: lab.cutRules(i, kind)}
	a.cmd = exec.Command("ip", "netns", "exec", nd.netns, "iptables-restore", "--noflush")
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	a.cmd.SysProcAttr = diesWithTest()
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	return a, nil
}

// fire puts the cut in force and returns once it is.
func (a *armedCut) fire() error {
	io.WriteString(a.stdin, a.rules)
	a.stdin.Close()
	if err := a.cmd.Wait(); err != nil {
		return fmt.Errorf("armed iptables-restore: %v: %s", err, strings.TrimSpace(a.out.String()))
	}
	return nil
}

// disarm abandons the cut: iptables-restore reads an empty input and
// changes nothing.
func (a *armedCut) disarm() {
	a.stdin.Close()
	a.cmd.Wait()
}
