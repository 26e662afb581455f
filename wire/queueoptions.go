package wire

// SetQueueOptions changes an existing queue's delivery limit: DeadLetter
// and MaxDeliveries are its new dead-letter queue and limit, checked as
// at creation (see CheckDeadLetter); both unset removes the limit. Any
// node takes it, as it takes a create: the reply is OK once the
// metadata committed the change, NoQueue if the queue does not exist.
// Messages already on their way to a dead-letter queue finish their move
// there whatever the new setting says.
type SetQueueOptions struct {
	ReqID         uint64
	Queue         string
	DeadLetter    string
	MaxDeliveries uint32
}

// Kind implements Message.
func (*SetQueueOptions) Kind() Kind { return KindSetQueueOptions }

// AppendBody implements Message.
func (m *SetQueueOptions) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = AppendString(b, m.DeadLetter)
	return AppendUint32(b, m.MaxDeliveries)
}

func decodeSetQueueOptions(d *Decoder) *SetQueueOptions {
	return &SetQueueOptions{ReqID: d.Uint64(), Queue: d.String(), DeadLetter: d.String(), MaxDeliveries: d.Uint32()}
}
