package node

import (
	"bytes"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// A dead-letter queue's ledger answers a repeated ask from the move it
// stored, refuses an ask at or below its source's mark, takes a message
// moved again under a reused ID as a new move, and forgets what a later
// record's mark settled; the ledger, and a dead message's record index,
// survive a checkpoint.
func TestTheMovedInLedgerRemembersUntilTheSourceSettles(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 7, Seq: seq} }
	orders := moveSource{queue: "orders", inc: 2}
	moved := func(seq, sourceIndex, mark uint64) record {
		return record{typ: recordMovedIn, id: id(seq), at: int64(seq), payload: []byte("p"),
			from: moveOrigin{queue: "orders", inc: 2, index: sourceIndex, settledThrough: mark}}
	}
	s := builderState("parked")
	s.apply(1, record{typ: recordCreate, policy: wire.PolicyMajority, members: []NodeID{1, 2, 3}})
	s.apply(2, moved(1, 10, 0))
	s.apply(3, moved(2, 14, 9))
	if index, known, stale := s.movedInIndex(orders, id(1), 10); !known || stale || index != 2 {
		t.Fatalf("a repeated ask for the first move: index %d known %t stale %t, want 2, known", index, known, stale)
	}
	if _, known, _ := s.movedInIndex(moveSource{queue: "orders", inc: 3}, id(1), 10); known {
		t.Fatal("a move of another incarnation of the source was taken for the first")
	}
	if _, known, stale := s.movedInIndex(orders, id(1), 30); known || stale {
		t.Fatal("the ID moved again by a later record was taken for the first move")
	}
	if _, _, stale := s.movedInIndex(orders, id(9), 9); !stale {
		t.Fatal("an ask at the source's mark was not stale")
	}

	// The third move's mark settles the first.
	s.apply(4, moved(3, 20, 12))
	if _, known, stale := s.movedInIndex(orders, id(1), 10); known || !stale {
		t.Fatalf("the first move is still known (%t) or not stale (%t) after a mark past it", known, stale)
	}
	if n := s.movedInCount(); n != 2 {
		t.Fatalf("the ledger holds %d moves, want 2", n)
	}
	enc := encodeState(s)
	d, err := decodeState("parked", enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again := encodeState(d); !bytes.Equal(enc, again) {
		t.Fatalf("re-encoding a decoded state with a ledger changed it:\n%x\n%x", enc, again)
	}
	if index, known, _ := d.movedInIndex(orders, id(3), 20); !known || index != 4 || d.movedInCount() != 2 {
		t.Fatalf("the decoded ledger: third move index %d known %t, %d moves", index, known, d.movedInCount())
	}

	src := builderState("orders")
	src.apply(1, record{typ: recordPublish, id: id(1), payload: []byte("p")})
	src.apply(2, record{typ: recordDeadLetter, id: id(1), to: "parked"})
	ds, err := decodeState("orders", encodeState(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := ds.messages[id(1)]; m == nil || !m.dead || m.deadIndex != 2 {
		t.Fatalf("the dead message decoded as %+v, want dead at record 2", m)
	}
}

// A moved-in record reads back with its origin; it is a publish to every
// reader of the log.
func TestAMovedInRecordKeepsItsOrigin(t *testing.T) {
	r := record{typ: recordMovedIn, epoch: 4, id: wire.MessageID{Producer: 3, Seq: 8}, at: 77, payload: []byte("x"),
		from: moveOrigin{queue: "orders", inc: 2, index: 41, settledThrough: 37}}
	got, err := decodeRecord(recordMovedIn, encodeRecord(r))
	if err != nil || got.from != r.from || got.id != r.id || got.at != 77 || !bytes.Equal(got.payload, r.payload) || got.typ != recordMovedIn {
		t.Fatalf("a moved-in record read back as %+v, %v", got, err)
	}
	if recordNames[recordMovedIn] != "publish" {
		t.Fatalf("a moved-in record is listed as %q, want publish", recordNames[recordMovedIn])
	}
}

// A ledger that keeps a move its own mark settled is damage, refused.
func TestADecodedLedgerKeepsNothingItsMarkSettled(t *testing.T) {
	s := builderState("parked")
	s.movedIn = map[moveSource]*moveLedger{{queue: "orders", inc: 1}: {settledThrough: 9,
		moves: map[wire.MessageID]movedIn{{Producer: 1, Seq: 1}: {sourceIndex: 5, index: 3}}}}
	if _, err := decodeState("parked", encodeState(s), nil); err == nil {
		t.Fatal("a ledger keeping a settled move decoded without an error")
	}
}
