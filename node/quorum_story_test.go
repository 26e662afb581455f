package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// An owner whose replication is cut (its appends and their replies are
// lost, while the nodes still hear each other's pings, so no one fails
// it over) goes on serving until it has heard from no quorum for as long
// the silence limit: the 60ms delivery lease, shorter than the default
// policy's 100ms interval (a connection reset lets its peers verify it at
// once, and a recovery outwaits that silence after its witnesses' last
// grants). Then it steps back: a publish is refused at once with
// a not-owner answer naming no one, and nothing is appended for it; its
// subscriber is told the same and its leased message is ready again; a
// publish it took before, still waiting for a confirmation, is answered
// fenced (its outcome unknown); its view says it does not serve. When replication comes back it serves
// again in the same epoch, and the refused publish, sent again, is
// confirmed.
func TestAnOwnerCutFromItsQuorumStepsBackUntilItHearsFromOne(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 1)
	c.request(owner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 1 {
		t.Fatalf("the subscriber got %d deliveries, want 1", len(got))
	}
	replicating := func(m wire.Message) bool {
		switch m.(type) {
		case *wire.Append, *wire.AppendReply:
			return true
		}
		return false
	}
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		return !(replicating(m) && (from == owner || to == owner))
	}
	cutAt := c.now
	c.request(owner, 1, &wire.Publish{ReqID: 3, Queue: "orders", ID: msgID(3), Payload: []byte{3}})

	c.advance(40 * time.Millisecond)
	c.noReply(3)
	if v := viewOf(t, c.node(owner).n, "orders"); v.NoQuorum || c.saw(event.QueueQuorumLost) {
		t.Fatalf("the owner stepped back %v after the cut, before the 60ms limit", c.now.Sub(cutAt))
	}
	c.advance(100 * time.Millisecond)
	lost, ok := c.last(event.QueueQuorumLost)
	if !ok {
		t.Fatalf("the owner still serves %v after the cut; events:\n%v", c.now.Sub(cutAt), c.events)
	}
	if silence := lost.Elapsed(); silence < 60*time.Millisecond || silence > 110*time.Millisecond {
		t.Fatalf("the owner stepped back after %v of silence, want from 60ms, within a tick or two", silence)
	}
	if v := viewOf(t, c.node(owner).n, "orders"); !v.NoQuorum || v.Role != "owner" || v.Epoch != 1 {
		t.Fatalf("the owner's view is %+v: want an owner of epoch 1 without its quorum", v)
	}
	if r := c.mustReply(50, wire.StatusNotOwner); r.Owner != 0 {
		t.Fatalf("the subscriber was sent to node %d; the cut-off owner knows of no other", r.Owner)
	}
	c.mustReply(3, wire.StatusFenced)

	last := viewOf(t, c.node(owner).n, "orders").LastIndex
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte{2}})
	if r := c.mustReply(2, wire.StatusNotOwner); r.Owner != 0 || r.Detail == "" {
		t.Fatalf("the refusal named node %d with detail %q: want no owner and a reason", r.Owner, r.Detail)
	}
	if got := viewOf(t, c.node(owner).n, "orders").LastIndex; got != last {
		t.Fatalf("the refused publish moved the owner's log from %d to %d", last, got)
	}

	c.intercept = nil
	c.advance(200 * time.Millisecond)
	if !c.saw(event.QueueQuorumRegained, by(owner), inEpoch(1)) {
		t.Fatalf("the owner did not serve again once replication came back; events:\n%v", c.events)
	}
	if v := viewOf(t, c.node(owner).n, "orders"); v.NoQuorum || v.Role != "owner" || v.Epoch != 1 {
		t.Fatalf("the owner's view is %+v after the cut healed: want the serving owner of epoch 1", v)
	}
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte{2}})
	c.request(owner, 1, &wire.Publish{ReqID: 4, Queue: "orders", ID: msgID(3), Payload: []byte{3}})
	c.settle()
	c.mustReply(2, wire.StatusOK)
	c.mustReply(4, wire.StatusOK) // the retry of the publish answered fenced: stored once
	c.request(owner, 8, &wire.Subscribe{ReqID: 51, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(51, wire.StatusOK)
	got := c.deliveries(8)
	want := []wire.MessageID{msgID(1), msgID(3), msgID(2)}
	if len(got) != len(want) {
		t.Fatalf("a new subscriber got %d deliveries, want %d: the message the first one held, the publish taken before the cut, the new one", len(got), len(want))
	}
	for i, d := range got {
		if d.ID != want[i] {
			t.Fatalf("delivery %d is %s, want %s", i, d.ID, want[i])
		}
	}
}

// An owner delivers only while its quorum's grant is fresh. Here its
// subscriber has room, a publish under the all policy waits for the
// owner's own sync (its followers took it and granted at once), and then
// replication is cut. The owner's ticks are far apart, so its grant
// lapses a while before its next tick steps it back; the sync completes
// in that while, and the confirmed message must wait, undelivered: a new
// owner may already be outwaiting that very grant.
func TestAnOwnerDeliversNothingOnceItsGrantLapsed(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 50 * time.Millisecond, SegmentSize: 4096})
	owner := c.createQueue("orders", wire.PolicyAll)
	c.request(owner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	c.hold = func(s pendingSync) bool { return s.m.id == owner }
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte{1}})
	c.settle()
	c.noReply(1)
	granted := c.now
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		switch m.(type) {
		case *wire.Append, *wire.AppendReply:
			return false
		}
		return true
	}
	// Past the grant's 60 ms, before the owner's tick sees it.
	for c.now.Sub(granted) <= 60*time.Millisecond {
		c.advance(time.Millisecond)
	}
	if c.saw(event.QueueQuorumLost, by(owner)) {
		t.Fatalf("the owner stepped back %v after its last grant, before its sync completed: the story needs its tick later", c.now.Sub(granted))
	}
	c.hold = nil
	c.settle()
	c.mustReply(1, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("the owner delivered %d messages %v after its quorum's last grant", len(got), c.now.Sub(granted))
	}
}
