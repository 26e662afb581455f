package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Every replica built the checkpoint an owner asked for, but the owner
// died before it could certify it: the next owner certifies a cut at once
// instead of waiting for another full checkpoint's worth of records, since
// until then no replica may compact below what it already holds.
func TestANewOwnerFinishesACheckpointItsPredecessorLeftUncertified(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 50})
	owner := c.createQueue("orders", wire.PolicyMajority)
	receipts := passReceipts(c, false)
	c.publishConfirmed(owner, "orders", 60)
	c.advance(time.Second)
	if c.saw(event.CheckpointCertified, onQueue("orders")) {
		t.Fatal("a cut was certified without the followers' receipts")
	}
	if !c.saw(event.CheckpointBuilt, onQueue("orders")) {
		t.Fatalf("no replica built the checkpoint its owner asked for; events:\n%v", c.events)
	}
	c.node(owner).crash()
	*receipts = true
	c.advance(5 * time.Second)
	recovered := recoveredOwner(t, c)
	// A certificate needs every replica's receipt: the old owner comes
	// back, as a follower.
	c.node(owner).start()
	c.advance(5 * time.Second)
	if !c.saw(event.CheckpointCertified, onQueue("orders")) {
		t.Fatalf("the new owner %s left the checkpoint uncertified; events:\n%v", recovered, c.events)
	}
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 60, "after a checkpoint was certified by the next owner")
}

// A follower finds its log damaged and fences its replica for good. In a
// cluster of three there is no node to replace it on, so the queue runs
// on with two healthy replicas. Their owner still certifies cuts, asking
// only them, and both compact: waiting for the fenced replica's receipt
// would stop compaction, and grow the queue's disk, for as long as the
// cluster stays this size.
func TestCutsAreCertifiedWithoutALostReplica(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20})
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 5)
	lost := node.NodeID(1 + owner%3)
	c.node(lost).crash()
	damageFirstSegment(t, c.node(lost).fs, "orders")
	c.node(lost).start()
	c.advance(3 * time.Second)
	if !c.saw(event.QueueFenced, onQueue("orders"), by(lost)) {
		t.Fatalf("the damaged replica on %s was not fenced; events:\n%v", lost, c.events)
	}
	c.emitted = nil

	// The IDs start over at p7.1: the first five are retries, the rest new.
	c.publishConfirmed(owner, "orders", 200)
	c.advance(2 * time.Second)
	cert, ok := c.last(event.CheckpointCertified)
	if !ok || cert.Index() < 180 {
		t.Fatalf("no cut past the new records was certified (last %v); events:\n%v", cert.Event, c.events)
	}
	if slices.Contains(cert.Members(), uint32(lost)) || len(cert.Members()) != 2 {
		t.Fatalf("the certificate names %v, want the two healthy replicas without %s", cert.Members(), lost)
	}
	for _, id := range []node.NodeID{1, 2, 3} {
		if id != lost && !c.saw(event.QueueCompacted, onQueue("orders"), by(id)) {
			t.Errorf("the healthy replica on %s did not compact", id)
		}
	}
	c.mustDeliverAll(owner, "orders", 200, "after cuts certified without the lost replica")
}

// Large messages fill the owner's small segments one or two at a time,
// and they arrive faster than a segment a tick. The owner's own build of
// each cut must still gain on its log: a build that applied one segment a
// tick fell further behind with every tick, its owner never reported its
// own receipt, and no cut was ever certified.
func TestAnOwnerBuildsItsCheckpointFasterThanItsSmallSegmentsFill(t *testing.T) {
	tick := 10 * time.Millisecond
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: tick, SegmentSize: 4096,
		CheckpointRecords: 100})
	owner := c.createQueue("orders", wire.PolicyOwnerOnly)
	payload := make([]byte, 3000)
	const perTick, ticks = 4, 300
	for i := uint64(0); i < ticks; i++ {
		for j := uint64(1); j <= perTick; j++ {
			id := i*perTick + j
			c.request(owner, 1, &wire.Publish{ReqID: id, Queue: "orders", ID: msgID(id), Payload: payload})
		}
		c.advance(tick)
	}
	const total = perTick * ticks
	cert, ok := c.last(event.CheckpointCertified)
	if !ok || cert.Index() < total/2 {
		t.Fatalf("no cut past half of the %d records was certified (last %v)", total, cert.Event)
	}
}
