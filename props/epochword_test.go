package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// sealedHistory is a run in which n2 reported durability to the owner of
// epoch 1, answered the seal of epoch 2's candidate, crashed, and reopened
// its replica in epoch reopened.
func sealedHistory(reopened uint64) *sim.History {
	ms := time.Millisecond
	return &sim.History{NodeEvents: []sim.NodeEvent{
		{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1},
		{At: 100 * ms, Node: 2, Name: event.QueueReported, Queue: "q", Epoch: 1, Value: 5},
		{At: 200 * ms, Node: 2, Name: event.QueueSealed, Queue: "q", Epoch: 2},
		{At: 300 * ms, Node: 2, Name: event.QueueOpen, Queue: "q", Epoch: reopened, Value: 5},
	}}
}

func TestEpochDurabilityFlagsAReopenBelowTheWordGiven(t *testing.T) {
	if v := checkEpochDurability(sealedHistory(2)); len(v) != 0 {
		t.Fatalf("the replica reopened in the epoch it was sealed at: %v, want none", v)
	}
	v := checkEpochDurability(sealedHistory(1))
	if len(v) != 1 || v[0].Checker != "epoch-durability" {
		t.Fatalf("the replica reopened below the epoch it answered a seal in: %v, want one epoch-durability violation", v)
	}
	// The word binds the node that gave it, and only until the metadata
	// replaces its replica.
	h := sealedHistory(1)
	h.NodeEvents[2].Node = 3
	if v := checkEpochDurability(h); len(v) != 0 {
		t.Fatalf("another node answered the seal: %v, want none", v)
	}
	h = sealedHistory(1)
	h.NodeEvents = append(h.NodeEvents[:3:3], sim.NodeEvent{At: 250 * time.Millisecond, Node: 2, Name: event.QueueReplaced, Queue: "q"},
		h.NodeEvents[3])
	if v := checkEpochDurability(h); len(v) != 0 {
		t.Fatalf("the metadata replaced the replica before it reopened: %v, want none", v)
	}
	// An owner is held to the epoch it activated in.
	h = sealedHistory(1)
	h.NodeEvents[2] = sim.NodeEvent{At: 200 * time.Millisecond, Node: 2, Name: event.QueueActive, Queue: "q", Epoch: 2}
	if v := checkEpochDurability(h); len(v) != 1 {
		t.Fatalf("an owner reopened below the epoch it activated in: %v, want one violation", v)
	}
}
