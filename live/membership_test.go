package live

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// membersOf asks tn's node goroutine for the member list its metadata
// holds.
func membersOf(tn *testNode) []wire.MemberInfo {
	out := make(chan []wire.MemberInfo, 1)
	tn.post(func() { out <- tn.handler.(*node.Node).Members() })
	select {
	case m := <-out:
		return m
	case <-time.After(2 * time.Second):
		return nil
	}
}

// memberIDs lists the IDs of members.
func memberIDs(members []wire.MemberInfo) []uint32 {
	var out []uint32
	for _, m := range members {
		out = append(out, m.ID)
	}
	return out
}

// adminClient connects with the admin credential.
func adminClient(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctxFor(t, 5*time.Second), client.Options{Secret: testAdminSecret, Admin: true, RequestTimeout: 2 * time.Second}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLinksFollowTheMemberList runs three founders and a fourth node that
// joins knowing only itself and node 1. Once the cluster admits it, the
// founders dial it at the address the metadata records, and it receives
// the metadata from peers it was never configured with, and keeps it
// across a restart. Removing node 3
// then moves its replica away; once node 3 is gone from the member list,
// the others drop their links with it and refuse it on their peer ports,
// and the queue still holds what was published.
func TestLinksFollowTheMemberList(t *testing.T) {
	cfgs := clusterConfigs(t, 4)
	all := cfgs[0].Members
	var founders []*testNode
	for i := range 3 {
		cfgs[i].Members, cfgs[i].Node.Replicas = all[:3], 3
		founders = append(founders, start(t, cfgs[i]))
	}
	cfgs[3].Members, cfgs[3].Node.Join, cfgs[3].Node.Replicas = []Member{all[0], all[3]}, true, 3
	joiner := start(t, cfgs[3])
	admin := adminClient(t, all[0].ClientAddr, all[1].ClientAddr, all[2].ClientAddr)
	ctx := ctxFor(t, 60*time.Second)
	if err := admin.CreateQueue(ctx, "q", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	var confirmed []client.MessageID
	for i := range 20 {
		id, err := admin.Publish(ctx, "q", []byte{byte(i)})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		confirmed = append(confirmed, id)
	}
	if err := admin.AddNode(ctx, client.NewNode{ID: 4, PeerAddr: all[3].PeerAddr, ClientAddr: all[3].ClientAddr, HTTPAddr: all[3].HTTPAddr}); err != nil {
		t.Fatalf("adding node 4: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node 1 members %+v\nnode 4 members %+v\nnode 1 log:\n%s\nnode 4 log:\n%s", membersOf(founders[0]), membersOf(joiner), founders[0].logs, joiner.logs)
		}
	})
	waitFor(t, 15*time.Second, "node 4 to receive the metadata naming it a learner", func() bool {
		m := membersOf(joiner)
		return len(m) == 4 && m[3].ID == 4 && !m[3].Voter && m[3].Addr == all[3].PeerAddr
	})
	for _, id := range []int{2, 3} {
		if joiner.link(all[id-1].ID) == nil {
			t.Errorf("node 4 keeps no link with node %d, which it was never configured with", id)
		}
	}
	if peers := joiner.Status().Peers; len(peers) != 3 {
		t.Errorf("node 4's status lists peers %+v, want nodes 1, 2 and 3", peers)
	}
	// Restarted with join still set, node 4 starts from the metadata it
	// holds: join only matters to an empty data directory.
	joiner.stop(t)
	joiner = start(t, cfgs[3])
	waitFor(t, 15*time.Second, "node 4 to load its metadata after a restart", func() bool {
		m := membersOf(joiner)
		return len(m) == 4 && joiner.link(2) != nil && joiner.link(3) != nil
	})
	// So does node 2, whose metadata snapshot is now the one taken at
	// the entry that added node 4.
	founders[1].stop(t)
	founders[1] = start(t, cfgs[1])
	waitFor(t, 15*time.Second, "node 2 to load its metadata after a restart", func() bool {
		return len(membersOf(founders[1])) == 4 && founders[1].link(4) != nil
	})
	if err := admin.RemoveNode(ctx, 3); err != nil {
		t.Fatalf("removing node 3: %v", err)
	}
	waitFor(t, 30*time.Second, "node 3 to leave the member list", func() bool {
		return !slices.Contains(memberIDs(membersOf(founders[0])), 3) && !slices.Contains(memberIDs(membersOf(joiner)), 3)
	})
	waitFor(t, 5*time.Second, "nodes 1, 2 and 4 to drop their links with node 3", func() bool {
		return founders[0].link(3) == nil && founders[1].link(3) == nil && joiner.link(3) == nil
	})
	for _, p := range founders[0].Status().Peers {
		if p.ID == 3 {
			t.Errorf("node 1's status still lists node 3 as a peer: %+v", founders[0].Status().Peers)
		}
	}
	if err := joinAsPeer(t, founders[1].PeerAddr(), 3, 2, testPeerSecret); err == nil {
		t.Error("node 2 admitted node 3 to its peer port after node 3 left the cluster")
	}
	consumeAll(t, ctx, admin, "q", confirmed)

	// Node 4 now holds node 3's replica. Moved to it, the queue is owned
	// by a node the admin client was never told of at Dial: the redirect
	// names node 4, and the client learns its address from the member
	// list, which records the client address AddNode gave.
	if err := admin.MoveOwner(ctx, "q", 4, 0); err != nil {
		t.Fatalf("moving q to node 4: %v", err)
	}
	if _, err := admin.Publish(ctx, "q", []byte("after the move to node 4")); err != nil {
		t.Fatalf("publishing to q, owned by node 4: %v", err)
	}
	if i := slices.IndexFunc(joiner.Status().Queues, func(q status.Queue) bool { return q.Name == "q" && q.Role == "owner" }); i < 0 {
		t.Fatalf("node 4 does not serve q after the move: %+v", joiner.Status().Queues)
	}
}

// TestSendToANonMemberIsDropped checks that a message the node sends to
// a node the runtime keeps no link with is dropped and counted, never a
// crash or a wait: a node whose metadata lags may address a member that
// left.
func TestSendToANonMemberIsDropped(t *testing.T) {
	tn := start(t, singleConfig(t))
	sent := make(chan struct{})
	tn.post(func() {
		tn.env.Send(9, &wire.Ping{Seq: 1})
		close(sent)
	})
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		t.Fatal("sending to a non-member did not return")
	}
	if got := counterValue(tn.env.notMember); got != 1 {
		t.Errorf("%v sends to a non-member counted, want 1", got)
	}
}
