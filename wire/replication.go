package wire

import "fmt"

// Entry is one queue log record as it travels between replicas: its
// storage type and its body, byte for byte, so every replica's log and
// digest come out identical.
type Entry struct {
	Type uint8
	Body []byte
}

// Append carries log entries from a queue's owner to a follower. The
// follower accepts them only if its own entry at PrevIndex was written in
// PrevEpoch, which proves its log agrees with the owner's up to there.
// An Append with no entries is a heartbeat and a probe.
type Append struct {
	Queue string
	// Incarnation names the queue's incarnation; a replica of another
	// incarnation (an older queue of the same name) ignores the append.
	Incarnation uint64
	Epoch       uint64
	PrevIndex   uint64
	PrevEpoch   uint64
	Commit      uint64
	// Stamp is the owner's monotonic clock when it sent the append; the
	// follower echoes it, which lets the owner time its delivery lease
	// from when it asked, not from when an answer happened to arrive.
	Stamp   uint64
	Entries []Entry
	// Rest says the owner has gone quiet on purpose: its queue is idle,
	// and it sends no heartbeats until a request or new work wakes it,
	// so a follower that stops hearing from it holds nothing back for it.
	// It travels only when set, after the entries, so an append without
	// it is encoded as before.
	Rest bool
	// Delivered carries, for a queue with a delivery limit, the delivery
	// counts of the messages the owner sent since its last append to
	// this follower. Counts live in the owner's memory; a follower keeps
	// the latest it heard, so that if the owner dies its successor does
	// not count from zero again. It travels only when it holds any, after
	// Rest.
	Delivered []DeliveryCount
}

// Kind implements Message.
func (*Append) Kind() Kind { return KindAppend }

// AppendBody implements Message.
func (m *Append) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.PrevIndex)
	b = AppendUint64(b, m.PrevEpoch)
	b = AppendUint64(b, m.Commit)
	b = AppendUint64(b, m.Stamp)
	b = AppendUint32(b, uint32(len(m.Entries)))
	for _, e := range m.Entries {
		b = AppendUint8(b, e.Type)
		b = AppendBytes(b, e.Body)
	}
	if m.Rest || len(m.Delivered) > 0 {
		b = AppendBool(b, m.Rest)
	}
	if len(m.Delivered) > 0 {
		b = appendDeliveryCounts(b, m.Delivered)
	}
	return b
}

func (m *Append) bodySizeMax() int {
	n := 57 + len(m.Queue) + 4 + deliveryCountSize*len(m.Delivered)
	for _, e := range m.Entries {
		n += 5 + len(e.Body)
	}
	return n
}

func decodeAppend(d *Decoder) *Append {
	m := &Append{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), PrevIndex: d.Uint64(), PrevEpoch: d.Uint64(), Commit: d.Uint64(), Stamp: d.Uint64()}
	n := d.Count(5)
	if n > 0 {
		m.Entries = make([]Entry, n)
		for i := range m.Entries {
			m.Entries[i] = Entry{Type: d.Uint8(), Body: d.Bytes()}
		}
	}
	if d.More() {
		m.Rest = d.Bool()
	}
	if d.More() {
		m.Delivered = decodeDeliveryCounts(d)
	}
	return m
}

// String describes the append without entry bodies.
func (m *Append) String() string {
	rest := ""
	if m.Rest {
		rest = " rest"
	}
	if len(m.Delivered) > 0 {
		rest += fmt.Sprintf(" counts=%d", len(m.Delivered))
	}
	return fmt.Sprintf("{q=%s inc=%x epoch=%d prev=%d/%d commit=%d entries=%d%s}", m.Queue, m.Incarnation, m.Epoch, m.PrevIndex, m.PrevEpoch, m.Commit, len(m.Entries), rest)
}

// AppendReply is a follower's answer. OK says the entries (or the probe)
// matched; Match is then the last index known to agree with the owner.
// Last is the follower's last index, a hint for where to resume after a
// mismatch, and Durable its last index on disk. Epoch is the highest
// epoch the follower has seen; a reply with a higher epoch than the
// owner's tells the owner it is stale.
type AppendReply struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	OK          bool
	Match       uint64
	Last        uint64
	Durable     uint64
	// Owner is the owner of Epoch as the follower knows it: a stale owner
	// learns from a refusal whom its clients should go to.
	Owner uint32
	// Stamp echoes the Stamp of the latest append the follower took.
	Stamp uint64
	// DiskFull says the follower's node is short of space: its owner
	// stops taking new messages, as it would for its own disk, since the
	// follower stores every one it takes. Sent only when set, so a reply
	// from a follower with room reads as before on older nodes.
	DiskFull bool
}

// Kind implements Message.
func (*AppendReply) Kind() Kind { return KindAppendReply }

// AppendBody implements Message.
func (m *AppendReply) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendBool(b, m.OK)
	b = AppendUint64(b, m.Match)
	b = AppendUint64(b, m.Last)
	b = AppendUint64(b, m.Durable)
	b = AppendUint32(b, m.Owner)
	b = AppendUint64(b, m.Stamp)
	if m.DiskFull {
		b = AppendBool(b, true)
	}
	return b
}

func decodeAppendReply(d *Decoder) *AppendReply {
	m := &AppendReply{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), OK: d.Bool(), Match: d.Uint64(), Last: d.Uint64(), Durable: d.Uint64(), Owner: d.Uint32(), Stamp: d.Uint64()}
	if d.More() {
		m.DiskFull = d.Bool()
	}
	return m
}

// String describes the reply.
func (m *AppendReply) String() string {
	full := ""
	if m.DiskFull {
		full = " disk-full"
	}
	return fmt.Sprintf("{q=%s epoch=%d ok=%t match=%d last=%d durable=%d%s}", m.Queue, m.Epoch, m.OK, m.Match, m.Last, m.Durable, full)
}

// Raft carries one etcd raft message between metadata voters, marshalled
// by raft's own protobuf encoding.
type Raft struct {
	Data []byte
}

// Kind implements Message.
func (*Raft) Kind() Kind { return KindRaft }

// AppendBody implements Message.
func (m *Raft) AppendBody(b []byte) []byte { return AppendBytes(b, m.Data) }

func decodeRaft(d *Decoder) *Raft { return &Raft{Data: d.Bytes()} }

// String describes the message by size only.
func (m *Raft) String() string { return fmt.Sprintf("{bytes=%d}", len(m.Data)) }

// Ping asks a node to prove it is alive; Pong answers with the same Seq.
// The metadata leader's failure detector uses them, and a follower uses a
// Ping to check on a leader whose connection reset.
type Ping struct {
	Seq  uint64
	Term uint64
}

// Kind implements Message.
func (*Ping) Kind() Kind { return KindPing }

// AppendBody implements Message.
func (m *Ping) AppendBody(b []byte) []byte { return AppendUint64(AppendUint64(b, m.Seq), m.Term) }

func decodePing(d *Decoder) *Ping { return &Ping{Seq: d.Uint64(), Term: d.Uint64()} }

// Pong answers a Ping.
type Pong struct {
	Seq uint64
}

// Kind implements Message.
func (*Pong) Kind() Kind { return KindPong }

// AppendBody implements Message.
func (m *Pong) AppendBody(b []byte) []byte { return AppendUint64(b, m.Seq) }

func decodePong(d *Decoder) *Pong { return &Pong{Seq: d.Uint64()} }

// MetaLostLog tells the metadata leader that this member's raft log ends
// at Last although the leader counted it as holding entries through
// Commit: its disk lost what it had acknowledged. The leader's raft never
// lowers what it believes a follower holds, so it hands leadership to
// another voter; the next leader probes this member from scratch.
type MetaLostLog struct {
	Term   uint64
	Last   uint64
	Commit uint64
}

// Kind implements Message.
func (*MetaLostLog) Kind() Kind { return KindMetaLostLog }

// AppendBody implements Message.
func (m *MetaLostLog) AppendBody(b []byte) []byte {
	return AppendUint64(AppendUint64(AppendUint64(b, m.Term), m.Last), m.Commit)
}

func decodeMetaLostLog(d *Decoder) *MetaLostLog {
	return &MetaLostLog{Term: d.Uint64(), Last: d.Uint64(), Commit: d.Uint64()}
}

// MetaCommitted tells a metadata member that asked for a vote that the
// sender's log is committed through Index, whose entry has term Term.
// etcd raft takes a commit index only from a leader; a member left
// without one, whose durable commit lags its log, may otherwise count
// votes by a configuration the group has already left (see the node's
// learnCommit).
type MetaCommitted struct {
	Index uint64
	Term  uint64
}

// Kind implements Message.
func (*MetaCommitted) Kind() Kind { return KindMetaCommitted }

// AppendBody implements Message.
func (m *MetaCommitted) AppendBody(b []byte) []byte {
	return AppendUint64(AppendUint64(b, m.Index), m.Term)
}

func decodeMetaCommitted(d *Decoder) *MetaCommitted {
	return &MetaCommitted{Index: d.Uint64(), Term: d.Uint64()}
}
