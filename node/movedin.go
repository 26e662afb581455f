package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// The moved-in ledger. A dead-letter queue deduplicates a move on the
// message's ID, but its deduplication window alone is not enough: a
// source queue whose owner lost the answer and failed over asks again
// when its new owner serves, which can be long after the window passed,
// and by then the message may have been delivered and acked from the
// dead-letter queue. Stored again, an acked message would come back.
//
// So a dead-letter queue keeps, per source queue, every move it stored
// until the source says it settled the message, and answers a repeated
// ask from the ledger whatever the window says. The source says so
// without a message of its own: each ask carries the source's
// settled-through mark, an index at or below which every dead-letter
// record of the source has its message settled by a confirmed record.
// No owner of the source can ask for those moves again, since each
// recovers a history holding the settle, so the next moved-in record
// that carries the mark drops them. A ledger holds at most the moves
// whose settles were not yet confirmed when the last ask was sent:
// bounded by the moves in flight, not by every move ever made.
//
// An ask for a record at or below the mark is stale (a duplicate the
// network delivered late, or an owner that lost its queue and does not
// know yet) and is refused, never stored.

// moveOrigin names a moved-in message's source: the queue, its
// incarnation, the index of the dead-letter record that began the move,
// and the source's settled-through mark when it asked.
type moveOrigin struct {
	queue          string
	inc            uint64
	index          uint64
	settledThrough uint64
}

// moveSource identifies a source queue's incarnation: a queue deleted and
// created again numbers its log from the start.
type moveSource struct {
	queue string
	inc   uint64
}

// moveLedger is what a dead-letter queue remembers of one source.
type moveLedger struct {
	// settledThrough is the highest mark the source sent: its moves at
	// or below it are settled there for good.
	settledThrough uint64
	// moves maps each remembered moved-in message to its move.
	moves map[wire.MessageID]movedIn
}

// movedIn is one remembered move: the source's dead-letter record and
// the index of the record that stored the message here.
type movedIn struct {
	sourceIndex uint64
	index       uint64
}

func appendMoveOrigin(b []byte, o moveOrigin) []byte {
	b = wire.AppendString(b, o.queue)
	b = wire.AppendUint64(b, o.inc)
	b = wire.AppendUint64(b, o.index)
	return wire.AppendUint64(b, o.settledThrough)
}

func decodeMoveOrigin(d *wire.Decoder) moveOrigin {
	return moveOrigin{queue: d.String(), inc: d.Uint64(), index: d.Uint64(), settledThrough: d.Uint64()}
}

// applyMovedIn notes the move a moved-in record stored at index, and
// forgets the moves of its source that the record's mark settled.
func (s *queueState) applyMovedIn(index uint64, id wire.MessageID, from moveOrigin) {
	if s.movedIn == nil {
		s.movedIn = make(map[moveSource]*moveLedger)
	}
	key := moveSource{queue: from.queue, inc: from.inc}
	l := s.movedIn[key]
	if l == nil {
		l = &moveLedger{moves: make(map[wire.MessageID]movedIn)}
		s.movedIn[key] = l
	}
	if from.index > l.settledThrough {
		l.moves[id] = movedIn{sourceIndex: from.index, index: index}
	}
	if from.settledThrough > l.settledThrough {
		l.settledThrough = from.settledThrough
		maps.DeleteFunc(l.moves, func(_ wire.MessageID, mv movedIn) bool { return mv.sourceIndex <= l.settledThrough })
	}
}

// movedInIndex looks up an ask from source for the move its dead-letter
// record at sourceIndex began. stale says the source settled that move
// already; otherwise, when the ledger holds the move, index is the
// record that stored the message here.
func (s *queueState) movedInIndex(source moveSource, id wire.MessageID, sourceIndex uint64) (index uint64, known, stale bool) {
	l := s.movedIn[source]
	if l == nil {
		return 0, false, false
	}
	if sourceIndex <= l.settledThrough {
		return 0, false, true
	}
	mv, ok := l.moves[id]
	if !ok || mv.sourceIndex != sourceIndex {
		// Not this move: a message published again under an old ID
		// after the source's window and moved again is a new move.
		return 0, false, false
	}
	return mv.index, true, false
}

func compareMoveSources(a, b moveSource) int {
	if c := cmp.Compare(a.queue, b.queue); c != 0 {
		return c
	}
	return cmp.Compare(a.inc, b.inc)
}

// appendMovedIn writes the ledgers, sources and moves in order, never in
// map order: replicas that applied the same records write the same bytes.
func appendMovedIn(b []byte, s *queueState) []byte {
	sources := slices.SortedFunc(maps.Keys(s.movedIn), compareMoveSources)
	b = wire.AppendUint32(b, uint32(len(sources)))
	for _, src := range sources {
		l := s.movedIn[src]
		b = wire.AppendString(b, src.queue)
		b = wire.AppendUint64(b, src.inc)
		b = wire.AppendUint64(b, l.settledThrough)
		ids := slices.SortedFunc(maps.Keys(l.moves), compareIDs)
		b = wire.AppendUint32(b, uint32(len(ids)))
		for _, id := range ids {
			b = appendID(b, id)
			b = wire.AppendUint64(b, l.moves[id].sourceIndex)
			b = wire.AppendUint64(b, l.moves[id].index)
		}
	}
	return b
}

// movedInSize bounds the bytes appendMovedIn writes.
func movedInSize(s *queueState) int {
	n := 4
	for _, src := range slices.SortedFunc(maps.Keys(s.movedIn), compareMoveSources) {
		n += 4 + len(src.queue) + 8 + 8 + 4 + 32*len(s.movedIn[src].moves)
	}
	return n
}

// decodeMovedIn reads what appendMovedIn wrote.
func decodeMovedIn(d *wire.Decoder, s *queueState) error {
	for range d.Count(4 + 8 + 8 + 4) {
		src := moveSource{queue: d.String(), inc: d.Uint64()}
		if _, dup := s.movedIn[src]; dup {
			return fmt.Errorf("queue state holds the moves from %s/%d twice", src.queue, src.inc)
		}
		l := &moveLedger{settledThrough: d.Uint64(), moves: make(map[wire.MessageID]movedIn)}
		for range d.Count(32) {
			id := wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
			mv := movedIn{sourceIndex: d.Uint64(), index: d.Uint64()}
			if _, dup := l.moves[id]; dup {
				return fmt.Errorf("queue state holds the move of %s from %s twice", id, src.queue)
			}
			if mv.sourceIndex <= l.settledThrough {
				return fmt.Errorf("queue state keeps the move of %s from %s at %d, settled through %d", id, src.queue, mv.sourceIndex, l.settledThrough)
			}
			l.moves[id] = mv
		}
		if s.movedIn == nil {
			s.movedIn = make(map[moveSource]*moveLedger)
		}
		s.movedIn[src] = l
	}
	return nil
}
