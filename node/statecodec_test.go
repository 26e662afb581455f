package node

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cairnmq/cairn/wire"
)

// A state decoded from a checkpoint must serve exactly as the state that
// was encoded: the same bytes when encoded again, the same messages ready
// in the same order, the same delayed ones due at the same times.
func TestStateCodecRoundTrip(t *testing.T) {
	s := builderState("orders")
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }
	recs := []record{
		{typ: recordCreate, policy: wire.PolicyMajority, members: []NodeID{1, 2, 3}},
		{typ: recordPublish, id: id(1), payload: []byte("a")},
		{typ: recordPublish, id: id(2), payload: []byte("b"), readyAt: 500},
		{typ: recordPublish, id: id(3), payload: []byte("c")},
		{typ: recordPublish, id: id(4), payload: []byte("d"), readyAt: 100},
		{typ: recordSettle, id: id(1)},
		{typ: recordPromote, until: 200},
		{typ: recordPublish, id: id(5), payload: nil},
		{typ: recordPublish, id: id(3), payload: []byte("duplicate")},
	}
	for i, r := range recs {
		s.apply(uint64(i+1), r)
	}
	enc := encodeState(s)
	d, err := decodeState("orders", enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again := encodeState(d); !bytes.Equal(enc, again) {
		t.Fatalf("re-encoding a decoded state changed it:\n%x\n%x", enc, again)
	}
	if due, ok := d.nextDue(); !ok || due != 500 {
		t.Fatalf("decoded state's next due time is %d (%t), want 500", due, ok)
	}
	var want, got []wire.MessageID
	for m := s.popReady(); m != nil; m = s.popReady() {
		want = append(want, m.id)
	}
	for m := d.popReady(); m != nil; m = d.popReady() {
		got = append(got, m.id)
	}
	if len(want) != 3 || len(got) != len(want) {
		t.Fatalf("ready order: original %v, decoded %v; want three messages each", want, got)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("ready order: original %v, decoded %v", want, got)
		}
	}
}

// A checkpoint that does not decode is refused, never half-used.
func TestStateCodecRefusesDamage(t *testing.T) {
	s := builderState("orders")
	s.apply(1, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: 1}, payload: []byte("x")})
	enc := encodeState(s)
	for _, bad := range [][]byte{enc[:len(enc)-1], append(bytes.Clone(enc), 0), append([]byte{9}, enc[1:]...)} {
		if _, err := decodeState("orders", bad, nil); err == nil {
			t.Errorf("decoded damaged state %x without an error", bad)
		}
	}
}

// BenchmarkEncodeWindowState encodes the state a queue carries at 1,000
// msg/s with everything acked and a two-minute window: no live message,
// 120,000 IDs published and 120,000 settled within the window.
func BenchmarkEncodeWindowState(b *testing.B) {
	s := windowState()
	b.ReportAllocs()
	for b.Loop() {
		enc := encodeState(s)
		stateDigest(s)
		b.SetBytes(int64(len(enc)))
	}
}

// BenchmarkDecodeWindowState decodes the state of
// BenchmarkEncodeWindowState, as a restarting replica or a new owner does
// with its checkpoint.
func BenchmarkDecodeWindowState(b *testing.B) {
	enc := encodeState(windowState())
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := decodeState("orders", enc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// windowState is the state a queue carries at 1,000 msg/s with
// everything acked and a two-minute window: no live message, 120,000 IDs
// published and 120,000 settled within the window.
func windowState() *queueState {
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark, at: 1e18, window: int64(2 * 60e9)})
	index := uint64(1)
	for i := range 120_000 {
		id := wire.MessageID{Producer: 1, Seq: uint64(i)}
		at := int64(1e18) + int64(i)*1e6
		index++
		s.apply(index, record{typ: recordPublish, id: id, at: at, payload: []byte("x")})
		index++
		s.apply(index, record{typ: recordSettle, id: id, at: at})
	}
	return s
}

// builderState is a fresh state that keeps its window digest, as the
// states checkpoints are built from do.
func builderState(name string) *queueState {
	s := newQueueState(name)
	s.keepSum = true
	return s
}

// A state that did not keep its window digest while IDs came and went
// (an owner's live state) is never encoded: its digest would be wrong.
func TestAStateWithoutItsWindowDigestIsNotEncoded(t *testing.T) {
	s := newQueueState("orders")
	s.apply(1, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: 1}, at: 1, payload: []byte("x")})
	defer func() {
		if recover() == nil {
			t.Fatal("a state whose window digest was not kept was encoded")
		}
	}()
	encodeState(s)
}

// A state encoded a few messages at a time, as a checkpoint build does,
// gives the same bytes and digest as encoding it at once, whatever the
// step.
func TestAStateEncodedInStepsMatchesItsEncodingAtOnce(t *testing.T) {
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark, at: 1, window: int64(time.Minute)})
	for i := uint64(2); i < 40; i++ {
		s.apply(i, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: i}, at: int64(i), payload: bytes.Repeat([]byte{byte(i)}, int(i))})
	}
	s.apply(40, record{typ: recordSettles, ids: []wire.MessageID{{Producer: 1, Seq: 3}, {Producer: 1, Seq: 9}}, at: 40})
	want, wantDigest := encodeStateJournaled(s), stateDigest(s)
	for _, budget := range []int{1, 50, 400, 1 << 20} {
		e := newStateEncoding(s)
		steps := 1
		for !e.step(budget) {
			steps++
		}
		if !bytes.Equal(e.buf, want) || e.sum() != wantDigest {
			t.Fatalf("budget %d: %d steps gave %d bytes (digest %x), want %d bytes (digest %x)", budget, steps, len(e.buf), e.sum(), len(want), wantDigest)
		}
		if budget == 1 && steps != len(s.messages) {
			t.Fatalf("a budget of one byte took %d steps for %d messages, want one per message", steps, len(s.messages))
		}
	}
}

// A window entry packs its settle flag into its index's top bit: 32 bytes
// an entry, and a busy queue's window holds millions. What it packs reads
// back, and an entry on disk naming an index that would collide with the
// flag is refused rather than read as a settle.
func TestAWindowEntryTakes32BytesAndReadsBack(t *testing.T) {
	if size := unsafe.Sizeof(recentID{}); size != 32 {
		t.Fatalf("a window entry takes %d bytes, want 32", size)
	}
	id := wire.MessageID{Producer: 7, Seq: 9}
	for _, settled := range []bool{false, true} {
		e := newRecentID(id, settledBit-1, -5, settled)
		back, err := decodeRecent(wire.NewDecoder(appendRecent(nil, e)))
		if err != nil || back != e || back.index() != settledBit-1 || back.settled() != settled || back.at != -5 {
			t.Fatalf("entry %+v read back as %+v, %v", e, back, err)
		}
	}
	b := appendRecent(nil, newRecentID(id, 1, 0, false))
	binary.LittleEndian.PutUint64(b[16:24], settledBit|1)
	if _, err := decodeRecent(wire.NewDecoder(b)); err == nil {
		t.Fatal("an entry whose index has its top bit set was read")
	}
}

// The running count of what the live messages take in a checkpoint
// (queueState.messageBytes, which decides whether a checkpoint would give
// a full disk space back) follows publishes, settles, dead-letter
// records and purges, and a decoded state counts as the encoded one did.
func TestAStateCountsWhatItsLiveMessagesTake(t *testing.T) {
	s := builderState("orders")
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }
	recount := func(s *queueState) int64 {
		var n int64
		for _, m := range s.messages {
			n += messageSize(m)
		}
		return n
	}
	recs := []record{
		{typ: recordCreate, policy: wire.PolicyMajority, members: []NodeID{1, 2, 3}},
		{typ: recordPublish, id: id(1), payload: []byte("first")},
		{typ: recordPublish, id: id(2), payload: bytes.Repeat([]byte("b"), 300), readyAt: 500},
		{typ: recordPublish, id: id(3), payload: []byte("third")},
		{typ: recordPublish, id: id(3), payload: []byte("a duplicate, not stored")},
		{typ: recordSettle, id: id(1)},
		{typ: recordSettle, id: id(1)}, // settled already
		{typ: recordDeadLetter, id: id(3), to: "dl"},
		{typ: recordPublish, id: id(4), payload: bytes.Repeat([]byte("d"), 1000)},
		{typ: recordPublish, id: id(5), payload: []byte("after the purge")},
	}
	for i, r := range recs {
		if r.typ == recordPublish && r.id == id(5) {
			s.apply(uint64(i+1), record{typ: recordPurge, through: uint64(i)})
			if s.messageBytes != 0 || len(s.messages) != 0 {
				t.Fatalf("after a purge of everything the state counts %d bytes in %d messages, want none", s.messageBytes, len(s.messages))
			}
			s.apply(uint64(i+2), r)
			break
		}
		s.apply(uint64(i+1), r)
		if got, want := s.messageBytes, recount(s); got != want {
			t.Fatalf("after record %d (%v) the state counts %d bytes, its messages take %d", i+1, r.typ, got, want)
		}
	}
	if got, want := s.messageBytes, messageSize(s.messages[id(5)]); got != want {
		t.Fatalf("after the purge and one publish the state counts %d bytes, want %d", got, want)
	}
	d, err := decodeState("orders", encodeState(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.messageBytes != s.messageBytes {
		t.Fatalf("the decoded state counts %d bytes, the encoded one %d", d.messageBytes, s.messageBytes)
	}
}

// oldStateHead writes what a queue state of version v (1 to 3, before
// message flags) begins with: a created majority queue on nodes 1 to 3,
// applied through 9, holding one live message, live, at index 8.
func oldStateHead(v uint8, live wire.MessageID) []byte {
	b := wire.AppendUint8(nil, v)
	b = wire.AppendBool(b, true)  // created
	b = wire.AppendBool(b, false) // deleted
	b = wire.AppendUint8(b, uint8(wire.PolicyMajority))
	b = wire.AppendUint32(b, 3)
	for _, id := range []uint32{1, 2, 3} {
		b = wire.AppendUint32(b, id)
	}
	b = wire.AppendUint64(b, 9) // applied
	b = wire.AppendUint32(b, 1) // one live message
	b = appendID(b, live)
	b = wire.AppendUint64(b, 8)   // its index
	b = wire.AppendInt64(b, 0)    // ready at
	b = wire.AppendBool(b, false) // not delayed
	b = wire.AppendUint64(b, 0)   // its ready key's time
	return wire.AppendBytes(b, []byte("payload"))
}

// A queue state of the first format, as checkpoints written before stamps
// hold it: no window or clock, and the ID sets written whole. It still
// decodes, with its message and both remembered IDs; a version this node
// does not know is refused.
func TestAFirstVersionQueueStateDecodes(t *testing.T) {
	live, acked := wire.MessageID{Producer: 7, Seq: 2}, wire.MessageID{Producer: 7, Seq: 1}
	b := oldStateHead(1, live)
	b = wire.AppendUint32(b, 2) // published IDs
	b = appendID(b, acked)
	b = wire.AppendUint64(b, 5)
	b = appendID(b, live)
	b = wire.AppendUint64(b, 8)
	b = wire.AppendUint32(b, 1) // settled IDs
	b = appendID(b, acked)
	b = wire.AppendUint64(b, 9)

	s, err := decodeState("q", b, nil)
	if err != nil {
		t.Fatalf("a version 1 state: %v", err)
	}
	if m := s.messages[live]; m == nil || m.index != 8 || string(m.payload) != "payload" || len(s.messages) != 1 {
		t.Fatalf("a version 1 state's messages: %v", s.messages)
	}
	if got, ok := s.known.lookup(acked); !ok || got.published != 5 || got.settled != 9 {
		t.Fatalf("the acked ID decoded as %+v (known %v), want published at 5 and settled at 9", got, ok)
	}
	if s.applied != 9 || !s.created || len(s.members) != 3 {
		t.Fatalf("a version 1 state decoded as applied %d, created %v, members %v", s.applied, s.created, s.members)
	}
	for _, v := range []uint8{0, stateCodecVersion + 1} {
		bad := append([]byte{v}, b[1:]...)
		if _, err := decodeState("q", bad, nil); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("a state of version %d: %v, want a refusal naming the version", v, err)
		}
	}
}

// A queue state of the second format, as checkpoints written before the
// window journal hold it: its window and clock follow the messages, its
// window entries inline and without their digest, which the decoder
// computes. It decodes with both, and with every ID the window names
// remembered at its latest index.
func TestASecondVersionQueueStateDecodesWithItsWindow(t *testing.T) {
	live, acked := wire.MessageID{Producer: 7, Seq: 2}, wire.MessageID{Producer: 7, Seq: 1}
	b := oldStateHead(2, live)
	b = wire.AppendBool(b, false) // the ID sets are not written whole
	window, clock := int64(2*time.Minute), int64(5*time.Second)
	b = wire.AppendInt64(b, window)
	b = wire.AppendInt64(b, clock)
	entries := []recentID{
		newRecentID(acked, 5, int64(time.Second), false),
		newRecentID(live, 8, int64(2*time.Second), false),
		newRecentID(acked, 9, int64(3*time.Second), true),
	}
	b = wire.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = appendRecent(b, e)
	}

	s, err := decodeState("q", b, nil)
	if err != nil {
		t.Fatalf("a version 2 state: %v", err)
	}
	if s.window != window || s.clock != clock {
		t.Fatalf("a version 2 state's window %v and clock %v, want %v and %v",
			time.Duration(s.window), time.Duration(s.clock), time.Duration(window), time.Duration(clock))
	}
	if s.recent.len() != len(entries) || s.recentSum != s.recent.sum() {
		t.Fatalf("a version 2 state's window holds %d entries with digest %v, want %d with %v",
			s.recent.len(), s.recentSum, len(entries), s.recent.sum())
	}
	if got, ok := s.known.lookup(acked); !ok || got.published != 5 || got.settled != 9 {
		t.Fatalf("the acked ID decoded as %+v (known %v), want published at 5 and settled at 9", got, ok)
	}
	if got, ok := s.known.lookup(live); !ok || got.published != 8 || got.settled != 0 {
		t.Fatalf("the live ID decoded as %+v (known %v), want published at 8", got, ok)
	}
}
