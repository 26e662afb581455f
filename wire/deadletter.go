package wire

import "fmt"

// Dead-lettering moves a message that reached its queue's delivery limit
// to the queue's dead-letter queue. The source queue's owner asks the
// dead-letter queue's owner to store the message under its own ID, so a
// repeated ask (a lost answer, a new source owner finishing the move) is
// stored once, as a retried publish is; once the store is confirmed, the
// source owner settles the message.

// MaxDeliveriesLimit bounds a queue's delivery limit: past a thousand
// attempts a message is not poison, something else is wrong.
const MaxDeliveriesLimit = 1000

// CheckDeadLetter reports why a queue named queue cannot move messages
// to deadLetter after maxDeliveries attempts. Both unset is a queue
// without a limit; one without the other is refused, since a limit with
// nowhere to go would have to drop messages.
func CheckDeadLetter(queue, deadLetter string, maxDeliveries uint32) error {
	switch {
	case deadLetter == "" && maxDeliveries == 0:
		return nil
	case deadLetter == "":
		return fmt.Errorf("a delivery limit of %d needs a dead-letter queue to move messages to", maxDeliveries)
	case maxDeliveries == 0 || maxDeliveries > MaxDeliveriesLimit:
		return fmt.Errorf("delivery limit %d is outside [1, %d]", maxDeliveries, MaxDeliveriesLimit)
	case deadLetter == queue:
		return fmt.Errorf("queue %s cannot be its own dead-letter queue", queue)
	case len(deadLetter) > MaxQueueNameLen:
		return fmt.Errorf("dead-letter queue name is %d bytes, over %d", len(deadLetter), MaxQueueNameLen)
	}
	return nil
}

// DeadLetter asks the owner of Queue, a dead-letter queue, to store a
// message that Source's owner gave up delivering. ID is the message's ID
// in the source queue and stays its ID: the store is deduplicated on it.
//
// SourceIncarnation and SourceIndex name the move: the source queue's
// incarnation and the index of the dead-letter record that began it.
// SettledThrough is the source's mark: every move it began at or below
// that index is settled there, so the dead-letter queue may forget them
// and refuses to store them again. The three are zero in an ask from a
// node that predates them, or for a move whose record's index the
// source no longer knows; such an ask is deduplicated by the window
// alone.
type DeadLetter struct {
	Queue             string
	Source            string
	ID                MessageID
	Payload           []byte
	SourceIncarnation uint64
	SourceIndex       uint64
	SettledThrough    uint64
}

// Kind implements Message.
func (*DeadLetter) Kind() Kind { return KindDeadLetter }

// AppendBody implements Message.
func (m *DeadLetter) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendString(b, m.Source)
	b = appendMessageID(b, m.ID)
	b = AppendBytes(b, m.Payload)
	if m.SourceIndex == 0 {
		return b // the form nodes that predate moves' names send
	}
	b = AppendUint64(b, m.SourceIncarnation)
	b = AppendUint64(b, m.SourceIndex)
	return AppendUint64(b, m.SettledThrough)
}

func decodeDeadLetter(d *Decoder) *DeadLetter {
	m := &DeadLetter{Queue: d.String(), Source: d.String(), ID: d.messageID(), Payload: d.Bytes()}
	if d.More() {
		m.SourceIncarnation, m.SourceIndex, m.SettledThrough = d.Uint64(), d.Uint64(), d.Uint64()
		if m.SourceIndex == 0 && d.err == nil {
			// A named move always has an index: the encoder drops the
			// block for index zero, so a sender that writes one anyway
			// would have its other two fields silently read back as set.
			d.err = fmt.Errorf("wire: dead-letter ask names a move at index 0")
		}
	}
	return m
}

// String describes the request without its payload.
func (m *DeadLetter) String() string {
	return fmt.Sprintf("{q=%s from=%s/%d@%d settled<=%d id=%s payload=%dB}", m.Queue, m.Source, m.SourceIncarnation, m.SourceIndex, m.SettledThrough, m.ID, len(m.Payload))
}

// DeadLetterReply answers a DeadLetter: StatusOK once the message is
// durable on the dead-letter queue's confirmation quorum; any other
// status means the source owner asks again later.
type DeadLetterReply struct {
	Source string
	ID     MessageID
	Status Status
	Detail string
}

// Kind implements Message.
func (*DeadLetterReply) Kind() Kind { return KindDeadLetterReply }

// AppendBody implements Message.
func (m *DeadLetterReply) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Source)
	b = appendMessageID(b, m.ID)
	b = AppendUint8(b, uint8(m.Status))
	return AppendString(b, m.Detail)
}

func decodeDeadLetterReply(d *Decoder) *DeadLetterReply {
	return &DeadLetterReply{Source: d.String(), ID: d.messageID(), Status: Status(d.Uint8()), Detail: d.String()}
}
