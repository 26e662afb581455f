package wire

// Purge asks for every message a queue holds when the owner takes the
// request to be removed for good: ready, delayed and leased ones alike.
// Messages published after it stay. The reply is OK once the purge is
// confirmed, as durable as a publish, and its Index is the log position
// of the purge: every message published at a lower index is gone.
//
// Token names the purge across retries, as a message ID names a publish:
// the owner remembers it for the queue's deduplication window and
// answers a retry with the first one's index instead of purging again
// (which would remove what was published in between). It is written only
// when set, so a request without one is the frame an older client sends.
type Purge struct {
	ReqID uint64
	Queue string
	Token MessageID
}

// Kind implements Message.
func (*Purge) Kind() Kind { return KindPurge }

// AppendBody implements Message.
func (m *Purge) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	if m.Token != (MessageID{}) {
		b = appendMessageID(b, m.Token)
	}
	return b
}

func decodePurge(d *Decoder) *Purge {
	m := &Purge{ReqID: d.Uint64(), Queue: d.String()}
	if d.More() {
		m.Token = d.messageID()
	}
	return m
}
