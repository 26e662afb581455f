//go:build linux

package main

import (
	"fmt"
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
	return lab.restore(nd, "*filter\n"+strings.Join(rules, "\n")+"\nCOMMIT\n", "--noflush")
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
