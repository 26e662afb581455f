package wire

// The counter messages belong to the trivial replicated counter that
// exercises the node environment end to end. The counter leader appends
// increments and streams them; followers persist and acknowledge.

// CounterAppend carries Count consecutive increments starting at
// FirstIndex. The value of increment i is i itself, so logs that agree on
// length agree on content.
type CounterAppend struct {
	FirstIndex uint64
	Count      uint32
}

// Kind implements Message.
func (*CounterAppend) Kind() Kind { return KindCounterAppend }

// AppendBody implements Message.
func (m *CounterAppend) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.FirstIndex)
	return AppendUint32(b, m.Count)
}

func decodeCounterAppend(d *Decoder) *CounterAppend {
	return &CounterAppend{FirstIndex: d.Uint64(), Count: d.Uint32()}
}

// CounterAck reports a follower's log: the last index it holds and the
// last index it has made durable. Only DurableIndex counts toward
// confirmation. Probed is set on answers to a CounterProbe; only those
// trigger a resend, so appends already in flight are not sent twice.
type CounterAck struct {
	LastIndex    uint64
	DurableIndex uint64
	Probed       bool
}

// Kind implements Message.
func (*CounterAck) Kind() Kind { return KindCounterAck }

// AppendBody implements Message.
func (m *CounterAck) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.LastIndex)
	b = AppendUint64(b, m.DurableIndex)
	return AppendBool(b, m.Probed)
}

func decodeCounterAck(d *Decoder) *CounterAck {
	return &CounterAck{LastIndex: d.Uint64(), DurableIndex: d.Uint64(), Probed: d.Bool()}
}

// CounterProbe is the leader's heartbeat: it asks a follower to report its
// log so the leader can resend what the follower lacks.
type CounterProbe struct {
	LeaderLast uint64
}

// Kind implements Message.
func (*CounterProbe) Kind() Kind { return KindCounterProbe }

// AppendBody implements Message.
func (m *CounterProbe) AppendBody(b []byte) []byte {
	return AppendUint64(b, m.LeaderLast)
}

func decodeCounterProbe(d *Decoder) *CounterProbe {
	return &CounterProbe{LeaderLast: d.Uint64()}
}
