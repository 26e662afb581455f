package wire

import "time"

// MoveOwner asks a queue's owner to hand the queue over to another of its
// replicas, To, without waiting for a failure. The owner stops handing
// out deliveries and waits, for at most DrainFor, until its consumers
// have settled or given back every delivery it leased; then it stops
// admitting publishes, lets those in flight be confirmed, and proposes
// To as the owner of the next epoch. To claims the queue through the
// same recovery a failover runs, so no confirmed message depends on the
// old owner's word.
//
// The reply is OK once the metadata has committed the plan (its Owner is
// To); the new owner serves a few round trips later, and clients that
// reach the old one are redirected. DrainFor zero leaves the owner's
// default. Only an admin may ask.
type MoveOwner struct {
	ReqID    uint64
	Queue    string
	To       uint32
	DrainFor time.Duration
}

// Kind implements Message.
func (*MoveOwner) Kind() Kind { return KindMoveOwner }

// AppendBody implements Message.
func (m *MoveOwner) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = AppendUint32(b, m.To)
	return AppendInt64(b, int64(m.DrainFor))
}

func decodeMoveOwner(d *Decoder) *MoveOwner {
	return &MoveOwner{ReqID: d.Uint64(), Queue: d.String(), To: d.Uint32(), DrainFor: time.Duration(d.Int64())}
}
