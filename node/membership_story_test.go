package node_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// startJoiner starts node id, the next after the cluster's last, as a
// node joining a running cluster: it knows nobody and waits to be
// admitted.
func (c *cluster) startJoiner(id node.NodeID) *member {
	c.t.Helper()
	m := c.placeJoiner(id)
	m.start()
	return m
}

// placeJoiner adds node id, the next after the cluster's last, as a
// joining node that is not running yet: messages to it are lost until
// it starts.
func (c *cluster) placeJoiner(id node.NodeID) *member {
	c.t.Helper()
	if int(id) != len(c.nodes)+1 {
		c.t.Fatalf("joiner %s is not the next node after %d", id, len(c.nodes))
	}
	m := &member{c: c, id: id, fs: vfs.NewCrashableMem(), join: true, down: true}
	c.nodes = append(c.nodes, m)
	return m
}

// admitFourth starts node 4 as a joiner and has n1 admit it (request
// 71), a learner of a three-node cluster.
func (c *cluster) admitFourth() {
	c.t.Helper()
	c.startJoiner(4)
	c.request(1, 9, &wire.AddNode{ReqID: 71, Node: 4, Addr: "n4:7400"})
	c.advance(time.Second)
	c.mustReply(71, wire.StatusOK)
}

// members asks node at for the member list and returns it.
func (c *cluster) members(at node.NodeID, reqID uint64) *wire.MemberListReply {
	c.t.Helper()
	c.request(at, 3, &wire.MemberList{ReqID: reqID})
	c.settle() // the answer waits for a ReadIndex
	for i, r := range c.replies {
		if rep, ok := r.msg.(*wire.MemberListReply); ok && rep.ReqID == reqID {
			c.replies = slices.Delete(c.replies, i, i+1)
			return rep
		}
	}
	c.t.Fatalf("member list request %d got no answer", reqID)
	return nil
}

// describeMembers renders a member list as "1v 2v 4l(leaving)".
func describeMembers(ms []wire.MemberInfo) string {
	out := ""
	for i, m := range ms {
		if i > 0 {
			out += " "
		}
		role := "l"
		if m.Voter {
			role = "v"
		}
		out += fmt.Sprintf("%d%s", m.ID, role)
		if m.Leaving {
			out += "(leaving)"
		}
	}
	return out
}

// checkVoterFloor fails the story if any applied membership change left
// fewer voters than min(3, members).
func (c *cluster) checkVoterFloor() {
	c.t.Helper()
	for _, e := range c.emitted {
		if e.Name != event.MetaMembership {
			continue
		}
		voters, members := len(e.Voters()), len(e.Voters())+len(e.Learners())
		if voters < min(3, members) {
			c.t.Fatalf("%s applied a change leaving %d voters among %d members: %s", e.node, voters, members, e.Event)
		}
	}
}

// A fourth node joins a three-node cluster: admitted as a learner, it
// receives the metadata from the leader and answers with the member
// list, but does not vote, since four members want three voters. A fifth
// makes the group want five voters, and both learners are promoted.
func TestANodeJoinsAsALearnerAndIsPromotedWhenTheGroupWantsVoters(t *testing.T) {
	c := newCluster(t)
	c.createQueue("orders", wire.PolicyMajority)
	c.startJoiner(4)
	c.advance(time.Second)
	if got := c.members(4, 70); got.Status != wire.StatusUnavailable {
		t.Fatalf("a joiner not yet admitted answered the member list with %s %v", got.Status, got.Members)
	}

	c.request(2, 9, &wire.AddNode{ReqID: 71, Node: 4, Addr: "n4:7400"})
	c.advance(time.Second)
	c.mustReply(71, wire.StatusOK)
	if got := describeMembers(c.members(4, 72).Members); got != "1v 2v 3v 4l" {
		t.Fatalf("the joiner lists the members as %q, want 1v 2v 3v 4l", got)
	}
	if got := c.members(1, 73).Members; got[3].Addr != "n4:7400" {
		t.Fatalf("the metadata recorded the joiner at %q", got[3].Addr)
	}
	// Asking again is answered OK; another address for it is refused.
	c.request(3, 9, &wire.AddNode{ReqID: 74, Node: 4, Addr: "n4:7400"})
	c.advance(500 * time.Millisecond)
	c.mustReply(74, wire.StatusOK)
	c.request(3, 9, &wire.AddNode{ReqID: 75, Node: 4, Addr: "elsewhere:1"})
	c.advance(500 * time.Millisecond)
	c.mustReply(75, wire.StatusBadRequest)

	c.startJoiner(5)
	c.request(1, 9, &wire.AddNode{ReqID: 76, Node: 5, Addr: "n5:7400"})
	c.advance(3 * time.Second)
	c.mustReply(76, wire.StatusOK)
	if got := describeMembers(c.members(5, 77).Members); got != "1v 2v 3v 4v 5v" {
		t.Fatalf("after a fifth member the list is %q, want five voters", got)
	}
	c.checkVoterFloor()

	// The new members take new queues.
	placed := map[node.NodeID]bool{}
	for i := range 8 {
		name := fmt.Sprintf("q%d", i)
		c.request(1, 9, &wire.CreateQueue{ReqID: uint64(80 + i), Queue: name, Policy: wire.PolicyMajority})
		c.advance(500 * time.Millisecond)
		c.mustReply(uint64(80+i), wire.StatusOK)
	}
	for _, m := range c.members(1, 90).Members {
		if m.Replicas > 0 {
			placed[node.NodeID(m.ID)] = true
		}
	}
	if !placed[4] || !placed[5] {
		t.Fatalf("eight new queues left a new member empty: %v", placed)
	}
}

// IDs are never reused, a node must exist to be removed, and a cluster
// may not shrink below a queue's replica count.
func TestMembershipChangesThatBreakARuleAreRefused(t *testing.T) {
	c := newCluster(t)
	c.createQueue("orders", wire.PolicyMajority)
	for _, tc := range []struct {
		req  wire.Message
		want string
	}{
		{&wire.AddNode{ReqID: 71, Node: 2, Addr: "x:1"}, "n2 is a member already"},
		{&wire.RemoveNode{ReqID: 72, Node: 9}, "n9 is not a member"},
		{&wire.RemoveNode{ReqID: 73, Node: 3}, "the cluster would keep 2 nodes, too few for a queue's 3 replicas"},
	} {
		c.request(1, 9, tc.req)
		c.advance(500 * time.Millisecond)
		id, _ := wire.RequestID(tc.req)
		if r := c.mustReply(id, wire.StatusBadRequest); r.Detail != tc.want {
			t.Errorf("%s: refused with %q, want %q", wire.Describe(tc.req), r.Detail, tc.want)
		}
	}
	if got := describeMembers(c.members(1, 74).Members); got != "1v 2v 3v" {
		t.Fatalf("refused changes changed the members to %q", got)
	}
}

// An operator removes a node that owns a queue and votes. It is marked
// leaving at once; it hands its queue to another replica, the metadata
// leader replaces its replica with the learner that joined, promotes the
// learner to take its seat, steps it back, and removes it. Every
// confirmed message stays deliverable, and the group never has fewer than
// three voters on the way.
func TestRemovingAnOwnerMovesItsQueueAndGivesItsSeatToALearner(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 5)
	c.admitFourth()

	c.request(1, 9, &wire.RemoveNode{ReqID: 72, Node: uint32(owner)})
	c.advance(500 * time.Millisecond)
	c.mustReply(72, wire.StatusOK)
	c.advance(10 * time.Second)

	got := c.members(1, 73).Members
	if s := describeMembers(got); slices.ContainsFunc(got, func(m wire.MemberInfo) bool { return m.ID == uint32(owner) }) || len(got) != 3 {
		t.Fatalf("after the removal of %s the members are %q", owner, s)
	}
	for _, m := range got {
		if !m.Voter {
			t.Fatalf("after the removal %d is still a learner: %s", m.ID, describeMembers(got))
		}
	}
	c.checkVoterFloor()
	if !c.saw(event.QueueHandoffProposed, by(owner)) {
		t.Fatalf("%s was removed without handing its queue over; events:\n%v", owner, c.events)
	}
	// The queue lives on the remaining nodes, the joiner among them, and
	// its new owner delivers all five messages.
	active, ok := c.last(event.QueueActive)
	if !ok || active.node == owner {
		t.Fatalf("no node but %s served the queue after the removal", owner)
	}
	c.request(active.node, 5, &wire.Subscribe{ReqID: 74, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(74, wire.StatusOK)
	if d := c.deliveries(5); len(d) != 5 {
		t.Fatalf("the new owner %s delivered %d of the 5 confirmed messages", active.node, len(d))
	}
	if !c.saw(event.MetaReplicaReplaced, func(e emission) bool { return slices.Contains(e.Replicas(), 4) }) {
		t.Fatal("the joiner never took the removed node's replica")
	}
}

// A member that restarts after membership changes replays them: it knows
// the joiner, and the cluster goes on electing leaders and serving.
func TestAMemberRestartedAfterAJoinKnowsTheNewMember(t *testing.T) {
	c := newCluster(t)
	c.admitFourth()
	for _, id := range []node.NodeID{1, 2, 3, 4} {
		c.node(id).crash()
	}
	for _, id := range []node.NodeID{1, 2, 3, 4} {
		c.node(id).start()
	}
	c.advance(3 * time.Second)
	for _, id := range []node.NodeID{1, 4} {
		if got := describeMembers(c.members(id, 72+uint64(id)).Members); got != "1v 2v 3v 4l" {
			t.Fatalf("%s restarted knowing the members as %q", id, got)
		}
	}
	c.createQueue("orders", wire.PolicyMajority)
}

// A voter dies for good. Once it has been down for ReplaceAfter, the
// leader gives its seat to the learner that joined and steps it back to
// learner: the group is back to three live voters and survives another
// failure. The dead node stays a member until an operator removes it.
func TestALearnerTakesTheSeatOfAVoterDownForReplaceAfter(t *testing.T) {
	cfg := node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096, ReplaceAfter: 2 * time.Second}
	c := newClusterOf(t, cfg)
	c.admitFourth()
	dead := node.NodeID(3)
	if c.leader() == dead {
		dead = 2
	}
	c.node(dead).crash()
	c.advance(time.Second)
	if got := describeMembers(c.members(1, 72).Members); got != "1v 2v 3v 4l" {
		t.Fatalf("a voter down for less than ReplaceAfter already lost its seat: %q", got)
	}
	c.advance(5 * time.Second)
	want := map[node.NodeID]string{2: "1v 2l 3v 4v", 3: "1v 2v 3l 4v"}[dead]
	if got := describeMembers(c.members(1, 73).Members); got != want {
		t.Fatalf("after %s stayed down the members are %q, want %q", dead, got, want)
	}
	c.checkVoterFloor()

	// The dead node is removed on request; it holds no replica, so it
	// leaves at once.
	c.request(1, 9, &wire.RemoveNode{ReqID: 74, Node: uint32(dead)})
	c.advance(3 * time.Second)
	c.mustReply(74, wire.StatusOK)
	if got := c.members(4, 75).Members; len(got) != 3 {
		t.Fatalf("the dead node was not removed: %s", describeMembers(got))
	}
}

// Two nodes join a three-node cluster whose queues all live on the
// founders. A rebalance moves replicas one at a time to the new nodes
// until no member holds more than one replica above another, and ends
// by itself; every queue keeps its messages.
func TestARebalanceSpreadsReplicasOverNewMembers(t *testing.T) {
	c := newCluster(t)
	var names []string
	for i := range 4 {
		name := fmt.Sprintf("q%d", i)
		names = append(names, name)
		owner := c.createQueue(name, wire.PolicyMajority)
		c.publishConfirmed(owner, name, 2)
	}
	for _, id := range []node.NodeID{4, 5} {
		c.startJoiner(id)
		c.request(1, 9, &wire.AddNode{ReqID: 70 + uint64(id), Node: uint32(id), Addr: fmt.Sprintf("n%d:7400", id)})
		c.advance(time.Second)
		c.mustReply(70+uint64(id), wire.StatusOK)
	}
	c.request(2, 9, &wire.Rebalance{ReqID: 80})
	c.advance(500 * time.Millisecond)
	c.mustReply(80, wire.StatusOK)
	c.advance(20 * time.Second)
	if !c.saw(event.MetaRebalance, func(e emission) bool { return e.Outcome() == "done" }) {
		t.Fatalf("the rebalance never ended; members %s", describeMembers(c.members(1, 81).Members))
	}
	counts := map[uint32]uint32{}
	least, most := uint32(99), uint32(0)
	for _, m := range c.members(1, 82).Members {
		counts[m.ID] = m.Replicas
		least, most = min(least, m.Replicas), max(most, m.Replicas)
	}
	if most-least > 1 || counts[4] == 0 || counts[5] == 0 {
		t.Fatalf("after the rebalance the replica counts are %v", counts)
	}
	for i, name := range names {
		var served emission
		for _, e := range c.emitted {
			if e.Name == event.QueueActive && e.Queue() == name {
				served = e
			}
		}
		conn := node.ConnID(20 + i)
		c.request(served.node, conn, &wire.Subscribe{ReqID: 90 + uint64(i), Queue: name, Window: 10, Lease: time.Minute})
		c.settle()
		if d := c.deliveries(conn); len(d) != 2 {
			t.Fatalf("queue %s delivered %d of its 2 messages after the rebalance", name, len(d))
		}
	}
}

// An owner-only queue confirms on its owner alone. An operator removes a
// node holding one of its follower replicas: the owner leads the
// replacement, sealing all three old replicas (the leaving one is up), the
// joiner takes the replica, and the node leaves. Asked to remove the owner
// itself, the metadata refuses at once: nothing else is known to hold what
// the queue confirmed, so the queue cannot move, and the leave would never
// finish. The owner delivers every confirmed message throughout.
func TestAFollowerOfAnOwnerOnlyQueueLeavesAndItsOwnerIsRefused(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("audit", wire.PolicyOwnerOnly)
	c.publishConfirmed(owner, "audit", 5)
	_, followers := roles("audit")
	leaving := followers[0]
	c.admitFourth()

	c.request(1, 9, &wire.RemoveNode{ReqID: 72, Node: uint32(owner)})
	c.advance(500 * time.Millisecond)
	want := fmt.Sprintf("%s owns queue audit, which confirms on its owner alone and cannot move; delete the queue first", owner)
	if r := c.reply(72); r == nil || r.Status == wire.StatusOK || r.Detail != want {
		t.Fatalf("removing the owner-only queue's owner: %+v, want refused with %q", r, want)
	}

	c.request(1, 9, &wire.RemoveNode{ReqID: 73, Node: uint32(leaving)})
	c.advance(500 * time.Millisecond)
	c.mustReply(73, wire.StatusOK)
	c.advance(10 * time.Second)
	got := c.members(1, 74).Members
	if slices.ContainsFunc(got, func(m wire.MemberInfo) bool { return m.ID == uint32(leaving) }) {
		t.Fatalf("%s is still a member after 10 s: %s", leaving, describeMembers(got))
	}
	if !c.saw(event.MetaReplicaReplaced, func(e emission) bool { return e.Queue() == "audit" && slices.Contains(e.Replicas(), 4) }) {
		t.Fatalf("the joiner never took %s's replica of the owner-only queue; events:\n%v", leaving, c.events)
	}
	c.checkVoterFloor()
	c.mustDeliverAll(owner, "audit", 5, "after its follower left")
}

// A voter asks to leave while no learner can take its seat: demoting it
// would leave two voters, below the floor, so it waits as a voter. A
// learner that asks to leave meanwhile is removed at once; the voter's
// wait holds up nobody else's leave. Once a learner catches up, it takes
// the voter's seat and the voter goes too.
func TestALeavingVoterWaitingForASuccessorHoldsUpNoLearner(t *testing.T) {
	c := newCluster(t)
	c.advance(time.Second)
	// Nodes 4 and 5 are admitted before they run: learners that have not
	// caught up cannot be promoted.
	c.placeJoiner(4)
	c.placeJoiner(5)
	c.request(1, 9, &wire.AddNode{ReqID: 71, Node: 4, Addr: "n4:7400"})
	c.advance(time.Second)
	c.mustReply(71, wire.StatusOK)
	c.request(1, 9, &wire.AddNode{ReqID: 72, Node: 5, Addr: "n5:7400"})
	c.advance(time.Second)
	c.mustReply(72, wire.StatusOK)

	voter := othersThan(c.leader())[0]
	c.request(1, 9, &wire.RemoveNode{ReqID: 73, Node: uint32(voter)})
	c.request(1, 9, &wire.RemoveNode{ReqID: 74, Node: 5})
	c.advance(500 * time.Millisecond)
	c.mustReply(73, wire.StatusOK)
	c.mustReply(74, wire.StatusOK)
	c.advance(5 * time.Second)

	want := "1v 2v 3v 4l"
	want = strings.Replace(want, fmt.Sprintf("%dv", voter), fmt.Sprintf("%dv(leaving)", voter), 1)
	if got := describeMembers(c.members(1, 75).Members); got != want {
		t.Fatalf("with no learner to promote, the members are %q, want %q: n5 removed, %s waiting as a voter", got, want, voter)
	}

	c.node(4).start()
	c.node(5).start()
	c.advance(10 * time.Second)
	stayers := "1v 2v 3v 4v"
	stayers = strings.Replace(stayers, fmt.Sprintf("%dv ", voter), "", 1)
	if got := describeMembers(c.members(1, 76).Members); got != stayers {
		t.Fatalf("after n4 caught up the members are %q, want %q", got, stayers)
	}
	c.checkVoterFloor()
}
