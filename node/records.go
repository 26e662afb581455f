package node

import (
	"fmt"

	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// Queue log record types. Every record body starts with the epoch of the
// owner that wrote it; the rest depends on the type.
const (
	recordCreate  storage.RecordType = 1 // policy, replica set
	recordPublish storage.RecordType = 2 // message ID, ready-at time, payload
	recordSettle  storage.RecordType = 3 // message ID
	recordPromote storage.RecordType = 4 // clock boundary: delayed messages due by then become ready
	recordDelete  storage.RecordType = 5 // the queue is gone
	// recordEpochMark opens a recovered owner's epoch: once an exact
	// quorum holds it, the history before it is the confirmed history.
	recordEpochMark storage.RecordType = 6
	// The stamped forms, which every owner writes now: each carries the
	// owner's clock, which is what the deduplication window is measured
	// on, and the epoch marker carries the window. A log written before
	// them holds the plain forms, which decode with no stamp and no
	// window (every ID kept, as before).
	recordPublishAt   storage.RecordType = 7 // publish, plus the stamp
	recordSettleAt    storage.RecordType = 8 // settle, plus the stamp
	recordEpochMarkAt storage.RecordType = 9 // epoch marker, plus the stamp and the window
	// recordSettles settles several messages in one record (the stamp,
	// then the IDs): the acks an owner took in one turn are written
	// together, one record and one replication page for all of them.
	recordSettles storage.RecordType = 10
	// recordDeadLetter (the stamp, a message ID, then the dead-letter
	// queue it moves to) takes a message that used up its delivery limit
	// out of delivery: it stays live until that queue confirms it holds
	// it, and is then settled (deadletter.go). Records written before
	// they named the queue end after the ID and decode with no name.
	recordDeadLetter storage.RecordType = 11
	// recordPurge settles every message published at or before its
	// boundary that is still unsettled when it applies (the stamp, then
	// the boundary index): a purge of the queue (purge.go). Type 11 is
	// taken by another record.
	recordPurge storage.RecordType = 12
	// recordMovedIn is a publish a dead-letter move stored (a publish's
	// fields, then where the message came from: moveOrigin). The
	// dead-letter queue remembers the move until its source says it
	// settled the message there (movedin.go), so a source asking again
	// after the deduplication window never stores it twice.
	recordMovedIn storage.RecordType = 13
)

// record is a decoded queue log record.
type record struct {
	typ     storage.RecordType
	epoch   uint64
	policy  wire.Policy      // create
	members []NodeID         // create
	id      wire.MessageID   // publish, settle, dead-letter; a purge's token
	ids     []wire.MessageID // settles: every message the record settles
	readyAt int64            // publish: Unix nanoseconds on the owner's clock; 0 = at once
	until   int64            // promote: the clock boundary, Unix nanoseconds
	through uint64           // purge: the last index whose messages it settles
	to      string           // dead-letter: the queue the message moves to; empty in older records
	from    moveOrigin       // moved-in: the source queue and its dead-letter record
	payload []byte           // publish
	// at is the owner's clock when it appended a stamped record, Unix
	// nanoseconds; window the deduplication window an epoch marker sets.
	at     int64
	window int64
}

// storedType is the type a record is written with: the stamped form of
// publishes, settles and markers.
func (r record) storedType() storage.RecordType {
	switch r.typ {
	case recordPublish:
		return recordPublishAt
	case recordSettle:
		return recordSettleAt
	case recordEpochMark:
		return recordEpochMarkAt
	}
	return r.typ
}

// baseType maps a stored type to the record kind it is a form of.
func baseType(t storage.RecordType) storage.RecordType {
	switch t {
	case recordPublishAt:
		return recordPublish
	case recordSettleAt:
		return recordSettle
	case recordEpochMarkAt:
		return recordEpochMark
	}
	return t
}

func encodeRecord(r record) []byte {
	b := wire.AppendUint64(nil, r.epoch)
	switch r.storedType() {
	case recordCreate:
		b = wire.AppendUint8(b, uint8(r.policy))
		b = wire.AppendUint32(b, uint32(len(r.members)))
		for _, m := range r.members {
			b = wire.AppendUint32(b, uint32(m))
		}
	case recordPublishAt, recordMovedIn:
		b = wire.AppendUint64(b, r.id.Producer)
		b = wire.AppendUint64(b, r.id.Seq)
		b = wire.AppendInt64(b, r.readyAt)
		b = wire.AppendInt64(b, r.at)
		b = wire.AppendBytes(b, r.payload)
		if r.typ == recordMovedIn {
			b = appendMoveOrigin(b, r.from)
		}
	case recordSettleAt, recordDeadLetter:
		b = wire.AppendUint64(b, r.id.Producer)
		b = wire.AppendUint64(b, r.id.Seq)
		b = wire.AppendInt64(b, r.at)
		if r.typ == recordDeadLetter && r.to != "" {
			b = wire.AppendString(b, r.to)
		}
	case recordEpochMarkAt:
		b = wire.AppendInt64(b, r.at)
		b = wire.AppendInt64(b, r.window)
	case recordSettles:
		if len(r.ids) == 0 {
			panic("node: encoding a settles record that settles nothing")
		}
		b = wire.AppendInt64(b, r.at)
		b = wire.AppendUint32(b, uint32(len(r.ids)))
		for _, id := range r.ids {
			b = wire.AppendUint64(b, id.Producer)
			b = wire.AppendUint64(b, id.Seq)
		}
	case recordPromote:
		b = wire.AppendInt64(b, r.until)
	case recordPurge:
		b = wire.AppendInt64(b, r.at)
		b = wire.AppendUint64(b, r.through)
		b = wire.AppendUint64(b, r.id.Producer) // the purge's token, zero if none
		b = wire.AppendUint64(b, r.id.Seq)
	case recordDelete:
	default:
		panic(fmt.Sprintf("node: encoding unknown record type %d", r.typ))
	}
	return b
}

// decodeRecord parses a record body. A record that does not parse is
// corruption the storage CRC did not catch, or a bug; either way the
// caller must not guess.
func decodeRecord(typ storage.RecordType, body []byte) (record, error) {
	d := wire.NewDecoder(body)
	r := record{typ: baseType(typ), epoch: d.Uint64()}
	switch typ {
	case recordCreate:
		r.policy = wire.Policy(d.Uint8())
		n := d.Count(4)
		for range n {
			r.members = append(r.members, NodeID(d.Uint32()))
		}
	case recordPublish:
		r.id = wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
		r.readyAt = d.Int64()
		r.payload = d.Bytes()
	case recordSettle:
		r.id = wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
	case recordPublishAt, recordMovedIn:
		r.id = wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
		r.readyAt, r.at = d.Int64(), d.Int64()
		r.payload = d.Bytes()
		if typ == recordMovedIn {
			r.from = decodeMoveOrigin(d)
		}
	case recordSettleAt, recordDeadLetter:
		r.id = wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
		r.at = d.Int64()
		if typ == recordDeadLetter && d.More() {
			r.to = d.String()
		}
	case recordEpochMarkAt:
		r.at, r.window = d.Int64(), d.Int64()
	case recordSettles:
		r.at = d.Int64()
		n := d.Count(16)
		r.ids = make([]wire.MessageID, 0, n)
		for range n {
			r.ids = append(r.ids, wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()})
		}
	case recordPromote:
		r.until = d.Int64()
	case recordPurge:
		r.at, r.through = d.Int64(), d.Uint64()
		r.id = wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
	case recordDelete, recordEpochMark:
	default:
		return record{}, fmt.Errorf("unknown queue record type %d", typ)
	}
	if err := d.Finish(); err != nil {
		return record{}, fmt.Errorf("queue record type %d: %w", typ, err)
	}
	if typ == recordSettles && len(r.ids) == 0 {
		return record{}, fmt.Errorf("queue record type %d settles nothing", typ)
	}
	return r, nil
}

// recordEpoch reads just the epoch prefix of a record body.
func recordEpoch(body []byte) uint64 {
	if len(body) < 8 {
		panic(fmt.Sprintf("node: queue record of %d bytes has no epoch", len(body)))
	}
	return wire.NewDecoder(body[:8]).Uint64()
}

// applyPage decodes a page of queue's log records and applies them to s,
// in order; with digest set it also moves the history digest past each.
// A record that does not decode is damage, and stops the page there.
func applyPage(queue string, s *queueState, page []storage.Record, digest *storage.Digest) error {
	for _, rec := range page {
		dec, err := decodeRecord(rec.Type, rec.Body)
		if err != nil {
			return fmt.Errorf("%w: queue %s record %d: %v", storage.ErrCorrupt, queue, rec.Index, err)
		}
		s.apply(rec.Index, dec)
		if digest != nil {
			*digest = digest.Next(rec.Index, rec.Type, rec.Body)
		}
	}
	return nil
}

// pageBodyBytes is what the records of a page hold in their bodies.
func pageBodyBytes(page []storage.Record) int {
	n := 0
	for _, rec := range page {
		n += len(rec.Body)
	}
	return n
}
