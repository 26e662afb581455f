package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A purge takes everything the queue holds, leased messages included,
// and nothing published after it. What it took stays gone when the owner
// restarts and the queue fails over to a new epoch.
func TestAPurgeRemovesWhatTheQueueHeldAndStaysDone(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)

	// Three messages are published; a consumer leases the first of them.
	c.publishConfirmed(owner, "orders", 3)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	leased := c.deliveries(5)
	if len(leased) != 1 || leased[0].ID != msgID(1) {
		t.Fatalf("the consumer got %v, want the first message alone", leased)
	}

	// The purge is confirmed at its own index, after the three publishes.
	c.request(owner, 6, &wire.Purge{ReqID: 20, Queue: "orders"})
	c.settle()
	if r := c.mustReply(20, wire.StatusOK); r.Index != 5 {
		t.Fatalf("the purge was confirmed at index %d, want 5 (the marker, three publishes, then the purge)", r.Index)
	}

	// The consumer still working on the leased message acks it: the
	// purge settled it, and the ack is answered as the ack of a settled
	// message is. A retried publish of a purged message is not stored
	// again.
	c.request(owner, 5, &wire.Settle{ReqID: 21, Queue: "orders", ID: msgID(1), Lease: leased[0].Lease})
	c.request(owner, 6, &wire.Publish{ReqID: 22, Queue: "orders", ID: msgID(2), Payload: []byte("retry")})
	c.settle()
	if r := c.mustReply(21, wire.StatusOK); r.Index != 5 {
		t.Fatalf("the ack of a purged message was answered at index %d, want the purge's 5", r.Index)
	}
	if r := c.mustReply(22, wire.StatusOK); r.Index != 3 {
		t.Fatalf("a retried publish of a purged message was answered at index %d, want its original 3", r.Index)
	}

	// One more message is published after the purge: the consumer, its
	// window free again, gets it and nothing else.
	c.request(owner, 6, &wire.Publish{ReqID: 23, Queue: "orders", ID: msgID(4), Payload: []byte("after")})
	c.settle()
	c.mustReply(23, wire.StatusOK)
	if got := c.deliveries(5); len(got) != 1 || got[0].ID != msgID(4) {
		t.Fatalf("after the purge the consumer got %v, want the fourth message alone", got)
	}
	if v := viewOf(t, c.node(owner).n, "orders"); v.Depth.Ready+v.Depth.Leased+v.Depth.Delayed != 1 {
		t.Fatalf("the owner counts %+v after the purge, want the one message published after it", v.Depth)
	}

	// The owner restarts; whoever serves the queue next rebuilds it from
	// the log, and a fresh consumer again gets only the fourth message.
	c.node(owner).crash()
	c.node(owner).start()
	c.advance(2 * time.Second)
	if !c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) {
		t.Fatalf("the queue did not come back in epoch 2; events:\n%v", c.events)
	}
	next := owner
	if e, ok := c.last(event.QueueActive); ok {
		next = e.node
	}
	c.request(next, 7, &wire.Subscribe{ReqID: 30, Queue: "orders", Window: 10, Lease: time.Minute})
	c.advance(time.Second)
	c.mustReply(30, wire.StatusOK)
	got := c.deliveries(7)
	if len(got) != 1 || got[0].ID != msgID(4) {
		t.Fatalf("after the restart a fresh consumer got %v, want the fourth message alone", got)
	}
	// Every replica holds the purge record at index 5.
	for _, m := range c.nodes {
		dump := node.DumpReplicas(m.fs.CrashClone(vfsCfg), "", 64, 1<<20)
		if len(dump) != 1 || len(dump[0].Entries) < 5 || dump[0].Entries[4].Type != "purge" || dump[0].Entries[4].Through != 4 {
			t.Fatalf("%s holds %+v, want the purge of everything through index 4 at index 5", m.id, dump)
		}
	}
}

// Purges that reach a recovered owner while its hold is on wait with it.
// One retried under its token while it waits is written once, and both
// copies are answered at its index; another purge, under a token of its
// own, is a purge of its own, written after it.
func TestAPurgeRetriedWhileHeldIsWrittenOnce(t *testing.T) {
	c, newOwner := ownerInHold(t)
	first, other := wire.MessageID{Producer: 99, Seq: 1}, wire.MessageID{Producer: 99, Seq: 2}
	c.request(newOwner, 6, &wire.Purge{ReqID: 70, Queue: "orders", Token: first})
	c.request(newOwner, 6, &wire.Purge{ReqID: 71, Queue: "orders", Token: first})
	c.request(newOwner, 8, &wire.Purge{ReqID: 72, Queue: "orders", Token: other})
	c.settle()
	if _, ended := c.last(event.QueueHoldEnded); ended {
		t.Fatal("the hold ended before the story could purge inside it")
	}
	c.advance(100 * time.Millisecond)
	a, b, o := c.mustReply(70, wire.StatusOK), c.mustReply(71, wire.StatusOK), c.mustReply(72, wire.StatusOK)
	if a.Index != b.Index || o.Index <= a.Index {
		t.Fatalf("the purge was answered at %d and its retry at %d, the other purge at %d: want the retry at the first's index, the other after it",
			a.Index, b.Index, o.Index)
	}
	dump := node.DumpReplicas(c.node(newOwner).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	purges := 0
	for _, e := range dump[0].Entries {
		if e.Type == "purge" {
			purges++
		}
	}
	if purges != 2 {
		t.Fatalf("the owner's log holds %d purge records, want 2 (the retried purge once, the other once)", purges)
	}
}

// A recovered owner holds back the history it took over while the old
// owner's delivery lease may still let the old owner hand it out. A
// purge that reaches it then waits for the hold to end before it is
// written and confirmed: confirmed any sooner, the old owner could still
// deliver a message after the client heard that it was gone.
func TestAPurgeWaitsForARecoveredOwnersHold(t *testing.T) {
	c, newOwner := ownerInHold(t)
	c.request(newOwner, 6, &wire.Purge{ReqID: 70, Queue: "orders"})
	c.settle()
	if _, ended := c.last(event.QueueHoldEnded); ended {
		t.Fatal("the hold ended before the story could purge inside it")
	}
	c.noReply(70)
	c.advance(100 * time.Millisecond)
	held, ok := c.last(event.QueueHoldEnded)
	if !ok {
		t.Fatal("the hold did not end 100ms after activation")
	}
	r := c.mustReply(70, wire.StatusOK)
	if confirmed, _ := c.last(event.QueueCommit); confirmed.at.Before(held.at) {
		t.Fatalf("the purge was confirmed at %v, before the hold ended at %v", confirmed.at, held.at)
	}
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 71, Queue: "orders", Window: 10, Lease: time.Second})
	c.advance(100 * time.Millisecond)
	c.mustReply(71, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("after the purge at index %d a subscriber got %v", r.Index, got)
	}
}

// An ack taken in the same turn as a purge, before it, waits with the
// turn's other acks for the end of the turn; by then the purge has
// settled its message, so no settle record is written for it and the ack
// is answered once the purge is confirmed, at the purge's index.
func TestAnAckInThePurgesTurnIsAnsweredByThePurge(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 2)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	d := c.deliveries(5)
	if len(d) != 1 {
		t.Fatalf("the consumer got %d deliveries, want 1", len(d))
	}
	c.requestTurn(owner, 5, &wire.Settle{ReqID: 20, Queue: "orders", ID: d[0].ID, Lease: d[0].Lease},
		&wire.Purge{ReqID: 21, Queue: "orders"})
	c.settle()
	purged := c.mustReply(21, wire.StatusOK)
	if acked := c.mustReply(20, wire.StatusOK); acked.Index != purged.Index {
		t.Fatalf("the ack was answered at index %d, the purge at %d: want the purge's", acked.Index, purged.Index)
	}
	dump := node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	if last := dump[0].Entries[len(dump[0].Entries)-1]; len(dump) != 1 || last.Type != "purge" || last.Index != purged.Index {
		t.Fatalf("the owner's log ends with %+v, want the purge at %d and no settle after it", last, purged.Index)
	}
}

// A purge retried under its token, after a message was published past
// it, is answered with the first purge's index and removes nothing more:
// the later message is still delivered. A purge with a new token purges
// again.
func TestARetriedPurgeDoesNotPurgeAgain(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	token := wire.MessageID{Producer: 99, Seq: 1}
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("old")})
	c.settle()
	c.request(owner, 6, &wire.Purge{ReqID: 20, Queue: "orders", Token: token})
	c.settle()
	first := c.mustReply(20, wire.StatusOK).Index
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("new")})
	c.settle()
	c.request(owner, 6, &wire.Purge{ReqID: 21, Queue: "orders", Token: token})
	c.settle()
	if again := c.mustReply(21, wire.StatusOK).Index; again != first {
		t.Fatalf("the retried purge was answered at index %d, the first at %d", again, first)
	}
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 30, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	if ds := c.deliveries(consumer); len(ds) != 1 || ds[0].ID != msgID(2) {
		t.Fatalf("after a retried purge the consumer got %+v, want the later message", ds)
	}
	c.request(owner, 6, &wire.Purge{ReqID: 22, Queue: "orders", Token: wire.MessageID{Producer: 99, Seq: 2}})
	c.settle()
	if r := c.mustReply(22, wire.StatusOK); r.Index <= first {
		t.Fatalf("a new purge was answered at index %d, not after the first's %d", r.Index, first)
	}
}

// ownerInHold makes a queue of three confirmed messages whose owner is
// cut off from the metadata leader until a new owner recovers the queue,
// and returns the cluster and the new owner, which holds back the
// recovered history while the old owner's lease may run.
func ownerInHold(t *testing.T) (*cluster, node.NodeID) {
	t.Helper()
	c := newShortSilenceCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	c.cutFromLeaderUntilRecovered(owner, "orders", true)
	return c, recoveredOwner(t, c)
}
