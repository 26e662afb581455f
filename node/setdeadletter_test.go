package node

import (
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// Applying a set-dead-letter command changes the incarnation it names:
// a limit given, changed and removed; a setting that breaks the rules,
// another incarnation or a deleted queue changes nothing, and the bad
// setting is reported as refused so the requester hears why.
func TestSetDeadLetterAppliesOnlyGoodSettingsToItsIncarnation(t *testing.T) {
	s := activeQueue()
	set := func(inc uint64, dead string, limit uint32) result {
		return applyAll(s, command{kind: cmdSetDeadLetter, name: "q", inc: inc, deadLetter: dead, maxDeliveries: limit})
	}
	has := func(dead string, limit uint32) {
		t.Helper()
		if q := s.queues["q"]; q.DeadLetter != dead || q.MaxDeliveries != limit {
			t.Fatalf("queue has dead-letter %q after %d, want %q after %d", q.DeadLetter, q.MaxDeliveries, dead, limit)
		}
	}
	for _, step := range []struct {
		dead  string
		limit uint32
	}{{"parked", 3}, {"other", 1}, {"other", 1}, {"", 0}} {
		if res := set(7, step.dead, step.limit); !res.ok {
			t.Fatalf("setting %q after %d: %+v", step.dead, step.limit, res)
		}
		has(step.dead, step.limit)
	}
	set(7, "parked", 2)
	for _, bad := range []struct {
		dead  string
		limit uint32
	}{{"q", 2}, {"", 2}, {"parked", 0}, {"parked", wire.MaxDeliveriesLimit + 1}, {".hidden", 2}} {
		if res := set(7, bad.dead, bad.limit); res.ok || !res.refused {
			t.Fatalf("setting %q after %d applied: %+v", bad.dead, bad.limit, res)
		}
		has("parked", 2)
	}
	r := newQueueCmd("r")
	r.queue.DeadLetter, r.queue.MaxDeliveries = "s", 1
	s2 := newQueueCmd("s")
	s2.from = proposalID{1, 2}
	applyAll(s, r, s2)
	if res := applyAll(s, command{kind: cmdSetDeadLetter, name: "s", inc: 7, deadLetter: "q", maxDeliveries: 1}); !res.ok {
		t.Fatalf("a chain s to q: %+v", res)
	}
	if res := set(7, "r", 2); res.ok || !res.refused {
		t.Fatalf("a ring q, r, s, q applied: %+v", res)
	}
	has("parked", 2)
	if res := set(99, "other", 5); res.ok || res.detail != noSuchQueue {
		t.Fatalf("a change for another incarnation: %+v", res)
	}
	applyAll(s, command{kind: cmdDelete, name: "q", inc: 7})
	if res := set(7, "other", 5); res.ok || res.detail != noSuchQueue {
		t.Fatalf("a change for a deleted queue: %+v", res)
	}
}

// A dead-letter record names the queue its move goes to, and a
// checkpoint keeps the name with the dead message; a record from before
// records named it decodes with none, as does a version 4 state.
func TestAMovesDeadLetterQueueSurvivesRecordsAndCheckpoints(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }
	rec := record{typ: recordDeadLetter, epoch: 3, id: id(1), at: 11, to: "parked"}
	body := encodeRecord(rec)
	if got, err := decodeRecord(recordDeadLetter, body); err != nil || got.to != "parked" || got.id != id(1) {
		t.Fatalf("a dead-letter record read back as %+v, %v", got, err)
	}
	old := encodeRecord(record{typ: recordDeadLetter, epoch: 3, id: id(1), at: 11})
	if got, err := decodeRecord(recordDeadLetter, old); err != nil || got.to != "" || len(old) >= len(body) {
		t.Fatalf("a record without a queue read back as %+v, %v", got, err)
	}

	s := builderState("orders")
	for i, r := range []record{
		{typ: recordCreate, policy: wire.PolicyMajority, members: []NodeID{1, 2, 3}},
		{typ: recordPublish, id: id(1), payload: []byte("a")},
		{typ: recordPublish, id: id(2), payload: []byte("b")},
		{typ: recordPublish, id: id(3), payload: []byte("c")},
		{typ: recordDeadLetter, id: id(1), to: "parked"},
		{typ: recordDeadLetter, id: id(2)},
	} {
		s.apply(uint64(i+1), r)
	}
	d, err := decodeState("orders", encodeState(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		seq  uint64
		dead bool
		to   string
	}{{1, true, "parked"}, {2, true, ""}, {3, false, ""}} {
		if m := d.messages[id(want.seq)]; m == nil || m.dead != want.dead || m.deadTo != want.to {
			t.Fatalf("message %d decoded as %+v, want dead %t to %q", want.seq, m, want.dead, want.to)
		}
	}
	if d.dead != 2 {
		t.Fatalf("the decoded state counts %d dead messages, want 2", d.dead)
	}
}
