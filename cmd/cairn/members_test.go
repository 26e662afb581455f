package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
)

// memberRow matches a row of cluster members: the node, its role, and
// whether it is leaving.
var memberRow = regexp.MustCompile(`(?m)^n(\d+)\s+\S+\s+(voter \(leader\)|voter|learner)\s+(yes|no)\s+(yes|no)\s+(\d+)$`)

// memberRoles reads cluster members and returns each node's role.
func memberRoles(t *testing.T, conn []string) map[string]string {
	t.Helper()
	code, out := cli(t, "", append([]string{"cluster", "members"}, conn...)...)
	if code != exitOK {
		t.Fatalf("cluster members: %d\n%s", code, out)
	}
	roles := map[string]string{}
	for _, m := range memberRow.FindAllStringSubmatch(out, -1) {
		roles["n"+m[1]] = m[2]
	}
	return roles
}

// TestAddAndRemoveNode grows a three-node cluster by two nodes that
// join, then removes node 3, which holds a replica of a queue and one of
// an owner-only queue, and node 4: a removal given too short a wait
// fails and says so, asking again is harmless, one given time reports
// the node gone, and the queues keep their messages. The owner-only
// queue's owner cannot be removed, and is told why.
func TestAddAndRemoveNode(t *testing.T) {
	addrs := freeAddrs(t, 15)
	var members []live.Member
	var clients []string
	for i := range 5 {
		members = append(members, live.Member{ID: node.NodeID(i + 1), PeerAddr: addrs[3*i], ClientAddr: addrs[3*i+1], HTTPAddr: addrs[3*i+2]})
		clients = append(clients, addrs[3*i+1])
	}
	for _, m := range members[:3] {
		serveNode(t, m.ID, members[:3], 3, false)
	}
	serveNode(t, 4, []live.Member{members[0], members[3]}, 3, true)
	serveNode(t, 5, []live.Member{members[1], members[4]}, 3, true)
	conn := []string{"--addrs", strings.Join(clients[:3], ","), "--secret", testSecret, "--admin-secret", testAdminSecret, "--timeout", "20s"}
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, out := cli(t, "", append([]string{"queue", "create", "work"}, conn...)...)
		if code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue create: %d\n%s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // the metadata group is electing its leader
	}
	if code, out := cli(t, "one\ntwo\n", append([]string{"publish", "work"}, conn...)...); code != exitOK {
		t.Fatalf("publish: %d\n%s", code, out)
	}
	// An owner-only queue whose owner is not node 3, the node removed
	// below: its replica there is a follower's.
	founders := node.Placement{Nodes: []node.NodeID{1, 2, 3}, Replicas: 3}
	audit := ""
	for _, name := range []string{"audit", "ledger", "journal", "records"} {
		if founders.Owner(name) != 3 {
			audit = name
			break
		}
	}
	auditOwner := founders.Owner(audit)
	if code, out := cli(t, "", append([]string{"queue", "create", audit, "--policy", "owner-only"}, conn...)...); code != exitOK {
		t.Fatalf("queue create %s --policy owner-only: %d\n%s", audit, code, out)
	}
	if code, out := cli(t, "kept\n", append([]string{"publish", audit}, conn...)...); code != exitOK {
		t.Fatalf("publish to %s: %d\n%s", audit, code, out)
	}
	roles := memberRoles(t, conn)
	if len(roles) != 3 || strings.Count(strings.Join([]string{roles["n1"], roles["n2"], roles["n3"]}, ","), "(leader)") != 1 {
		t.Fatalf("members of the founded cluster %v, want three voters, one marked leader", roles)
	}
	if code, out := cli(t, "", append([]string{"cluster", "add-node", "--id", "4"}, conn...)...); code != exitUsage {
		t.Errorf("add-node without --addr: %d, want usage\n%s", code, out)
	}
	if code, out := cli(t, "", append([]string{"cluster", "add-node", "--id", "4", "--addr", members[3].PeerAddr}, conn...)...); code != exitOK || !strings.Contains(out, "added n4") {
		t.Fatalf("add-node: %d\n%s", code, out)
	}
	if roles := memberRoles(t, conn); roles["n4"] != "learner" {
		t.Fatalf("members after add-node %v, want n4 a learner", roles)
	}
	if code, out := cli(t, "", append([]string{"cluster", "add-node", "--id", "5", "--addr", members[4].PeerAddr}, conn...)...); code != exitOK {
		t.Fatalf("add-node 5: %d\n%s", code, out)
	}
	// One queue on five nodes is as even as it gets: the rebalance starts
	// and ends without a move.
	if code, out := cli(t, "", append([]string{"cluster", "rebalance"}, conn...)...); code != exitOK || !strings.Contains(out, "rebalance started") {
		t.Fatalf("rebalance: %d\n%s", code, out)
	}
	if code, out := cli(t, "", append([]string{"cluster", "rebalance", "now"}, conn...)...); code != exitUsage {
		t.Errorf("rebalance with an argument: %d, want usage\n%s", code, out)
	}
	code, out := cli(t, "", append([]string{"cluster", "remove-node", auditOwner.String(), "--wait", "1s"}, conn...)...)
	if want := "owns queue " + audit + ", which confirms on its owner alone and cannot move"; code != exitFailed || !strings.Contains(out, want) {
		t.Errorf("remove-node of the owner-only queue's owner %s: %d, want a failure saying %q\n%s", auditOwner, code, want, out)
	}
	code, out = cli(t, "", append([]string{"cluster", "remove-node", "3", "--wait", "1ns"}, conn...)...)
	if code != exitFailed || !strings.Contains(out, "n3 is still a member after 1ns") {
		t.Errorf("remove-node with no time to finish: %d, want a failure naming the wait\n%s", code, out)
	}
	code, out = cli(t, "", append([]string{"cluster", "remove-node", "n3", "--wait", "30s"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "n3 has left the cluster") && !strings.Contains(out, "n3 is not a member: nothing to remove") {
		t.Fatalf("remove-node again: %d\n%s", code, out)
	}
	code, out = cli(t, "", append([]string{"cluster", "remove-node", "4", "--wait", "30s"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "n4 has left the cluster") {
		t.Fatalf("remove-node 4: %d\n%s", code, out)
	}
	stay := []string{"--addrs", strings.Join(clients[:2], ","), "--secret", testSecret, "--timeout", "20s"}
	// A follower learns that the removal committed with the leader's
	// next message, so its list may lag the one remove-node read.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		roles = memberRoles(t, stay)
		_, has3 := roles["n3"]
		_, has4 := roles["n4"]
		if !has3 && !has4 && len(roles) == 3 && roles["n5"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members after removing n3 and n4 %v, want n1, n2 and n5", roles)
		}
	}
	code, out = cli(t, "", append([]string{"consume", "work", "--ack", "--count", "2", "--timeout", "15s"}, stay...)...)
	if code != exitOK || !strings.Contains(out, "one") || !strings.Contains(out, "two") {
		t.Errorf("consume after the removal: %d\n%s", code, out)
	}
	code, out = cli(t, "", append([]string{"consume", audit, "--ack", "--count", "1", "--timeout", "15s"}, stay...)...)
	if code != exitOK || !strings.Contains(out, "kept") {
		t.Errorf("consume %s after the removal: %d\n%s", audit, code, out)
	}
}
