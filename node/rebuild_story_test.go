package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A recovered owner rebuilds the state it serves from in steps of a few
// thousand records, each one a timer of its own, so that whatever reaches
// its node meanwhile is handled between two steps; the state it ends with
// is whole.
func TestARecoveryRebuildsALongHistoryInSteps(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 10_000)
	recovered, e := rebuildAfterCrash(t, c, owner)
	// The 10,000 publishes at least (a follower's base may have rolled
	// past the queue's first records before they were published), in
	// steps of at most 4,096 records: at least three of them (a read may
	// also stop early, at the end of a segment).
	if records := e.Last() - e.Index(); records < 10_000 || e.Steps() < (records+4095)/4096 {
		t.Fatalf("rebuilt %d records in %d steps, want steps of 4,096 records: %v", records, e.Steps(), e)
	}
	c.mustDeliverAll(recovered, "orders", 10_000, "after a recovery rebuilt 10,000 messages in steps")
}

// rebuildAfterCrash crashes owner, lets another replica take the queue
// over, and returns that replica with the rebuild it reported.
func rebuildAfterCrash(t *testing.T, c *cluster, owner node.NodeID) (node.NodeID, emission) {
	t.Helper()
	c.node(owner).crash()
	c.advance(5 * time.Second)
	recovered := recoveredOwner(t, c)
	e, ok := c.last(event.QueueRebuilt)
	if !ok || e.node != recovered {
		t.Fatalf("%s reported no rebuild; events:\n%v", recovered, c.events)
	}
	return recovered, e
}
