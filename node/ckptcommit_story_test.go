package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A replica persists the commit it knows only with its epoch, and builds
// its checkpoints (each at a cut it knows confirmed) in between. Here the
// followers checkpoint well after their epoch was written, restart, and
// are sealed by the next owner: each one's witness must still say its
// checkpoint's cut is confirmed. A witness that forgot it let a recovery
// take a source's coarse conflict hint (where the source's run of one
// epoch began, below the cut) and cut its log under its own checkpoint.
func TestARestartedReplicaStillKnowsItsCheckpointIsConfirmed(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20})
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 60)
	c.advance(2 * time.Second)

	cut := map[node.NodeID]uint64{}
	for _, f := range followers {
		for _, e := range c.emitted {
			if e.Name == event.CheckpointDurable && e.node == f && e.Queue() == "orders" {
				cut[f] = e.Index()
			}
		}
		if cut[f] == 0 {
			t.Fatalf("%s never checkpointed; events:\n%v", f, c.events)
		}
	}
	commits := map[node.NodeID]uint64{}
	c.intercept = func(from, _ node.NodeID, msg wire.Message) bool {
		if m, ok := msg.(*wire.SealReply); ok && m.OK && m.Queue == "orders" {
			commits[from] = m.Commit
		}
		return true
	}
	c.node(owner).crash()
	for _, f := range followers {
		c.node(f).crash()
		c.node(f).start()
	}
	c.advance(5 * time.Second)

	if len(commits) == 0 {
		t.Fatalf("no follower was sealed: the story proves nothing; events:\n%v", c.events)
	}
	for f, commit := range commits {
		if commit < cut[f] {
			t.Errorf("%s restarted over its checkpoint at %d but witnessed commit %d", f, cut[f], commit)
		}
	}
}
