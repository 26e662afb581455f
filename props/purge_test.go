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

// A message published before a confirmed purge and sent after it breaks
// the purge, unless the final log holds a second publish record of its ID
// after the purge: a retry the deduplication window had forgotten, stored
// again as a new message, whose delivery the purge does not forbid (seed
// 881265). A second record before the purge excuses nothing.
func TestPurgeCheckerLetsANewMessageUnderAPurgedIDGo(t *testing.T) {
	m := wire.MessageID{Producer: 1, Seq: 1}
	token := wire.MessageID{Producer: 2, Seq: 1}
	history := func(entries ...node.LogEntry) *sim.History {
		return &sim.History{
			NodeEvents: []sim.NodeEvent{{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1}},
			Ops: []sim.OpRecord{
				{Client: 1, Kind: "publish", Queue: "q", ID: m, Invoked: 100 * time.Millisecond, Done: 900 * time.Millisecond,
					Outcome: sim.OutcomeOK, Index: 5},
				{Client: 2, Kind: "purge", Queue: "q", ID: token, Invoked: 200 * time.Millisecond, Done: 800 * time.Millisecond,
					Outcome: sim.OutcomeOK, Index: 10, Replied: sim.Stamp{At: 800 * time.Millisecond, Seq: 1}},
			},
			Sends: []sim.DeliveryRecord{{Client: 3, Queue: "q", ID: m, Lease: 1, From: 1, Sent: sim.Stamp{At: 950 * time.Millisecond, Seq: 2}}},
			Final: map[node.NodeID][]node.ReplicaDump{1: {{Queue: "q", Entries: entries}}},
		}
	}
	first := node.LogEntry{Index: 5, Type: "publish", ID: m}
	purge := node.LogEntry{Index: 10, Type: "purge", Through: 9}
	if v := checkPurges(newIndex(history(first, purge)), nil); len(v) != 1 || v[0].Checker != "purged-stays-purged" {
		t.Fatalf("a purged message sent after the purge: %v, want one purged-stays-purged violation", v)
	}
	again := node.LogEntry{Index: 12, Type: "publish", ID: m}
	if v := checkPurges(newIndex(history(first, purge, again)), nil); len(v) != 0 {
		t.Fatalf("a send of the ID stored again after the purge: %v, want none", v)
	}
	early := node.LogEntry{Index: 7, Type: "publish", ID: m}
	if v := checkPurges(newIndex(history(first, early, purge)), nil); len(v) != 1 {
		t.Fatalf("a second publish record before the purge excuses nothing: %v", v)
	}
}
