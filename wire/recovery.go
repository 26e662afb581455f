package wire

import (
	"fmt"
	"time"
)

// Seal asks a replica to refuse every epoch below Epoch from now on, and
// to report what it holds. A recovery candidate seals a quorum before it
// chooses whose history to keep: that is what makes the chosen history
// contain every confirmed record, and what fences the old owner.
type Seal struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
}

// Kind implements Message.
func (*Seal) Kind() Kind { return KindSeal }

// AppendBody implements Message.
func (m *Seal) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	return AppendUint64(b, m.Epoch)
}

func decodeSeal(d *Decoder) *Seal {
	return &Seal{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64()}
}

// SealReply is a sealed replica's witness: its retained history as it is
// on disk (last index, the epoch of that entry, the history digest) and
// its identity. OK is false if the replica has already seen a higher
// epoch, which it names, with that epoch's owner.
type SealReply struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	OK          bool
	First       uint64
	Last        uint64
	LastEpoch   uint64
	Digest      []byte
	HistoryID   uint64
	Instance    uint64
	Owner       uint32
	// Suspect says the replica restarted over its storage and no owner
	// has verified it since; Commit is the highest index it knows was
	// confirmed.
	Suspect bool
	Commit  uint64
	// LeaseGrantAgo is how many nanoseconds before the reply the replica
	// last let an owner of an older epoch renew its delivery lease (or
	// stopped delivering as that owner). It is the last field: a reply
	// from a node that predates it decodes with none, which the candidate
	// reads as the most cautious value, the moment of its reply.
	LeaseGrantAgo uint64
	// Released says the replica was the serving owner of the epoch just
	// before the seal's, with no older owner's lease left to wait out,
	// and stopped delivering when sealed: no owner of an older epoch can
	// hand anything out any more. It is written only when set, so the
	// common answer is the frame older nodes send and read.
	Released bool
	// Delivered hands over delivery counts: with Released, how often the
	// old owner sent each live message it sent at all; from a follower,
	// the counts the owner's appends told it (Append.Delivered). Counts
	// live in the owner's memory, and a queue with a delivery limit would
	// otherwise count from zero again after a move or a failover.
	Delivered []DeliveryCount
}

// DeliveryCount is how many times an owner sent one message.
type DeliveryCount struct {
	ID    MessageID
	Count uint32
}

// MaxDeliveryCounts bounds the counts one seal answer or append carries,
// so the frame stays small whatever the backlog; the rest count from
// zero.
const MaxDeliveryCounts = 16384

// deliveryCountSize is the encoded size of one DeliveryCount.
const deliveryCountSize = 20

func appendDeliveryCounts(b []byte, counts []DeliveryCount) []byte {
	b = AppendUint32(b, uint32(len(counts)))
	for _, c := range counts {
		b = appendMessageID(b, c.ID)
		b = AppendUint32(b, c.Count)
	}
	return b
}

// decodeDeliveryCounts reads a list appendDeliveryCounts wrote, refusing
// one longer than MaxDeliveryCounts. The encoders leave an empty list
// out, so an empty list reads back as none.
func decodeDeliveryCounts(d *Decoder) []DeliveryCount {
	n := d.Count(deliveryCountSize)
	if n > MaxDeliveryCounts {
		d.fail("delivery counts", n)
		return nil
	}
	var out []DeliveryCount
	for range n {
		out = append(out, DeliveryCount{ID: d.messageID(), Count: d.Uint32()})
	}
	return out
}

// Kind implements Message.
func (*SealReply) Kind() Kind { return KindSealReply }

// AppendBody implements Message.
func (m *SealReply) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendBool(b, m.OK)
	b = AppendUint64(b, m.First)
	b = AppendUint64(b, m.Last)
	b = AppendUint64(b, m.LastEpoch)
	b = AppendBytes(b, m.Digest)
	b = AppendUint64(b, m.HistoryID)
	b = AppendUint64(b, m.Instance)
	b = AppendUint32(b, m.Owner)
	b = AppendBool(b, m.Suspect)
	b = AppendUint64(b, m.Commit)
	b = AppendUint64(b, m.LeaseGrantAgo)
	if m.Released || len(m.Delivered) > 0 {
		b = AppendBool(b, m.Released)
	}
	if len(m.Delivered) > 0 {
		b = appendDeliveryCounts(b, m.Delivered)
	}
	return b
}

func decodeSealReply(d *Decoder) *SealReply {
	m := &SealReply{
		Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), OK: d.Bool(),
		First: d.Uint64(), Last: d.Uint64(), LastEpoch: d.Uint64(), Digest: d.Bytes(),
		HistoryID: d.Uint64(), Instance: d.Uint64(), Owner: d.Uint32(), Suspect: d.Bool(), Commit: d.Uint64(),
	}
	if d.More() {
		m.LeaseGrantAgo = d.Uint64()
	}
	if d.More() {
		m.Released = d.Bool()
	}
	if d.More() {
		m.Delivered = decodeDeliveryCounts(d)
	}
	return m
}

// String describes the witness.
func (m *SealReply) String() string {
	return fmt.Sprintf("{q=%s epoch=%d ok=%t range=%d..%d last-epoch=%d digest=%x owner=%d suspect=%t commit=%d grant-ago=%v}",
		m.Queue, m.Epoch, m.OK, m.First, m.Last, m.LastEpoch, m.Digest[:min(6, len(m.Digest))], m.Owner, m.Suspect, m.Commit, time.Duration(m.LeaseGrantAgo))
}

// Fetch asks a sealed replica (the chosen source) for the entries after
// PrevIndex, provided its entry at PrevIndex is of PrevEpoch.
type Fetch struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	PrevIndex   uint64
	PrevEpoch   uint64
}

// Kind implements Message.
func (*Fetch) Kind() Kind { return KindFetch }

// AppendBody implements Message.
func (m *Fetch) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.PrevIndex)
	return AppendUint64(b, m.PrevEpoch)
}

func decodeFetch(d *Decoder) *Fetch {
	return &Fetch{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), PrevIndex: d.Uint64(), PrevEpoch: d.Uint64()}
}

// FetchReply carries one bounded page of the source's log. When the
// source's entry at PrevIndex does not match, OK is false and Hint is
// where the candidate should resume (the start of the conflicting run, or
// the source's end).
type FetchReply struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	OK          bool
	PrevIndex   uint64
	Hint        uint64
	Last        uint64
	Entries     []Entry
}

// Kind implements Message.
func (*FetchReply) Kind() Kind { return KindFetchReply }

// AppendBody implements Message.
func (m *FetchReply) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendBool(b, m.OK)
	b = AppendUint64(b, m.PrevIndex)
	b = AppendUint64(b, m.Hint)
	b = AppendUint64(b, m.Last)
	b = AppendUint32(b, uint32(len(m.Entries)))
	for _, e := range m.Entries {
		b = AppendUint8(b, e.Type)
		b = AppendBytes(b, e.Body)
	}
	return b
}

func decodeFetchReply(d *Decoder) *FetchReply {
	m := &FetchReply{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), OK: d.Bool(),
		PrevIndex: d.Uint64(), Hint: d.Uint64(), Last: d.Uint64()}
	if n := d.Count(5); n > 0 {
		m.Entries = make([]Entry, n)
		for i := range m.Entries {
			m.Entries[i] = Entry{Type: d.Uint8(), Body: d.Bytes()}
		}
	}
	return m
}

// String describes the page without its entries.
func (m *FetchReply) String() string {
	return fmt.Sprintf("{q=%s epoch=%d ok=%t prev=%d hint=%d last=%d entries=%d}", m.Queue, m.Epoch, m.OK, m.PrevIndex, m.Hint, m.Last, len(m.Entries))
}
