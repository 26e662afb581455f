package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A checkpoint of a busy queue carries a window of many thousand IDs into
// the journal. Appended in one go, they held the node's loop for 50 ms at
// 5,000 msg/s; now a finished build appends a few thousand a tick. Here
// 9,000 publishes fill the window past several steps of 1,024: some replica is
// seen part way through its journal after a tick, with publishes still
// confirmed meanwhile and its base rolling forward past the cut (the
// journal writes a copy of the window, so the base need not stand still
// and catch up in one long step after), and every replica's checkpoint is
// then built, certified and holds the whole window.
func TestAJournalIsWrittenAStepATick(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, CheckpointRecords: 8000, JournalStepEntries: 1024})
	owner := c.createQueue("orders", wire.PolicyMajority)
	const n = 9000
	for i := uint64(1); i <= n; i += 100 {
		var turn []wire.Message
		for j := i; j < i+100; j++ {
			turn = append(turn, &wire.Publish{ReqID: j, Queue: "orders", ID: msgID(j), Payload: []byte{byte(j)}})
		}
		c.requestTurn(owner, 1, turn...)
		c.settle()
	}
	midway, rolled, extra := false, false, uint64(n+1)
	baseAtFirstStep := map[node.NodeID]uint64{}
	for range 200 {
		c.advance(10 * time.Millisecond)
		for _, id := range []node.NodeID{1, 2, 3} {
			if pending, left := node.Journaling(c.node(id).n, "orders"); pending && left > 0 {
				midway = true
				applied, _ := node.BaseApplied(c.node(id).n, "orders")
				if first, seen := baseAtFirstStep[id]; !seen {
					baseAtFirstStep[id] = applied
				} else if applied > first {
					rolled = true
				}
				// The loop serves between steps.
				c.request(owner, 1, &wire.Publish{ReqID: extra, Queue: "orders", ID: msgID(extra), Payload: []byte{1}})
				c.settle()
				c.mustReply(extra, wire.StatusOK)
				extra++
			}
		}
		if c.saw(event.CheckpointCertified, onQueue("orders")) {
			break
		}
	}
	if !midway {
		t.Fatalf("no replica was ever seen part way through its journal: the window went in at once; events:\n%v", c.events)
	}
	if !rolled {
		t.Fatalf("no replica's base rolled forward while its journal was written (bases at the first step seen: %v)", baseAtFirstStep)
	}
	if !c.saw(event.CheckpointCertified, onQueue("orders")) {
		t.Fatalf("no checkpoint was certified; events:\n%v", c.events)
	}
	for _, id := range []node.NodeID{1, 2, 3} {
		if pending, _ := node.Journaling(c.node(id).n, "orders"); pending {
			t.Errorf("%s is still journaling after the certificate", id)
		}
		if kept, err := node.CheckpointStateMatches(c.node(id).n, "orders"); kept && err != nil {
			t.Errorf("%s's checkpoint state: %v", id, err)
		}
	}
}
