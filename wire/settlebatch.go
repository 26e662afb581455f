package wire

import (
	"fmt"
	"strings"
)

// SettleBatch carries several settles of one queue in one frame. Each
// item is a request of its own, with its own ReqID and its own Reply: the
// batch changes how settles travel, not what they mean, so a node handles
// it exactly as the same Settles sent one after another.
type SettleBatch struct {
	Queue string
	Items []SettleItem
}

// SettleItem is one settle of a SettleBatch.
type SettleItem struct {
	ReqID uint64
	ID    MessageID
	Lease uint64
	Nack  bool
}

// settleItemSize is an item's encoded size, the least a decoder must
// find per item it is told about.
const settleItemSize = 8 + 16 + 8 + 1

// Kind implements Message.
func (*SettleBatch) Kind() Kind { return KindSettleBatch }

// AppendBody implements Message.
func (m *SettleBatch) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint32(b, uint32(len(m.Items)))
	for _, it := range m.Items {
		b = AppendUint64(b, it.ReqID)
		b = appendMessageID(b, it.ID)
		b = AppendUint64(b, it.Lease)
		b = AppendBool(b, it.Nack)
	}
	return b
}

func decodeSettleBatch(d *Decoder) *SettleBatch {
	m := &SettleBatch{Queue: d.String()}
	n := d.Count(settleItemSize)
	m.Items = make([]SettleItem, 0, n)
	for range n {
		m.Items = append(m.Items, SettleItem{ReqID: d.Uint64(), ID: d.messageID(), Lease: d.Uint64(), Nack: d.Bool()})
	}
	return m
}

// Settles unpacks the batch into the Settles it stands for, in order.
func (m *SettleBatch) Settles() []*Settle {
	out := make([]*Settle, len(m.Items))
	for i, it := range m.Items {
		out[i] = &Settle{ReqID: it.ReqID, Queue: m.Queue, ID: it.ID, Lease: it.Lease, Nack: it.Nack}
	}
	return out
}

// String describes the batch.
func (m *SettleBatch) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{q=%s", m.Queue)
	for _, it := range m.Items {
		fmt.Fprintf(&b, " req=%d:%s/%d", it.ReqID, it.ID, it.Lease)
		if it.Nack {
			b.WriteString("/nack")
		}
	}
	b.WriteString("}")
	return b.String()
}

// RequestIDs returns every request a client message carries: its ReqID,
// one per item of a SettleBatch, or none for a message that is not a
// client request. Whoever answers for a node that cannot serve answers
// each of them.
func RequestIDs(m Message) []uint64 {
	if b, ok := m.(*SettleBatch); ok {
		ids := make([]uint64, len(b.Items))
		for i, it := range b.Items {
			ids[i] = it.ReqID
		}
		return ids
	}
	if id, ok := RequestID(m); ok {
		return []uint64{id}
	}
	return nil
}
