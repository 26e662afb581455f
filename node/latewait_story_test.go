package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A recovery candidate applies the activation of its epoch late: the
// metadata committed it, but the leader's entries do not reach the
// candidate for longer than the silence limit. Meanwhile it keeps sending
// appends, and a follower keeps accepting them, but the follower's answers
// are on their way for as long. So when the activation reaches the
// candidate, its quorum looks silent past the limit, and it waits. Then
// the follower's answers arrive: each echoes the stamp of an append sent
// before the wait, still fresh within the limit. In the long sweep (seed
// 290067) the metadata leader had lost the candidate's pings meanwhile,
// planned a newer epoch, and the follower was sealed and saw that epoch
// activate while those answers were still on their way; the candidate
// then activated the older epoch after the newer one. An acceptance given
// before the wait proves nothing of a seal that may have followed it, so
// the candidate must not serve on it: it serves once a quorum accepts an
// append it sent since it began waiting.
func TestALateActivationDoesNotServeOnAcceptancesFromBeforeItsWait(t *testing.T) {
	// Five nodes, so that the metadata commits without the candidate.
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3, 4, 5}, Tick: 10 * time.Millisecond, SegmentSize: 4096})
	// The queue's replicas do not include the metadata leader, which
	// goes on committing while the candidate hears nothing from it.
	leader := c.leader()
	q := ""
	for _, name := range []string{"orders", "invoices", "payments", "refunds", "returns"} {
		if !slices.Contains(node.Placement{Nodes: c.cfg.Nodes, Replicas: 3}.ReplicaSet(name), leader) {
			q = name
			break
		}
	}
	if q == "" {
		t.Fatalf("every queue name the story tries has the metadata leader %s among its replicas", leader)
	}
	c.request(leader, 99, &wire.CreateQueue{ReqID: 99, Queue: q, Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	e, ok := c.last(event.QueueActive)
	if !ok || e.Queue() != q {
		t.Fatalf("queue %s never activated; events:\n%v", q, c.events)
	}
	owner := e.node
	c.node(owner).crash()

	// The candidate recovers the queue; from its first step no metadata
	// entry reaches it, so it cannot apply its activation.
	candidate := node.NodeID(0)
	dropRaft := true
	var late []*wire.AppendReply
	var lateFrom []node.NodeID
	holdReplies := false
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		if e, ok := c.last(event.RecoveryStart); candidate == 0 && ok && e.Queue() == q {
			candidate = e.node
		}
		if candidate == 0 || to != candidate {
			return true
		}
		switch m := m.(type) {
		case *wire.Raft:
			return !dropRaft
		case *wire.AppendReply:
			if holdReplies {
				late, lateFrom = append(late, m), append(lateFrom, from)
				return false
			}
		}
		return true
	}
	for range 300 {
		if candidate != 0 {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if candidate == 0 || candidate == leader {
		t.Fatalf("no candidate other than the metadata leader %s began recovering; events:\n%v", leader, c.events)
	}
	activated := func(id node.NodeID) bool {
		return c.saw(event.MetaRecoveryActivated, onQueue(q), inEpoch(2), by(id))
	}
	for range 100 {
		if activated(leader) {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if !activated(leader) || activated(candidate) {
		t.Fatalf("the metadata did not activate epoch 2, or %s applied it in time; events:\n%v", candidate, c.events)
	}

	// The follower's answers are held from now on, and the candidate
	// hears no quorum for longer than the silence limit.
	holdReplies = true
	c.advance(400 * time.Millisecond)
	dropRaft = false
	for range 50 {
		if activated(candidate) {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if !activated(candidate) || !c.saw(event.QueueActivationWaits, onQueue(q), inEpoch(2), by(candidate)) {
		t.Fatalf("%s did not apply its activation, or did not wait on it; events:\n%v", candidate, c.events)
	}

	// The latest answer held to an append sent before the wait arrives
	// now, its stamp fresh within the limit.
	wait, _ := c.last(event.QueueActivationWaits)
	waitStamp := uint64(wait.at.Sub(time.Unix(0, 0)))
	last := -1
	for i, r := range late {
		if r.OK && r.Epoch == 2 && r.Stamp < waitStamp {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("the follower accepted none of %s's appends while it waited for its activation; events:\n%v", candidate, c.events)
	}
	if age := time.Duration(uint64(c.now.Sub(time.Unix(0, 0))) - late[last].Stamp); age >= 300*time.Millisecond {
		t.Fatalf("the answer echoes a stamp %v old, past the silence limit: the story needs it fresh", age)
	}
	cm := c.node(candidate)
	cm.run(func() { cm.n.OnMessage(lateFrom[last], late[last]) })
	c.fireDue()
	if c.saw(event.QueueActive, onQueue(q), inEpoch(2), by(candidate)) {
		t.Fatalf("%s activated on an acceptance of an append sent before it began waiting; events:\n%v", candidate, c.events)
	}
	if v := viewOf(t, cm.n, q); v.Role == "owner" {
		t.Fatalf("%s serves the queue: %+v", candidate, v)
	}

	// Its next appends are answered: now it serves.
	c.intercept = nil
	c.advance(100 * time.Millisecond)
	if !c.saw(event.QueueActive, onQueue(q), inEpoch(2), by(candidate)) {
		t.Fatalf("%s did not activate once a quorum accepted its appends; events:\n%v", candidate, c.events)
	}
	c.request(candidate, 1, &wire.Publish{ReqID: 1, Queue: q, ID: msgID(1)})
	c.settle()
	c.mustReply(1, wire.StatusOK)
}
