package node

import (
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// A follower keeps the latest count it heard per message, drops the
// counts of what a settle, a dead-letter move or a purge takes out of the
// queue, answers a seal with what is left in ID order, and keeps no new
// message past its bound.
func TestAFollowerKeepsTheCountsItHears(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }
	var f followerState
	f.hearCounts([]wire.DeliveryCount{{ID: id(3), Count: 1}, {ID: id(1), Count: 2}, {ID: id(2), Count: 1}, {ID: id(4), Count: 5}})
	f.hearCounts([]wire.DeliveryCount{{ID: id(3), Count: 2}, {ID: id(1), Count: 1}}) // 1 was handed back unworked
	f.forgetCounts(record{typ: recordSettle, id: id(2)})
	f.forgetCounts(record{typ: recordDeadLetter, id: id(4)})
	got := f.heardCounts()
	want := []wire.DeliveryCount{{ID: id(1), Count: 1}, {ID: id(3), Count: 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the follower answers a seal with %v, want %v", got, want)
	}
	f.forgetCounts(record{typ: recordSettles, ids: []wire.MessageID{id(1), id(9)}})
	if got := f.heardCounts(); len(got) != 1 || got[0].ID != id(3) {
		t.Fatalf("after a batch settle the follower keeps %v, want only %s", got, id(3))
	}
	f.forgetCounts(record{typ: recordPurge, through: 10})
	if got := f.heardCounts(); got != nil {
		t.Fatalf("after a purge the follower keeps %v, want none", got)
	}

	for seq := range uint64(countHintsMax) {
		f.hearCounts([]wire.DeliveryCount{{ID: id(seq), Count: 1}})
	}
	f.hearCounts([]wire.DeliveryCount{{ID: id(countHintsMax), Count: 1}, {ID: id(0), Count: 4}})
	if len(f.counts) != countHintsMax || f.counts[id(0)] != 4 {
		t.Fatalf("at its bound the follower keeps %d counts (want %d) and %d for a message it held (want 4)", len(f.counts), countHintsMax, f.counts[id(0)])
	}
	if got := f.heardCounts(); len(got) != wire.MaxDeliveryCounts {
		t.Fatalf("a seal answer carries %d counts, want at most %d", len(got), wire.MaxDeliveryCounts)
	}
}

// A candidate takes the highest count any sealed replica reported for a
// message, its own included.
func TestACandidateTakesTheHighestCount(t *testing.T) {
	id := wire.MessageID{Producer: 7, Seq: 1}
	o := &ownerState{}
	o.carryCounts([]wire.DeliveryCount{{ID: id, Count: 2}})
	o.carryCounts([]wire.DeliveryCount{{ID: id, Count: 3}})
	o.carryCounts([]wire.DeliveryCount{{ID: id, Count: 1}})
	if o.carried[id] != 3 {
		t.Fatalf("the candidate carries %d, want the highest reported, 3", o.carried[id])
	}
}
