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
)

// record is a decoded queue log record.
type record struct {
	typ     storage.RecordType
	epoch   uint64
	policy  wire.Policy    // create
	members []NodeID       // create
	id      wire.MessageID // publish, settle
	readyAt int64          // publish: Unix nanoseconds on the owner's clock; 0 = at once
	until   int64          // promote: the clock boundary, Unix nanoseconds
	payload []byte         // publish
}

func encodeRecord(r record) []byte {
	b := wire.AppendUint64(nil, r.epoch)
	switch r.typ {
	case recordCreate:
		b = wire.AppendUint8(b, uint8(r.policy))
		b = wire.AppendUint32(b, uint32(len(r.members)))
		for _, m := range r.members {
			b = wire.AppendUint32(b, uint32(m))
		}
	case recordPublish:
		b = wire.AppendUint64(b, r.id.Producer)
		b = wire.AppendUint64(b, r.id.Seq)
		b = wire.AppendInt64(b, r.readyAt)
		b = wire.AppendBytes(b, r.payload)
	case recordSettle:
		b = wire.AppendUint64(b, r.id.Producer)
		b = wire.AppendUint64(b, r.id.Seq)
	case recordPromote:
		b = wire.AppendInt64(b, r.until)
	case recordDelete, recordEpochMark:
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
	r := record{typ: typ, epoch: d.Uint64()}
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
	case recordPromote:
		r.until = d.Int64()
	case recordDelete, recordEpochMark:
	default:
		return record{}, fmt.Errorf("unknown queue record type %d", typ)
	}
	if err := d.Finish(); err != nil {
		return record{}, fmt.Errorf("queue record type %d: %w", typ, err)
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
