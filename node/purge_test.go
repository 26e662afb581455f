package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// purgeRecords publish ready and delayed messages, settle one, purge
// everything published by then, and publish two more after the purge.
func purgeRecords() []record {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 3, Seq: seq} }
	return []record{
		{typ: recordEpochMark, at: 1, window: int64(time.Minute)},
		{typ: recordPublish, id: id(1), at: 2, payload: []byte("a")},
		{typ: recordPublish, id: id(2), at: 3, payload: []byte("b"), readyAt: 1e12},
		{typ: recordPublish, id: id(3), at: 4, payload: []byte("c")},
		{typ: recordSettles, ids: []wire.MessageID{id(1)}, at: 5},
		{typ: recordPublish, id: id(4), at: 6, payload: []byte("d")},
		{typ: recordPurge, through: 6, at: 7},
		{typ: recordPublish, id: id(5), at: 8, payload: []byte("e")},
		{typ: recordPublish, id: id(6), at: 9, payload: []byte("f"), readyAt: 2e12},
	}
}

// A purge record settles every message live where it applies, ready and
// delayed alike, and none published after it; a replica that replays the
// log and one that starts from a checkpoint taken after the purge reach
// the same state, byte for byte.
func TestAPurgeRecordSettlesWhatWasLiveAndReplaysAlike(t *testing.T) {
	recs := purgeRecords()
	replayed := builderState("orders")
	for i, r := range recs {
		body := encodeRecord(r)
		back, err := decodeRecord(r.storedType(), body)
		if err != nil {
			t.Fatalf("record %d does not decode: %v", i+1, err)
		}
		replayed.apply(uint64(i+1), back)
	}
	if len(replayed.messages) != 2 || replayed.messages[wire.MessageID{Producer: 3, Seq: 5}] == nil ||
		replayed.messages[wire.MessageID{Producer: 3, Seq: 6}] == nil {
		t.Fatalf("after the purge the queue holds %v, want the two messages published after it", replayed.messages)
	}
	for seq := uint64(2); seq <= 4; seq++ {
		if at, _ := replayed.known.settleIndex(wire.MessageID{Producer: 3, Seq: seq}); at != 7 {
			t.Fatalf("message %d is settled at %d, want by the purge at 7", seq, at)
		}
	}
	if due, ok := replayed.nextDue(); !ok || due != 2e12 {
		t.Fatalf("the next delayed message is due at %d (%t), want the one published after the purge", due, ok)
	}
	if m := replayed.popReady(); m == nil || m.id.Seq != 5 {
		t.Fatalf("the first ready message is %v, want the fifth", m)
	}

	// A checkpoint cut right after the purge, then the rest of the log.
	cut := builderState("orders")
	for i, r := range recs[:7] {
		cut.apply(uint64(i+1), r)
	}
	fromCkpt, err := decodeState("orders", encodeState(cut), nil)
	if err != nil {
		t.Fatal(err)
	}
	fromCkpt.keepSum = true
	whole := builderState("orders")
	for i, r := range recs {
		whole.apply(uint64(i+1), r)
		if i >= 7 {
			fromCkpt.apply(uint64(i+1), r)
		}
	}
	if a, b := encodeState(whole), encodeState(fromCkpt); !bytes.Equal(a, b) || stateDigest(whole) != stateDigest(fromCkpt) {
		t.Fatalf("the replayed state and the one built on a checkpoint differ:\n%x\n%x", a, b)
	}
}

// A promote record releases the delayed messages due by its clock
// boundary, the one due at the boundary itself included, and no later
// one: a replica that replays it, and the owner that wrote it at that
// moment, agree on which messages are ready.
func TestAPromoteReleasesWhatIsDueByItsBoundary(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 4, Seq: seq} }
	s := builderState("orders")
	for i, r := range []record{
		{typ: recordEpochMark, at: 1, window: int64(time.Minute)},
		{typ: recordPublish, id: id(1), at: 2, payload: []byte("a"), readyAt: 1000},
		{typ: recordPublish, id: id(2), at: 3, payload: []byte("b"), readyAt: 2000},
		{typ: recordPublish, id: id(3), at: 4, payload: []byte("c"), readyAt: 2001},
		{typ: recordPromote, until: 2000},
	} {
		s.apply(uint64(i+1), r)
	}
	var ready []uint64
	for m := s.popReady(); m != nil; m = s.popReady() {
		ready = append(ready, m.id.Seq)
	}
	if len(ready) != 2 || ready[0] != 1 || ready[1] != 2 {
		t.Fatalf("the promote to 2000 made ready %v, want messages 1 and 2 (due at 1000 and 2000)", ready)
	}
	if due, ok := s.nextDue(); !ok || due != 2001 {
		t.Fatalf("the next delayed message is due at %d (%t), want 2001", due, ok)
	}
}

// A state that has not learned its deduplication window (no epoch mark
// applied yet, as in a state decoded from before windows were written)
// forgets no ID, however far its clock moves: a window of zero is unknown,
// not empty.
func TestAStateWithoutAWindowForgetsNothing(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 5, Seq: seq} }
	s := builderState("orders")
	for i, r := range []record{
		{typ: recordPublish, id: id(1), at: 2, payload: []byte("a")},
		{typ: recordSettles, ids: []wire.MessageID{id(1)}, at: 3},
		{typ: recordPublish, id: id(2), at: int64(time.Hour), payload: []byte("b")},
	} {
		s.apply(uint64(i+1), r)
	}
	if at, ok := s.publishedIndex(id(1)); !ok || at != 1 {
		t.Fatalf("a state without a window forgot message 1 an hour on (index %d, %t)", at, ok)
	}
}
