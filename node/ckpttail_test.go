package node

import (
	"testing"

	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
)

// TestAnOwnersRecordIsWhatItsReplicasDecode holds the records an owner
// keeps in its tail, as it built them, to what decoding their bytes gives
// every other replica: the owner's base rolls from the first and the
// followers' from the second, and their checkpoints must encode alike.
func TestAnOwnersRecordIsWhatItsReplicasDecode(t *testing.T) {
	id := wire.MessageID{Producer: 9, Seq: 41}
	for _, rec := range []record{
		{typ: recordCreate, epoch: 1, policy: wire.Policy(1), members: []NodeID{1, 2, 3}},
		{typ: recordEpochMark, epoch: 2, at: 1_700_000_000, window: 120e9},
		{typ: recordPublish, epoch: 2, id: id, readyAt: 1_700_000_500, at: 1_700_000_001, payload: []byte("payload")},
		{typ: recordPublish, epoch: 2, id: id, at: 1_700_000_001, payload: []byte{}},
		{typ: recordSettle, epoch: 2, id: id, at: 1_700_000_002},
		{typ: recordSettles, epoch: 2, ids: []wire.MessageID{id, {Producer: 9, Seq: 42}}, at: 1_700_000_003},
		{typ: recordDeadLetter, epoch: 2, id: id, at: 1_700_000_004, to: "orders-dead"},
		{typ: recordPromote, epoch: 2, until: 1_700_000_600},
		{typ: recordPurge, epoch: 2, at: 1_700_000_005, through: 17, id: wire.MessageID{Producer: 3, Seq: 1}},
		{typ: recordMovedIn, epoch: 2, id: id, at: 1_700_000_006, payload: []byte("moved"),
			from: moveOrigin{queue: "orders", inc: 4, index: 99, settledThrough: 90}},
		{typ: recordDelete, epoch: 3},
	} {
		got, err := decodeRecord(rec.storedType(), encodeRecord(rec))
		if err != nil {
			t.Fatalf("record type %d: %v", rec.typ, err)
		}
		if diff := cmp.Diff(rec, got, cmp.AllowUnexported(record{}, moveOrigin{}, wire.MessageID{})); diff != "" {
			t.Errorf("record type %d decodes otherwise than the owner built it (-built +decoded):\n%s", rec.typ, diff)
		}
	}
}

// TestARecordTailKeepsConsecutiveRecordsWithinItsBounds follows a tail
// through appends, a gap, rolls, a truncation and its bounds.
func TestARecordTailKeepsConsecutiveRecordsWithinItsBounds(t *testing.T) {
	var tail recordTail
	publish := func(seq uint64, size int) record {
		return record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: seq}, payload: make([]byte, size)}
	}
	for i := uint64(10); i < 20; i++ {
		tail.add(i, publish(i, 10))
	}
	if recs, ok := tail.after(9, 100, 100); !ok || len(recs) != 10 || recs[0].id.Seq != 10 {
		t.Fatalf("after 9: %d records (%v), want the ten from 10", len(recs), ok)
	}
	if recs, ok := tail.after(12, 15, 100); !ok || len(recs) != 3 || recs[0].id.Seq != 13 || recs[2].id.Seq != 15 {
		t.Fatalf("after 12 through 15: %d records (%v), want 13 to 15", len(recs), ok)
	}
	if recs, ok := tail.after(12, 100, 2); !ok || len(recs) != 2 {
		t.Fatalf("after 12, at most 2: %d records (%v)", len(recs), ok)
	}
	if _, ok := tail.after(8, 100, 100); ok {
		t.Fatal("the tail claims the record at 9, before its first")
	}
	if _, ok := tail.after(19, 100, 100); ok {
		t.Fatal("the tail claims the record at 20, past its last")
	}
	if recs, ok := tail.after(12, 12, 100); ok || recs != nil {
		t.Fatalf("after 12 through 12, an empty range: %d records (%v), want none and false", len(recs), ok)
	}
	if recs, ok := tail.after(12, 100, 0); ok || recs != nil {
		t.Fatalf("after 12, at most 0: %d records (%v), want none and false", len(recs), ok)
	}
	tail.dropThrough(14)
	if tail.first != 15 || len(tail.recs) != 5 {
		t.Fatalf("after dropping through 14 the tail holds %d from %d, want 5 from 15", len(tail.recs), tail.first)
	}
	tail.truncateAfter(16)
	if tail.end() != 17 {
		t.Fatalf("after truncating past 16 the tail ends at %d, want 17", tail.end())
	}
	tail.add(17, publish(17, 10))
	tail.add(30, publish(30, 10)) // a gap: the log reopened or moved on
	if tail.first != 30 || len(tail.recs) != 1 {
		t.Fatalf("after a gap the tail holds %d from %d, want 1 from 30", len(tail.recs), tail.first)
	}
	tail.truncateAfter(5)
	if len(tail.recs) != 0 || tail.bytes != 0 {
		t.Fatalf("a truncation below the tail left %d records, %d bytes", len(tail.recs), tail.bytes)
	}
	// Past its bounds it keeps its newest records only.
	for i := uint64(1); i <= 3*tailRecordsMax; i++ {
		tail.add(i, publish(i, 0))
	}
	if len(tail.recs) > tailRecordsMax || tail.end() != 3*tailRecordsMax+1 {
		t.Fatalf("the tail holds %d records ending at %d, want at most %d ending at %d", len(tail.recs), tail.end(), tailRecordsMax, 3*tailRecordsMax+1)
	}
	tail.reset()
	for i := uint64(1); i <= 64; i++ {
		tail.add(i, publish(i, tailBytesMax/16))
	}
	if tail.bytes > tailBytesMax || tail.end() != 65 {
		t.Fatalf("the tail holds %d bytes ending at %d, want at most %d ending at 65", tail.bytes, tail.end(), tailBytesMax)
	}
	// Emptied, it keeps room for a tick's records only, and none once
	// its queue rests.
	tail.reset()
	for i := uint64(1); i <= 2*tailKeptCap; i++ {
		tail.add(i, publish(i, 0))
	}
	tail.dropThrough(2 * tailKeptCap)
	if len(tail.recs) != 0 || cap(tail.recs) > tailKeptCap {
		t.Fatalf("an emptied tail holds %d records in room for %d, want none in at most %d", len(tail.recs), cap(tail.recs), tailKeptCap)
	}
	tail.add(1, publish(1, 0))
	tail.release()
	if len(tail.recs) != 1 {
		t.Fatal("release dropped records the base has not applied")
	}
	tail.reset()
	tail.release()
	if tail.recs != nil {
		t.Fatalf("a released empty tail keeps room for %d records", cap(tail.recs))
	}
}

// A build that starts far behind its cut (a replica restarted over an
// old checkpoint, then asked for a cut well past it) takes the big steps
// a roll of the base would, while a quiet log alone would give it the
// smallest; one a few records short of its cut keeps the small step.
func TestABuildFarBehindItsCutTakesBigSteps(t *testing.T) {
	far := &ckptBuild{cut: 100_000, state: &queueState{applied: 2_000}, seenLast: 500_000}
	if got := far.stepRecords(500_010); got != buildStepRecordsMax {
		t.Errorf("a build 98,000 records short of its cut steps %d records, want %d", got, buildStepRecordsMax)
	}
	near := &ckptBuild{cut: 100_000, state: &queueState{applied: 99_000}, seenLast: 500_000}
	if got := near.stepRecords(500_010); got != buildStepRecordsMin {
		t.Errorf("a build 1,000 records short of its cut on a quiet log steps %d records, want %d", got, buildStepRecordsMin)
	}
	busy := &ckptBuild{cut: 100_000, state: &queueState{applied: 99_000}, seenLast: 500_000}
	if got := busy.stepRecords(503_000); got != 6_000 {
		t.Errorf("a build on a log that grew 3,000 records steps %d records, want twice that", got)
	}
}
