package node

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// The deduplication window: a retry inside it is stored once, an ID
// published or settled longer ago is forgotten, a live message is never
// forgotten, and the window and what it holds survive a checkpoint.
func TestDedupWindow(t *testing.T) {
	sec := storySec
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 3, Seq: seq} }
	s, apply := windowedState(10 * time.Second)
	apply(record{typ: recordPublish, id: id(1), at: sec(1), payload: []byte("a")})
	apply(record{typ: recordPublish, id: id(3), at: sec(1), payload: []byte("c")}) // stays live
	apply(record{typ: recordPublish, id: id(1), at: sec(5), payload: []byte("retry")})
	if len(s.messages) != 2 {
		t.Fatalf("a retry inside the window was stored: %d live messages, want 2", len(s.messages))
	}
	apply(record{typ: recordSettle, id: id(1), at: sec(6)})
	if _, ok := s.known.settleIndex(id(1)); !ok {
		t.Fatal("a settle inside the window is not remembered")
	}
	apply(record{typ: recordPublish, id: id(2), at: sec(20), payload: []byte("b")})
	if e, _ := s.known.lookup(id(1)); e.published != 0 {
		t.Error("an ID published 19s ago is still remembered with a 10s window")
	}
	if _, ok := s.known.settleIndex(id(1)); ok {
		t.Error("an ID settled 14s ago is still remembered with a 10s window")
	}
	if _, ok := s.publishedIndex(id(3)); !ok {
		t.Error("a live message older than the window is no longer deduplicated")
	}
	enc := encodeState(s)
	d, err := decodeState("orders", enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeState(d), enc) || d.window != int64(10*time.Second) || d.clock != sec(20) {
		t.Fatalf("the window did not survive a checkpoint: window %d clock %d", d.window, d.clock)
	}
	apply(record{typ: recordPublish, id: id(1), at: sec(21), payload: []byte("again")})
	if m := s.messages[id(1)]; m == nil || string(m.payload) != "again" {
		t.Error("a publish of an ID forgotten by the window was not stored as a new message")
	}
	d.keepSum = true // as a build going on from a checkpoint does
	d.apply(s.applied, record{typ: recordPublish, id: id(1), at: sec(21), payload: []byte("again")})
	if !bytes.Equal(encodeState(d), encodeState(s)) {
		t.Error("the state decoded from a checkpoint went on differently from the original")
	}
}

// A log written before stamps (plain records, no window) keeps every ID,
// as it always did.
func TestUnstampedRecordsKeepEveryID(t *testing.T) {
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark})
	for i := range 100 {
		s.apply(uint64(i+2), record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: uint64(i)}})
	}
	if s.known.published != 100 || s.recent.len() != 0 {
		t.Fatalf("unstamped records: %d IDs remembered, %d stamped; want 100 and 0", s.known.published, s.recent.len())
	}
}

// Stamped records round-trip through their encoding, and plain ones still
// decode.
func TestStampedRecordCodec(t *testing.T) {
	for _, r := range []record{
		{typ: recordPublish, epoch: 2, id: wire.MessageID{Producer: 1, Seq: 9}, readyAt: 5, at: 77, payload: []byte("p")},
		{typ: recordSettle, epoch: 2, id: wire.MessageID{Producer: 1, Seq: 9}, at: 78},
		{typ: recordEpochMark, epoch: 3, at: 79, window: 120e9},
	} {
		got, err := decodeRecord(r.storedType(), encodeRecord(r))
		if err != nil || got.typ != r.typ || got.at != r.at || got.window != r.window || got.id != r.id {
			t.Errorf("%+v decoded as %+v (%v)", r, got, err)
		}
	}
	plain := wire.AppendUint64(nil, 4)
	plain = wire.AppendUint64(plain, 1)
	plain = wire.AppendUint64(plain, 2)
	if got, err := decodeRecord(recordSettle, plain); err != nil || got.typ != recordSettle || got.at != 0 {
		t.Errorf("a plain settle decoded as %+v (%v)", got, err)
	}
}

// A replica that never delivers settles every message while it sits in
// the ready heap; the heap must not keep them.
func TestSettledMessagesLeaveTheReadyHeap(t *testing.T) {
	s := builderState("orders")
	for i := range 100_000 {
		id := wire.MessageID{Producer: 1, Seq: uint64(i)}
		s.apply(uint64(2*i+1), record{typ: recordPublish, id: id, payload: []byte("x")})
		s.apply(uint64(2*i+2), record{typ: recordSettle, id: id})
	}
	if n := s.ready.Len(); n > 3000 {
		t.Fatalf("the ready heap holds %d entries after every message was settled", n)
	}
	s.apply(200_001, record{typ: recordPublish, id: wire.MessageID{Producer: 2, Seq: 1}})
	if m := s.popReady(); m == nil || m.id.Producer != 2 {
		t.Fatalf("after compaction the ready message is %v", m)
	}
}

// A burst leaves the window, and the state gives back the memory it took.
// Go's maps keep the room they grew to, so without remaking them a queue's
// memory would follow the largest window or backlog it ever held.
func TestAStateGivesBackTheRoomABurstTook(t *testing.T) {
	sec := storySec
	id := func(seq int) wire.MessageID { return wire.MessageID{Producer: 3, Seq: uint64(seq)} }
	s, apply := windowedState(10 * time.Second)
	for i := range 10 {
		apply(record{typ: recordPublish, id: id(i), at: sec(0), payload: []byte("before")}) // stays live
	}
	before := liveHeap()
	const burst = 100_000
	for i := 100; i < 100+burst; i++ {
		apply(record{typ: recordPublish, id: id(i), at: sec(1), payload: []byte("x")})
	}
	for i := 100; i < 100+burst; i++ {
		apply(record{typ: recordSettle, id: id(i), at: sec(2)})
	}
	apply(record{typ: recordPublish, id: id(1_000_000), at: sec(20), payload: []byte("after")})
	after := liveHeap()
	if s.known.published != 1 || s.known.settled != 0 || len(s.messages) != 11 {
		t.Fatalf("after the burst left the window: %d published, %d settled, %d live; want 1, 0, 11", s.known.published, s.known.settled, len(s.messages))
	}
	// The three maps took about 13 MB at the burst's peak.
	if grew := int64(after) - int64(before); grew > 4<<20 {
		t.Fatalf("the state still takes %d KiB more than before a burst that left its window", grew>>10)
	}
	for _, seq := range []int{0, 9, 1_000_000} {
		if _, ok := s.publishedIndex(id(seq)); !ok {
			t.Errorf("message %d is no longer deduplicated after its state's maps were remade", seq)
		}
	}
	runtime.KeepAlive(s)
}

// storySec is n seconds into a story, some time after the Unix epoch.
func storySec(n int) int64 { return int64(100+n) * int64(time.Second) }

// windowedState is a builder state whose deduplication window an epoch
// marker at second 0 sets, and a function applying its next records.
func windowedState(window time.Duration) (*queueState, func(record)) {
	s := builderState("orders")
	apply := func(r record) { s.apply(s.applied+1, r) }
	apply(record{typ: recordEpochMark, at: storySec(0), window: int64(window)})
	return s, apply
}

// liveHeap is the heap in use once the collector has run.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStateMemory measures what a state keeps for each publish and
// ack still in its deduplication window: the window's entry and the ID
// map's, in heap bytes after a collection. A two-minute window at
// 10,000 msg/s holds 1,200,000 of each, in every state that keeps one.
func BenchmarkStateMemory(b *testing.B) { benchWindowMemory(b, false) }

// BenchmarkOwnerStatesMemory is BenchmarkStateMemory for a replica that
// owns its queue: it keeps the state it serves from and, beside it, the
// base of its next checkpoint, a copy of that state made when it took the
// queue over, and both apply every record. It reports what the two keep
// between them for each publish and ack still in the window.
func BenchmarkOwnerStatesMemory(b *testing.B) { benchWindowMemory(b, true) }

// benchWindowMemory reports the heap a state (and, for an owner, the copy
// it serves from) keeps per windowed publish or ack, over 200,000 of each.
func benchWindowMemory(b *testing.B, owner bool) {
	const ids = 200_000
	for b.Loop() {
		before := liveHeap()
		base := builderState("orders")
		base.apply(1, record{typ: recordEpochMark, at: 1e18, window: int64(2 * time.Minute)})
		states := []*queueState{base}
		if owner {
			serving := base.clone()
			serving.fillMaps(-1)
			states = append(states, serving)
		}
		publishAndSettle(ids, states...)
		grew := float64(liveHeap()) - float64(before)
		b.ReportMetric(grew/(2*ids), "B/entry")
		runtime.KeepAlive(states)
	}
}

// publishAndSettle applies to each state, from index 2 on, the publish
// and the settle of ids messages of producer 1, one nanosecond apart.
func publishAndSettle(ids int, states ...*queueState) {
	payload := []byte("x")
	index := uint64(1)
	for i := range ids {
		id := wire.MessageID{Producer: 1, Seq: uint64(i)}
		publish := record{typ: recordPublish, id: id, at: 1e18 + int64(i), payload: payload}
		settle := record{typ: recordSettle, id: id, at: 1e18 + int64(i)}
		for _, r := range []record{publish, settle} {
			index++
			for _, s := range states {
				s.apply(index, r)
			}
		}
	}
}

// BenchmarkApplySteadyWindowUnordered is BenchmarkApplySteadyWindow with
// IDs a producer's run cannot hold: each producer's sequence numbers come
// in a shuffled order, so most IDs land among its strays, a map. It
// measures what a queue costs when its IDs do not follow the clients'
// numbering.
func BenchmarkApplySteadyWindowUnordered(b *testing.B) {
	// A multiplicative hash permutes the sequence numbers, so the IDs are
	// distinct but arrive in no order.
	benchSteadyWindow(b, func(n uint64) uint64 { return n * 0x9E3779B97F4A7C15 })
}

// BenchmarkApplySteadyWindow measures what a replica pays to apply one
// message's publish and settle once its deduplication window is full: a
// queue at 10,000 msg/s with a two-minute window remembers 1,200,000 of
// each, and every replica that keeps a checkpoint base applies them all.
// Most of the cost is the ID maps' cache misses, so the window is filled
// to that size before the timer starts.
func BenchmarkApplySteadyWindow(b *testing.B) {
	benchSteadyWindow(b, func(n uint64) uint64 { return n })
}

// benchSteadyWindow applies message after message, each published and
// settled, to a state with a two-minute window at 10,000 msg/s of stamp
// time, the nth message of producer 7 with sequence seq(n); it fills the
// window before the timer starts.
func benchSteadyWindow(b *testing.B, seq func(n uint64) uint64) {
	const rate = 10_000
	const step = int64(time.Second) / rate
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark, at: 1, window: int64(2 * time.Minute)})
	index, n, at := uint64(1), uint64(0), int64(1)
	payload := []byte("x")
	next := func() {
		id := wire.MessageID{Producer: 7, Seq: seq(n)}
		n++
		at += step
		index++
		s.apply(index, record{typ: recordPublish, id: id, at: at, payload: payload})
		index++
		s.apply(index, record{typ: recordSettle, id: id, at: at})
	}
	for range 2 * 60 * rate {
		next()
	}
	b.ResetTimer()
	for b.Loop() {
		next()
	}
}
