package wire

// Probe asks a node to check on Target for the sender: it pings Target
// itself and, once Target answers, sends the sender a ProbeAck carrying
// the sender's Seq. The metadata leader sends it to its other peers while
// it verifies a peer that went quiet or whose connection reset: when only
// the leader's own link to the peer stalls, another node still hears it,
// and the peer is not failed over for its link's sake.
type Probe struct {
	Seq    uint64
	Target uint64
}

// Kind implements Message.
func (*Probe) Kind() Kind { return KindProbe }

// AppendBody implements Message.
func (m *Probe) AppendBody(b []byte) []byte { return AppendUint64(AppendUint64(b, m.Seq), m.Target) }

func decodeProbe(d *Decoder) *Probe { return &Probe{Seq: d.Uint64(), Target: d.Uint64()} }

// ProbeAck tells a Probe's sender that Target answered a ping sent after
// the Probe arrived; Seq is the Probe's.
type ProbeAck struct {
	Seq    uint64
	Target uint64
}

// Kind implements Message.
func (*ProbeAck) Kind() Kind { return KindProbeAck }

// AppendBody implements Message.
func (m *ProbeAck) AppendBody(b []byte) []byte {
	return AppendUint64(AppendUint64(b, m.Seq), m.Target)
}

func decodeProbeAck(d *Decoder) *ProbeAck { return &ProbeAck{Seq: d.Uint64(), Target: d.Uint64()} }
