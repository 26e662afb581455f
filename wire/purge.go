package wire

// Purge asks for every message a queue holds when the owner takes the
// request to be removed for good: ready, delayed and leased ones alike.
// Messages published after it stay. The reply is OK once the purge is
// confirmed, as durable as a publish, and its Index is the log position
// of the purge: every message published at a lower index is gone.
type Purge struct {
	ReqID uint64
	Queue string
}

// Kind implements Message.
func (*Purge) Kind() Kind { return KindPurge }

// AppendBody implements Message.
func (m *Purge) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	return AppendString(b, m.Queue)
}

func decodePurge(d *Decoder) *Purge {
	return &Purge{ReqID: d.Uint64(), Queue: d.String()}
}
