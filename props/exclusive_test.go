package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// handoverHistory is a run in which n1 (epoch 1) sent m at 100ms and n2
// activated epoch 2 at 200ms and sent m at 250ms; n1 sends another
// message, o, at oldLast.
func handoverHistory(oldLast time.Duration) *sim.History {
	m, o := wire.MessageID{Producer: 1, Seq: 1}, wire.MessageID{Producer: 1, Seq: 2}
	ms := time.Millisecond
	return &sim.History{
		NodeEvents: []sim.NodeEvent{
			{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1},
			{At: 200 * ms, Node: 2, Name: event.QueueActive, Queue: "q", Epoch: 2},
		},
		Ops: []sim.OpRecord{
			{Client: 3, Kind: "publish", Queue: "q", ID: m, Outcome: sim.OutcomeOK, Done: 50 * ms},
			{Client: 3, Kind: "publish", Queue: "q", ID: o, Outcome: sim.OutcomeOK, Done: 60 * ms},
		},
		Sends: sortedSends(
			sim.DeliveryRecord{Client: 4, Queue: "q", ID: m, Lease: 1, From: 1, Sent: sim.Stamp{At: 100 * ms, Seq: 1}},
			sim.DeliveryRecord{Client: 5, Queue: "q", ID: m, Lease: 1, From: 2, Sent: sim.Stamp{At: 250 * ms, Seq: 3}},
			sim.DeliveryRecord{Client: 4, Queue: "q", ID: o, Lease: 2, From: 1, Sent: sim.Stamp{At: oldLast, Seq: 2}},
		),
	}
}

// sortedSends puts sends in send order, as the history keeps them.
func sortedSends(ds ...sim.DeliveryRecord) []sim.DeliveryRecord {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].Sent.Before(ds[j-1].Sent); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return ds
}

func TestExclusiveDeliveryFlagsOverlappingWindowsOnly(t *testing.T) {
	ms := time.Millisecond
	if v := checkExclusiveDelivery(newIndex(handoverHistory(150*ms)), nil); len(v) != 0 {
		t.Fatalf("the old owner's last send came before the new owner's first: %v, want none", v)
	}
	v := checkExclusiveDelivery(newIndex(handoverHistory(260*ms)), nil)
	if len(v) != 1 || v[0].Checker != "exclusive-delivery" {
		t.Fatalf("the old owner sent after the new owner sent a message it took over: %v, want one exclusive-delivery violation", v)
	}
	if v := checkExclusiveDelivery(newIndex(handoverHistory(260*ms)), map[string]bool{"q": true}); len(v) != 0 {
		t.Fatalf("an owner-only queue, whose old owner needs no quorum: %v, want none", v)
	}
	// What the new owner sent first was published in its own epoch: it
	// may go out at once, while the old owner's window is still open.
	h := handoverHistory(260 * ms)
	fresh := wire.MessageID{Producer: 2, Seq: 1}
	h.Ops = append(h.Ops, sim.OpRecord{Client: 3, Kind: "publish", Queue: "q", ID: fresh, Outcome: sim.OutcomeOK, Done: 220 * ms})
	h.Sends[1].ID = fresh
	h.Sends = append(h.Sends, sim.DeliveryRecord{Client: 5, Queue: "q", ID: h.Sends[0].ID, Lease: 2, From: 2, Sent: sim.Stamp{At: 270 * ms, Seq: 4}})
	if v := checkExclusiveDelivery(newIndex(h), nil); len(v) != 0 {
		t.Fatalf("the new owner's early send was of a message published in its epoch: %v, want none", v)
	}
	// A message confirmed before the new owner activated was taken over,
	// even if no older owner sent it.
	h = handoverHistory(260 * ms)
	h.Sends = h.Sends[1:]
	if v := checkExclusiveDelivery(newIndex(h), nil); len(v) != 1 {
		t.Fatalf("the new owner sent a message confirmed before it activated, the old owner sent later: %v, want one", v)
	}
}
