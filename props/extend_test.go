package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// extendHistory is a run in which n1 (epoch 1) sent m under lease 1 at
// 100ms, the consumer extended that lease at 150ms by one second, and n1
// sent m again under lease 2 at resend.
func extendHistory(resend time.Duration) *sim.History {
	m := wire.MessageID{Producer: 1, Seq: 1}
	return &sim.History{
		NodeEvents: []sim.NodeEvent{{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1}},
		Ops: []sim.OpRecord{
			{Client: 2, Kind: "publish", Queue: "q", ID: m, Outcome: sim.OutcomeOK},
			{Client: 3, Kind: "extend", Queue: "q", ID: m, Invoked: 150 * time.Millisecond, Outcome: sim.OutcomeOK,
				Lease: 1, From: 1, For: time.Second},
		},
		Sends: []sim.DeliveryRecord{
			{Client: 3, Queue: "q", ID: m, Lease: 1, From: 1, Sent: sim.Stamp{At: 100 * time.Millisecond, Seq: 1}},
			{Client: 3, Queue: "q", ID: m, Lease: 2, From: 1, Sent: sim.Stamp{At: resend, Seq: 2}},
		},
	}
}

func TestExtendedLeaseCheckerFlagsAnEarlyResendOnly(t *testing.T) {
	if v := checkExtendedLeases(newIndex(extendHistory(900 * time.Millisecond))); len(v) != 1 || v[0].Checker != "extended-lease" {
		t.Fatalf("a resend inside the extension: %v, want one extended-lease violation", v)
	}
	if v := checkExtendedLeases(newIndex(extendHistory(1200 * time.Millisecond))); len(v) != 0 {
		t.Fatalf("a resend after the extension ran out: %v, want none", v)
	}
	excuses := []struct {
		name   string
		excuse func(h *sim.History)
	}{
		{"a nack", func(h *sim.History) {
			h.Ops = append(h.Ops, sim.OpRecord{Client: 3, Kind: "nack", Queue: "q", ID: h.Ops[1].ID, Invoked: 400 * time.Millisecond})
		}},
		{"a consumer restart", func(h *sim.History) {
			h.ClientRestarts = append(h.ClientRestarts, sim.ClientRestart{At: 400 * time.Millisecond, Client: 3})
		}},
		{"an owner crash", func(h *sim.History) {
			h.Crashed = append(h.Crashed, sim.CrashRecord{At: 400 * time.Millisecond, Node: 1})
		}},
		{"a forward clock jump", func(h *sim.History) {
			h.ClockJumps = append(h.ClockJumps, sim.ClockJump{At: 400 * time.Millisecond, Node: 1, By: time.Second})
		}},
		{"a lost quorum", func(h *sim.History) {
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 400 * time.Millisecond, Node: 1, Name: event.QueueQuorumLost, Queue: "q", Epoch: 1})
		}},
		{"another owner", func(h *sim.History) { h.Sends[1].From = 2 }},
		{"a new epoch", func(h *sim.History) {
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 800 * time.Millisecond, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 2})
		}},
		{"an extension that failed", func(h *sim.History) { h.Ops[1].Outcome = sim.OutcomeFailed }},
		{"a second, shorter extension of the lease", func(h *sim.History) {
			// The network handed the consumer the delivery twice, and it
			// extended the lease again, for less: the owner set the end
			// to the later request's. Its outcome need not be known.
			h.Ops = append(h.Ops, sim.OpRecord{Client: 3, Kind: "extend", Queue: "q", ID: h.Ops[1].ID, Invoked: 160 * time.Millisecond,
				Outcome: sim.OutcomeUnknown, Lease: 1, From: 1, For: 300 * time.Millisecond})
		}},
	}
	for _, e := range excuses {
		h := extendHistory(900 * time.Millisecond)
		e.excuse(h)
		if v := checkExtendedLeases(newIndex(h)); len(v) != 0 {
			t.Errorf("an early resend after %s: %v, want none", e.name, v)
		}
	}
	h := extendHistory(900 * time.Millisecond)
	h.Ops = append(h.Ops, sim.OpRecord{Client: 3, Kind: "extend", Queue: "q", ID: h.Ops[1].ID, Invoked: 160 * time.Millisecond,
		Outcome: sim.OutcomeOK, Lease: 7, From: 1, For: 300 * time.Millisecond})
	if v := checkExtendedLeases(newIndex(h)); len(v) != 1 {
		t.Fatalf("an extension of another lease excused an early resend: %v", v)
	}
	// An unsubscribe ends no extended lease, the consumer's own or
	// another client's.
	for _, client := range []int{3, 4} {
		h = extendHistory(900 * time.Millisecond)
		h.Ops = append(h.Ops, sim.OpRecord{Client: client, Kind: "unsubscribe", Queue: "q", Invoked: 400 * time.Millisecond})
		if v := checkExtendedLeases(newIndex(h)); len(v) != 1 {
			t.Fatalf("an unsubscribe by client %d excused an early resend: %v", client, v)
		}
	}
	h = extendHistory(900 * time.Millisecond)
	h.ClockJumps = append(h.ClockJumps, sim.ClockJump{At: 400 * time.Millisecond, Node: 1, By: -time.Second})
	if v := checkExtendedLeases(newIndex(h)); len(v) != 1 {
		t.Fatalf("a backward clock jump, which only lengthens a lease, excused an early resend: %v", v)
	}
}
