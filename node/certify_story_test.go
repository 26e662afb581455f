package node_test

import (
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
	receipts := true
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		_, receipt := msg.(*wire.CheckpointReceipt)
		return receipts || !receipt
	}
	receipts = false
	c.publishConfirmed(owner, "orders", 60)
	c.advance(time.Second)
	if c.saw(event.CheckpointCertified, onQueue("orders")) {
		t.Fatal("a cut was certified without the followers' receipts")
	}
	if !c.saw(event.CheckpointBuilt, onQueue("orders")) {
		t.Fatalf("no replica built the checkpoint its owner asked for; events:\n%v", c.events)
	}
	c.node(owner).crash()
	receipts = true
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
