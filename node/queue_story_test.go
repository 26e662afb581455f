package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// roles finds the owner and followers of a queue.
func roles(queue string) (owner node.NodeID, followers []node.NodeID) {
	set := node.Placement{Nodes: []node.NodeID{1, 2, 3}, Replicas: 3}.ReplicaSet(queue)
	return set[0], set[1:]
}

func (c *cluster) mustReply(reqID uint64, want wire.Status) *wire.Reply {
	c.t.Helper()
	r := c.reply(reqID)
	if r == nil {
		c.t.Fatalf("request %d got no reply", reqID)
	}
	if r.Status != want {
		c.t.Fatalf("request %d: status %s (%q), want %s", reqID, r.Status, r.Detail, want)
	}
	return r
}

func (c *cluster) noReply(reqID uint64) {
	c.t.Helper()
	if r := c.reply(reqID); r != nil {
		c.t.Fatalf("request %d answered too early: %+v", reqID, r)
	}
}

// createQueue creates a queue through the metadata and waits for it to
// activate: its replicas prepare, an exact quorum reports, the owner
// activates.
func (c *cluster) createQueue(name string, p wire.Policy) node.NodeID {
	owner, _ := roles(name)
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: name, Policy: p})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	return owner
}

func msgID(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }

func TestPublishIsConfirmedOnlyWhenOwnerAndAFollowerHoldIt(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	f1 := followers[0]

	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("a")})
	// The follower gets the entry and makes it durable...
	c.deliver(func(e envelope) bool { return e.to == f1 })
	c.completeSyncs(func(m *member) bool { return m.id == f1 })
	c.deliver(func(e envelope) bool { return e.to == owner })
	// ...but the owner's own copy is not on disk yet: no confirmation.
	c.noReply(1)
	c.completeSyncs(func(m *member) bool { return m.id == owner })
	c.deliver(func(e envelope) bool { return e.to == owner })
	if r := c.mustReply(1, wire.StatusOK); r.Index != 2 {
		t.Fatalf("publish confirmed at index %d, want 2 (after the epoch marker)", r.Index)
	}
}

func TestOwnerRestartRecoversTheLongestHistory(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("a")})
	c.settle()
	c.mustReply(1, wire.StatusOK)

	// B reaches both followers' disks, but the owner crashes before its
	// own sync: B was never confirmed, and the owner comes back without it.
	c.request(owner, 2, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("b")})
	c.deliver(func(e envelope) bool { return e.from == owner })
	c.completeSyncs(func(m *member) bool { return m.id != owner })
	c.node(owner).crash()
	c.node(owner).start()
	c.advance(time.Second)

	// The restarted owner does not trust its own log: it claims epoch 2
	// as a recovery candidate, sealing all three replicas (its own
	// witness is suspect, so a plain seal quorum is not enough) and
	// copying the longer history from a follower.
	if !c.saw(event.RecoveryStage, onQueue("orders"), inEpoch(2), sealedOK, func(e emission) bool { return e.Witnesses() == 3 }) {
		t.Fatalf("the restarted owner did not seal every replica before claiming epoch 2; events:\n%v", c.events)
	}
	if !c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) {
		t.Fatalf("the restarted owner did not recover epoch 2; events:\n%v", c.events)
	}
	if c.saw(event.QueueTruncate, onQueue("orders")) {
		t.Fatalf("a replica dropped records the followers held durably; events:\n%v", c.events)
	}
	c.request(owner, 3, &wire.Publish{ReqID: 3, Queue: "orders", ID: msgID(3), Payload: []byte("c")})
	c.settle()
	if r := c.mustReply(3, wire.StatusOK); r.Index != 5 {
		t.Fatalf("C confirmed at %d, want 5 (after A, B and two epoch markers)", r.Index)
	}
	for _, m := range c.nodes {
		dump := node.DumpReplicas(m.fs.CrashClone(vfsCfg), "", 64, 1<<20)
		if len(dump) != 1 || len(dump[0].Entries) != 5 || dump[0].Entries[2].ID != msgID(2) || dump[0].Entries[4].ID != msgID(3) {
			t.Fatalf("%s holds %+v, want mark, A, B, mark, C", m.id, dump)
		}
	}
}

func TestFollowerRejectsAStaleEpoch(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.node(owner).crash()
	c.node(owner).start() // epoch 2
	c.advance(time.Second)
	_, followers := roles("orders")
	f := c.node(followers[0])
	inc := currentIncarnation(t, f, "orders")
	c.msgs = nil
	f.run(func() { f.n.OnMessage(owner, &wire.Append{Queue: "orders", Incarnation: inc, Epoch: 1}) })
	var got *wire.AppendReply
	for _, e := range c.msgs {
		if m, _ := wire.Decode(e.frame); e.from == f.id {
			if r, ok := m.(*wire.AppendReply); ok {
				got = r
			}
		}
	}
	if got == nil || got.OK || got.Epoch != 2 {
		t.Fatalf("follower answered a stale append with %+v; want a refusal naming epoch 2", got)
	}
}

func TestRetriedPublishIsDeduplicated(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	for req := uint64(1); req <= 2; req++ {
		c.request(owner, 1, &wire.Publish{ReqID: req, Queue: "orders", ID: msgID(1), Payload: []byte("once")})
	}
	c.settle()
	a, b := c.mustReply(1, wire.StatusOK), c.mustReply(2, wire.StatusOK)
	if a.Index != b.Index {
		t.Fatalf("a retried publish was appended twice: indexes %d and %d", a.Index, b.Index)
	}
}

func TestNackAndLeaseExpiryRedeliverAndAckSettles(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: 100 * time.Millisecond})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	d := c.deliveries(consumer)
	if len(d) != 1 || d[0].Attempt != 1 {
		t.Fatalf("first delivery: %+v", d)
	}
	c.request(owner, consumer, &wire.Settle{ReqID: 11, Queue: "orders", ID: msgID(1), Lease: d[0].Lease, Nack: true})
	c.mustReply(11, wire.StatusOK)
	if d = c.deliveries(consumer); len(d) != 1 || d[0].Attempt != 2 {
		t.Fatalf("a nack should redeliver at once, got %+v", d)
	}
	c.advance(150 * time.Millisecond) // the lease runs out
	if d = c.deliveries(consumer); len(d) != 1 || d[0].Attempt != 3 {
		t.Fatalf("lease expiry should redeliver, got %+v", d)
	}
	c.request(owner, consumer, &wire.Settle{ReqID: 12, Queue: "orders", ID: msgID(1), Lease: d[0].Lease})
	c.settle()
	c.mustReply(12, wire.StatusOK)
	c.advance(500 * time.Millisecond)
	if d = c.deliveries(consumer); len(d) != 0 {
		t.Fatalf("an acked message came back: %+v", d)
	}
}

func TestDelayedMessageWaitsForItsPromoteRecord(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 4})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Delay: 50 * time.Millisecond})
	c.settle()
	c.mustReply(1, wire.StatusOK)
	c.advance(30 * time.Millisecond)
	if d := c.deliveries(5); len(d) != 0 {
		t.Fatalf("a delayed message was delivered early: %+v", d)
	}
	c.advance(40 * time.Millisecond)
	if d := c.deliveries(5); len(d) != 1 {
		t.Fatalf("the delayed message was not released after its delay: %+v", d)
	}
	dump := node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	if last := dump[0].Entries[len(dump[0].Entries)-1]; last.Type != "promote" {
		t.Fatalf("the release is not an ordered promote record: last entry %+v", last)
	}
}

func TestPoliciesCountTheirQuorum(t *testing.T) {
	for _, tc := range []struct {
		policy  wire.Policy
		helpers int // followers that make the entry durable
		want    bool
	}{
		{wire.PolicyOwnerOnly, 0, true},
		{wire.PolicyMajority, 0, false},
		{wire.PolicyMajority, 1, true},
		{wire.PolicyAll, 1, false},
		{wire.PolicyAll, 2, true},
	} {
		c := newCluster(t)
		owner := c.createQueue("orders", tc.policy)
		c.advance(100 * time.Millisecond)
		_, followers := roles("orders")
		helping := followers[:tc.helpers]
		c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1)})
		for range 5 {
			c.deliver(func(e envelope) bool { return e.to == owner || containsID(helping, e.to) })
			c.completeSyncs(func(m *member) bool { return m.id == owner || containsID(helping, m.id) })
		}
		if got := c.reply(1) != nil; got != tc.want {
			t.Errorf("policy %s with %d durable followers: confirmed=%t, want %t", tc.policy, tc.helpers, got, tc.want)
		}
	}
}

func containsID(ids []node.NodeID, id node.NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestDeletedQueueRefusesWorkAndItsNameCanBeReused(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	first := currentIncarnation(t, c.node(owner), "orders")
	c.request(owner, 1, &wire.DeleteQueue{ReqID: 1, Queue: "orders"})
	c.advance(200 * time.Millisecond)
	c.mustReply(1, wire.StatusOK)
	// No such queue is a definite answer, so even the leader confirms its
	// catalogue (a ReadIndex round) before giving it.
	lead := c.leader()
	c.request(lead, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(1)})
	c.noReply(2)
	c.settle()
	c.mustReply(2, wire.StatusNoQueue)
	if !c.saw(event.QueueRetired, onQueue("orders")) {
		t.Fatalf("the deleted incarnation was not retired; events:\n%v", c.events)
	}
	// Deleting it again, or a queue that never was, is answered the same.
	c.request(owner, 1, &wire.DeleteQueue{ReqID: 4, Queue: "orders"})
	c.request(owner, 1, &wire.DeleteQueue{ReqID: 5, Queue: "never-made"})
	c.settle()
	c.mustReply(4, wire.StatusNoQueue)
	c.mustReply(5, wire.StatusNoQueue)
	// A new queue of the same name is a new incarnation, in a fresh
	// directory, with nothing of the old one.
	c.createQueue("orders", wire.PolicyMajority)
	incs := map[uint64]bool{}
	for _, d := range node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20) {
		incs[d.Incarnation] = true
	}
	if len(incs) != 2 || !incs[first] {
		t.Fatalf("want the old incarnation %x and a new one on disk, have %v", first, incs)
	}
	c.request(owner, 1, &wire.Publish{ReqID: 3, Queue: "orders", ID: msgID(2)})
	c.settle()
	if r := c.mustReply(3, wire.StatusOK); r.Index != 2 {
		t.Fatalf("the new incarnation's first publish is at %d, want 2 (after its epoch marker)", r.Index)
	}
}

// currentIncarnation reads the incarnation of queue on m's disk, which
// must hold exactly one.
func currentIncarnation(t *testing.T, m *member, queue string) uint64 {
	t.Helper()
	var incs []uint64
	for _, d := range node.DumpReplicas(m.fs.CrashClone(vfsCfg), "", 64, 1<<20) {
		if d.Queue == queue {
			incs = append(incs, d.Incarnation)
		}
	}
	if len(incs) != 1 {
		t.Fatalf("%s holds %d incarnations of %s, want one", m.id, len(incs), queue)
	}
	return incs[0]
}

func TestRequestsToANonOwnerAreRedirected(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.request(followers[0], 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1)})
	if r := c.mustReply(1, wire.StatusNotOwner); node.NodeID(r.Owner) != owner {
		t.Fatalf("redirect names %d, the owner is %s", r.Owner, owner)
	}
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: make([]byte, wire.MaxPayloadSize+1)})
	c.mustReply(2, wire.StatusTooLarge)
	c.request(owner, 1, &wire.Publish{ReqID: 3, Queue: "no/such", ID: msgID(3)})
	c.mustReply(3, wire.StatusBadRequest)
}

// The owner's view counts the backlog by where each message stands; the
// followers, which do not know leases, report no depth at all.
func TestTheOwnerCountsItsBacklog(t *testing.T) {
	c := newCluster(t)
	const consumer node.ConnID = 5
	owner, d := c.leaseBacklog(2, 4)
	c.request(owner, 5, &wire.Publish{ReqID: 5, Queue: "orders", ID: msgID(5), Delay: time.Hour})
	c.settle()
	if len(d) != 2 {
		t.Fatalf("a window of 2 got %d deliveries", len(d))
	}
	want := node.QueueDepth{Known: true, Ready: 2, Leased: 2, Delayed: 1, Consumers: 1}
	if got := viewOf(t, c.node(owner).n, "orders").Depth; got != want {
		t.Fatalf("owner's depth %+v, want %+v", got, want)
	}
	c.request(owner, consumer, &wire.Settle{ReqID: 11, Queue: "orders", ID: d[0].ID, Lease: d[0].Lease})
	c.settle()
	c.mustReply(11, wire.StatusOK)
	// The settled message is gone and the freed slot took the next one.
	want = node.QueueDepth{Known: true, Ready: 1, Leased: 2, Delayed: 1, Consumers: 1}
	if got := viewOf(t, c.node(owner).n, "orders").Depth; got != want {
		t.Fatalf("after an ack the owner's depth is %+v, want %+v", got, want)
	}
	_, followers := roles("orders")
	if got := viewOf(t, c.node(followers[0]).n, "orders").Depth; got.Known {
		t.Fatalf("a follower reports a depth it cannot know: %+v", got)
	}
}

// A request the node refused stays refused: a copy of it that arrives
// after the cause went away (here the queue, created meanwhile) gets the
// same answer and is not acted on, since its client already reported it
// failed.
func TestACopyOfARefusedRequestIsRefusedAgain(t *testing.T) {
	c := newCluster(t)
	owner, _ := roles("later")
	publish := &wire.Publish{ReqID: 1, Queue: "later", ID: msgID(1), Payload: []byte("early")}
	c.request(owner, 4, publish)
	c.advance(200 * time.Millisecond)
	c.mustReply(1, wire.StatusNoQueue)
	c.createQueue("later", wire.PolicyMajority)
	c.request(owner, 4, publish)
	c.advance(200 * time.Millisecond)
	if r := c.mustReply(1, wire.StatusNoQueue); r.Index != 0 {
		t.Fatalf("the copy was answered at index %d", r.Index)
	}
	for _, e := range node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20)[0].Entries {
		if e.Type == "publish" {
			t.Fatalf("the copy of a refused publish was stored: %+v", e)
		}
	}
}
