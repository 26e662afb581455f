package wire

import "fmt"

// CheckpointAsk is an owner asking a replica to checkpoint its queue at
// Cut, an index the owner has confirmed. The replica builds the
// checkpoint once its own log holds Cut and it knows Cut is confirmed,
// and answers with a CheckpointReceipt when the checkpoint is durable.
type CheckpointAsk struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
}

// Kind implements Message.
func (*CheckpointAsk) Kind() Kind { return KindCheckpointAsk }

// AppendBody implements Message.
func (m *CheckpointAsk) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	return AppendUint64(b, m.Cut)
}

func decodeCheckpointAsk(d *Decoder) *CheckpointAsk {
	return &CheckpointAsk{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64()}
}

// CheckpointReceipt says a replica's checkpoint at Cut is durable, and
// which state it holds (a digest of it): an owner certifies a cut only
// when every replica reports the same state there.
type CheckpointReceipt struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
	StateDigest []byte
}

// Kind implements Message.
func (*CheckpointReceipt) Kind() Kind { return KindCheckpointReceipt }

// AppendBody implements Message.
func (m *CheckpointReceipt) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.Cut)
	return AppendBytes(b, m.StateDigest)
}

func decodeCheckpointReceipt(d *Decoder) *CheckpointReceipt {
	return &CheckpointReceipt{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64(), StateDigest: d.Bytes()}
}

// Checkpoint carries a queue's state at Cut to a replica that needs
// history its sender no longer keeps: a follower behind the owner's first
// retained index, or a recovery candidate behind its source's. CutEpoch is
// the epoch of the record at Cut and Digest the history digest after it,
// so the receiver's log can go on from Cut as if it had held everything.
type Checkpoint struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
	CutEpoch    uint64
	Digest      []byte
	State       []byte
}

// Kind implements Message.
func (*Checkpoint) Kind() Kind { return KindCheckpoint }

// AppendBody implements Message.
func (m *Checkpoint) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.Cut)
	b = AppendUint64(b, m.CutEpoch)
	b = AppendBytes(b, m.Digest)
	return AppendBytes(b, m.State)
}

func decodeCheckpoint(d *Decoder) *Checkpoint {
	return &Checkpoint{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64(), CutEpoch: d.Uint64(),
		Digest: d.Bytes(), State: d.Bytes()}
}

// String describes the checkpoint without its state.
func (m *Checkpoint) String() string {
	return fmt.Sprintf("{q=%s inc=%x epoch=%d cut=%d/%d digest=%x state=%dB}", m.Queue, m.Incarnation, m.Epoch, m.Cut, m.CutEpoch,
		m.Digest[:min(6, len(m.Digest))], len(m.State))
}
