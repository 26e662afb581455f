package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// purgedRetryHistory is a queue purged by a confirmed purge at index 10,
// with one message, confirmed with index publishedAt and never
// delivered, that the final owner's checkpoint (cut 20) lists as
// published and settled.
func purgedRetryHistory(publishedAt uint64) *sim.History {
	m := wire.MessageID{Producer: 1, Seq: 1}
	token := wire.MessageID{Producer: 2, Seq: 1}
	return &sim.History{
		NodeEvents: []sim.NodeEvent{{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1}},
		Ops: []sim.OpRecord{
			{Client: 1, Kind: "publish", Queue: "q", ID: m, Invoked: 100 * time.Millisecond, Done: 900 * time.Millisecond,
				Outcome: sim.OutcomeOK, Index: publishedAt},
			{Client: 2, Kind: "purge", Queue: "q", ID: token, Invoked: 200 * time.Millisecond, Done: 800 * time.Millisecond,
				Outcome: sim.OutcomeOK, Index: 10, Replied: sim.Stamp{At: 800 * time.Millisecond, Seq: 1}},
		},
		Final: map[node.NodeID][]node.ReplicaDump{1: {{
			Queue:      "q",
			Checkpoint: &node.CheckpointDump{Cut: 20, Published: []wire.MessageID{m}, Settled: []wire.MessageID{m, token}},
		}}},
	}
}

// TestPurgeCheckersTakeAPurgesIndexOnAPublishAsItsBoundary: an owner
// answers a retried publish whose record left its deduplication window
// with the index of the settle it still remembers, so a publish confirmed
// with a confirmed purge's index was settled by that purge (seed 338067).
// A publish confirmed with any other index after the purge's is still
// judged by that index.
func TestPurgeCheckersTakeAPurgesIndexOnAPublishAsItsBoundary(t *testing.T) {
	ix := newIndex(purgedRetryHistory(10))
	if v := checkPurges(ix, nil); len(v) != 0 {
		t.Fatalf("a publish confirmed with the purge's index: %v, want no violation", v)
	}
	if v := checkTotalQueue(ix); len(v) != 0 {
		t.Fatalf("a publish confirmed with the purge's index: %v, want no violation", v)
	}
	ix = newIndex(purgedRetryHistory(11))
	if v := checkPurges(ix, nil); len(v) != 1 || v[0].Checker != "purge-cut" {
		t.Fatalf("a publish confirmed after the purge, then settled undelivered: %v, want one purge-cut violation", v)
	}
	if v := checkTotalQueue(ix); len(v) != 1 || v[0].Checker != "total-queue" {
		t.Fatalf("a publish confirmed after the purge, then settled undelivered: %v, want one total-queue violation", v)
	}
}
