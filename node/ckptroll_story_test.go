package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Between checkpoints every replica applies what was confirmed, a tick at
// a time, to the state it keeps for its next build. A follower that takes
// over after its owner dies then rebuilds only the records since its last
// tick, not the queue's whole history; and the state each replica keeps
// is always its checkpoint's with the log since applied.
func TestAReplicaKeepsItsNextBuildsBaseRolledForward(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3000)
	c.advance(200 * time.Millisecond) // the commit reaches the followers, and a few ticks pass
	for _, id := range append([]node.NodeID{owner}, followers...) {
		if kept, err := node.CheckpointStateMatches(c.node(id).n, "orders"); !kept || err != nil {
			t.Fatalf("%s's base in memory (kept %v): %v", id, kept, err)
		}
	}
	recovered, e := rebuildAfterCrash(t, c, owner)
	if e.Index() < 3000 || e.Base() != "memory" {
		t.Fatalf("the recovered owner rebuilt from index %d (base %q), want from its base rolled past the 3,000 publishes: %v", e.Index(), e.Base(), e)
	}
	c.mustDeliverAll(recovered, "orders", 3000, "after a recovery from a rolled base")
}
