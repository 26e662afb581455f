package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// moveHistory is a run in which n1 owns q and n2 owns its dead-letter
// queue dl: n1 sent m at 100ms, asked dl to store it at 300ms, and at the
// end dl's log holds m once and q's log settles it.
func moveHistory() *sim.History {
	m := wire.MessageID{Producer: 1, Seq: 1}
	return &sim.History{
		NodeEvents: []sim.NodeEvent{
			{At: 0, Node: 1, Name: event.QueueActive, Queue: "q", Epoch: 1},
			{At: 0, Node: 2, Name: event.QueueActive, Queue: "dl", Epoch: 1},
		},
		Ops: []sim.OpRecord{{Client: 2, Kind: "publish", Queue: "q", ID: m, Outcome: sim.OutcomeOK}},
		Sends: []sim.DeliveryRecord{
			{Client: 3, Queue: "q", ID: m, Lease: 1, From: 1, Sent: sim.Stamp{At: 100 * time.Millisecond, Seq: 1}},
		},
		DeadLetters: []sim.DeadLetterRecord{{At: 300 * time.Millisecond, Node: 1, Queue: "q", Target: "dl", ID: m}},
		Final: map[node.NodeID][]node.ReplicaDump{
			1: {{Queue: "q", Entries: []node.LogEntry{
				{Index: 2, Type: "publish", ID: m}, {Index: 3, Type: "dead-letter", ID: m}, {Index: 4, Type: "settle", ID: m}}}},
			2: {{Queue: "dl", Entries: []node.LogEntry{{Index: 2, Type: "publish", ID: m}}}},
		},
	}
}

// The dead-letter checker passes a clean move and flags each way a move
// can go wrong: a send from the source after the ask, a second copy in
// the dead-letter queue, a message neither queue holds, and a move not
// finished by the end of the run.
func TestDeadLetterCheckerFlagsEachBrokenMove(t *testing.T) {
	if v := checkDeadLetters(newIndex(moveHistory())); len(v) != 0 {
		t.Fatalf("a clean move: %v", v)
	}
	m := wire.MessageID{Producer: 1, Seq: 1}
	for _, c := range []struct {
		name   string
		break_ func(h *sim.History)
		want   sim.ViolationKind
	}{
		{"sent from the source after the ask", func(h *sim.History) {
			h.Sends = append(h.Sends, sim.DeliveryRecord{Client: 3, Queue: "q", ID: m, Lease: 2, From: 1, Sent: sim.Stamp{At: 400 * time.Millisecond, Seq: 2}})
		}, sim.Safety},
		{"stored twice", func(h *sim.History) {
			h.Final[2][0].Entries = append(h.Final[2][0].Entries, node.LogEntry{Index: 3, Type: "publish", ID: m})
		}, sim.Safety},
		{"settled, held by neither", func(h *sim.History) { h.Final[2][0].Entries = nil }, sim.Safety},
		{"still moving at the end", func(h *sim.History) {
			h.Final[2][0].Entries = nil
			h.Final[1][0].Entries = h.Final[1][0].Entries[:2]
		}, sim.Liveness},
	} {
		h := moveHistory()
		c.break_(h)
		v := checkDeadLetters(newIndex(h))
		if len(v) != 1 || v[0].Checker != "dead-letter" || v[0].Kind != c.want {
			t.Errorf("%s: %v, want one %v dead-letter finding", c.name, v, c.want)
		}
	}
	// A delivery from the dead-letter queue after the ask is what a move
	// is for, and counts as held.
	h := moveHistory()
	h.Final[2][0].Entries = nil
	h.Deliveries = append(h.Deliveries, sim.DeliveryRecord{Client: 3, Queue: "dl", ID: m, Lease: 1, From: 2, Sent: sim.Stamp{At: 500 * time.Millisecond, Seq: 3}})
	h.Sends = append(h.Sends, h.Deliveries[0])
	if v := checkDeadLetters(newIndex(h)); len(v) != 0 {
		t.Fatalf("a move delivered from the dead-letter queue: %v", v)
	}
}

// A retry of the moved message's publish that came after the
// deduplication window forgot its ID is stored again in the source log:
// a new message under the same ID, whose delivery is no resend of the
// moved copy (seed 483990). Without that second publish record, the same
// send is flagged.
func TestDeadLetterCheckerLetsANewMessageUnderAnOldIDGo(t *testing.T) {
	m := wire.MessageID{Producer: 1, Seq: 1}
	resend := sim.DeliveryRecord{Client: 3, Queue: "q", ID: m, Lease: 2, From: 1, Sent: sim.Stamp{At: 900 * time.Millisecond, Seq: 2}}
	h := moveHistory()
	h.Sends = append(h.Sends, resend)
	h.Final[1][0].Entries = append(h.Final[1][0].Entries, node.LogEntry{Index: 9, Type: "publish", ID: m})
	if v := checkDeadLetters(newIndex(h)); len(v) != 0 {
		t.Fatalf("a send of the ID stored again after the move: %v", v)
	}
	h = moveHistory()
	h.Sends = append(h.Sends, resend)
	h.Final[1][0].Entries = append([]node.LogEntry{{Index: 1, Type: "publish", ID: m}}, h.Final[1][0].Entries...)
	if v := checkDeadLetters(newIndex(h)); len(v) != 1 {
		t.Fatalf("a second publish record before the move excuses nothing: %v", v)
	}
}
