package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// newShortSilenceCluster starts three nodes whose detection interval, and
// so the silence after which an owner steps back (40ms), is shorter than
// the delivery lease (60ms): a recovered owner then serves before the old
// owner's delivery lease has surely run out, and holds its history back
// meanwhile. With the default interval (100ms) the wait for the old
// owner's quorum to go stale covers the hold.
func newShortSilenceCluster(t *testing.T) *cluster {
	return newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		Detection: node.DetectionPolicy{Mode: node.DetectHeartbeat, Interval: 40 * time.Millisecond, Grace: 300 * time.Millisecond}})
}

// A recovered owner confirms publishes as soon as it serves. The messages
// it recovered wait until the old owner's delivery lease has surely run
// out, since an old owner cut off from the metadata may still be handing
// them out: here the owner loses only its link to the metadata leader, so
// its other follower goes on renewing its lease until the candidate seals
// it. Each sealed replica says how long ago it last renewed, and the hold
// ends the lease (60ms) and a quarter after the latest renewal, no earlier
// and not much later. Then the held messages go out first, in order, and
// the fresh publish after them.
func TestRecoveredOwnerHoldsTheOldHistoryUntilTheLeaseRunsOut(t *testing.T) {
	c := newShortSilenceCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	c.cutFromLeaderUntilRecovered(owner, "orders", true)
	var sealed emission
	for _, e := range c.emitted {
		if e.Name == event.RecoveryStage && sealedOK(e) {
			sealed = e
		}
	}
	if sealed.at.IsZero() {
		t.Fatal("the recovery reported no seal stage")
	}
	newOwner := recoveredOwner(t, c)
	c.untilActive(newOwner, "orders")
	activated := c.now

	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 10, Lease: time.Second})
	c.request(newOwner, 1, &wire.Publish{ReqID: 60, Queue: "orders", ID: msgID(60)})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	c.mustReply(60, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("the new owner delivered %d messages %v after activation, inside the old owner's lease", len(got), c.now.Sub(activated))
	}

	c.advance(100 * time.Millisecond)
	held, ok := c.last(event.QueueHoldEnded)
	if !ok {
		t.Fatalf("the hold did not end 100ms after activation (sealed at %v)", sealed.at)
	}
	// The old owner served until the candidate's seal reached its
	// follower, at most as long as the seal stage took before the seal
	// quorum formed; its lease lasted at most 60ms more.
	stoppedServing := time.Time{}
	for _, e := range c.emitted {
		if e.node == owner && e.Name == event.QueueRole && e.From() == "owner" {
			stoppedServing = e.at
		}
	}
	if wait := held.at.Sub(sealed.at); wait > 75*time.Millisecond || wait < 75*time.Millisecond-sealed.Elapsed() {
		t.Fatalf("the hold ended %v after the seal quorum formed (the seal stage took %v): want the lease and a quarter (75ms) after the last renewal, which came before the quorum formed and after the stage began", wait, sealed.Elapsed())
	}
	if stoppedServing.IsZero() || held.at.Before(stoppedServing) {
		t.Fatalf("the hold ended at %v, and the old owner stopped serving at %v (zero: never)", held.at, stoppedServing)
	}
	got := c.deliveries(7)
	want := []wire.MessageID{msgID(1), msgID(2), msgID(3), msgID(60)}
	if len(got) != len(want) {
		t.Fatalf("after the hold the new owner delivered %d messages, want %d", len(got), len(want))
	}
	for i, d := range got {
		if d.ID != want[i] {
			t.Fatalf("delivery %d is %s, want %s: the recovered history goes first, in order", i, d.ID, want[i])
		}
	}
}

// The hold covers only what the old owner may still hand out. When every
// message of the recovered history was settled before the failover, a
// message published to the new owner while the hold lasts is delivered at
// once: nothing from the old epoch is ahead of it.
func TestAHoldWithNothingLeftToHoldDeliversNewMessagesAtOnce(t *testing.T) {
	c := newShortSilenceCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	c.request(owner, 5, &wire.Subscribe{ReqID: 40, Queue: "orders", Window: 10, Lease: time.Second})
	c.settle()
	for i, d := range c.deliveries(5) {
		c.request(owner, 5, &wire.Settle{ReqID: 41 + uint64(i), Queue: "orders", ID: d.ID, Lease: d.Lease})
	}
	c.settle()
	for i := range 3 {
		c.mustReply(41+uint64(i), wire.StatusOK)
	}
	c.cutFromLeaderUntilRecovered(owner, "orders", true)
	newOwner := recoveredOwner(t, c)
	c.untilActive(newOwner, "orders")

	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 10, Lease: time.Second})
	c.request(newOwner, 1, &wire.Publish{ReqID: 60, Queue: "orders", ID: msgID(60)})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	c.mustReply(60, wire.StatusOK)
	if c.saw(event.QueueHoldEnded, by(newOwner)) {
		t.Fatal("the hold ended before the fresh publish was confirmed; the story needs it still on")
	}
	got := c.deliveries(7)
	if len(got) != 1 || got[0].ID != msgID(60) {
		t.Fatalf("the new owner delivered %v while it held back an empty history, want %s at once", got, msgID(60))
	}
}

// A publish that reaches the recovery candidate while it recovers waits
// there and is answered the moment the candidate admits clients, rather
// than refused as unavailable (which would send the client into a
// backoff longer than the rest of the recovery). A request that waits
// longer than the park timeout is refused after all.
func TestCandidateParksRequestsUntilItServes(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 1)
	// Seals are lost until further notice, so the recovery stays in its
	// seal stage.
	sealing := true
	c.intercept = func(_, _ node.NodeID, msg wire.Message) bool {
		_, seal := msg.(*wire.Seal)
		return !(seal && sealing)
	}
	c.node(owner).crash()
	var candidate node.NodeID
	for step := 0; candidate == 0; step++ {
		if step > 400 {
			t.Fatalf("no recovery started in 2s; events:\n%v", c.events)
		}
		c.advance(5 * time.Millisecond)
		if e, ok := c.last(event.RecoveryStart); ok {
			candidate = e.node
		}
	}

	c.request(candidate, 3, &wire.Publish{ReqID: 70, Queue: "orders", ID: msgID(70)})
	c.advance(100 * time.Millisecond)
	if r := c.reply(70); r != nil {
		t.Fatalf("the candidate answered %v while it was still recovering; it should hold the request", r)
	}
	c.advance(500 * time.Millisecond)
	c.mustReply(70, wire.StatusUnavailable)

	c.request(candidate, 3, &wire.Publish{ReqID: 71, Queue: "orders", ID: msgID(71)})
	c.advance(50 * time.Millisecond)
	if r := c.reply(71); r != nil {
		t.Fatalf("the candidate answered %v while it was still recovering", r)
	}
	sealing = false
	for step := 0; !c.saw(event.RecoveryDone, onQueue("orders")); step++ {
		if step > 400 {
			t.Fatalf("no recovery completed; events:\n%v", c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	c.settle()
	c.mustReply(71, wire.StatusOK)
}

// A node whose metadata says a queue's owner is down does not send the
// client to the dead owner: it holds the request until a plan names the
// next owner. An owner-only queue has no replica to fail over to, so the
// request is refused as unavailable once the park timeout runs out.
func TestRequestsWaitWhileTheOwnerIsConfirmedDown(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("solo", wire.PolicyOwnerOnly)
	c.node(owner).crash()
	for step := 0; !c.saw(event.MetaNodeDown); step++ {
		if step > 400 {
			t.Fatalf("the dead owner was not confirmed down in 2s; events:\n%v", c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	other := owner%3 + 1
	c.request(other, 4, &wire.Publish{ReqID: 80, Queue: "solo", ID: msgID(80)})
	c.advance(100 * time.Millisecond)
	if r := c.reply(80); r != nil {
		t.Fatalf("%s answered %v; it should hold the request while the owner is down", other, r)
	}
	c.advance(450 * time.Millisecond)
	c.mustReply(80, wire.StatusUnavailable)
}

// cutFromLeaderUntilRecovered cuts queue's owner from the metadata
// leader alone, and waits until a recovery is done. The owner goes on
// serving, its lease renewed by its other follower, until it is sealed.
// With loseSealAnswer its answer to the seal is lost too, so the new
// owner cannot know that it stopped.
func (c *cluster) cutFromLeaderUntilRecovered(owner node.NodeID, queue string, loseSealAnswer bool) {
	c.t.Helper()
	leader := c.leader()
	if leader == owner {
		c.t.Fatal("the story needs an owner that does not lead the metadata")
	}
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		_, sealAnswer := m.(*wire.SealReply)
		if loseSealAnswer && sealAnswer && from == owner {
			return false
		}
		return !(from == owner && to == leader || from == leader && to == owner)
	}
	for step := 0; !c.saw(event.RecoveryDone, onQueue(queue)); step++ {
		if step > 400 {
			c.t.Fatalf("no recovery completed in 2s; events:\n%v", c.events)
		}
		c.advance(5 * time.Millisecond)
	}
}

// untilActive advances the cluster until node says it serves queue in
// full (queue.active): a recovered owner outwaits an older owner's quorum
// after the metadata activated it.
func (c *cluster) untilActive(node node.NodeID, queue string) {
	c.t.Helper()
	for step := 0; !c.saw(event.QueueActive, by(node), onQueue(queue)); step++ {
		if step > 100 {
			c.t.Fatalf("%s did not serve %s in 500ms; events:\n%v", node, queue, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
}

// When the old owner itself answers the seal, it says it stopped
// delivering as it was sealed, and that nothing older was still
// delivering: the new owner then has no lease to wait out and delivers
// the history it recovered at once.
func TestAnOldOwnerThatAnswersTheSealReleasesItsHistory(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	c.cutFromLeaderUntilRecovered(owner, "orders", false)
	newOwner := recoveredOwner(t, c)
	activated := c.now
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 10, Lease: time.Second})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 3 {
		t.Fatalf("the new owner delivered %d of the 3 recovered messages %v after activation, want all at once", len(got), c.now.Sub(activated))
	}
	if c.saw(event.QueueHoldEnded, by(newOwner)) {
		t.Fatal("the new owner held the history back though the old owner released it")
	}
}
