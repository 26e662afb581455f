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
// when every replica reports the same state there. Instance names the
// sender's process, so that an owner handing the queue to the sender can
// name that process as the next epoch's writer in its plan; zero (an
// older sender) names none.
type CheckpointReceipt struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
	StateDigest []byte
	Instance    uint64
}

// Kind implements Message.
func (*CheckpointReceipt) Kind() Kind { return KindCheckpointReceipt }

// AppendBody implements Message.
func (m *CheckpointReceipt) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.Cut)
	b = AppendBytes(b, m.StateDigest)
	if m.Instance != 0 {
		// Written only when known, so a receipt without it is the frame
		// an older node sends and takes.
		b = AppendUint64(b, m.Instance)
	}
	return b
}

func decodeCheckpointReceipt(d *Decoder) *CheckpointReceipt {
	m := &CheckpointReceipt{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64(), StateDigest: d.Bytes()}
	if d.More() {
		m.Instance = d.Uint64()
	}
	return m
}

// Checkpoint carries a queue's state at Cut to a replica that needs
// history its sender no longer keeps: a follower behind the owner's first
// retained index, or a recovery candidate behind its source's. CutEpoch is
// the epoch of the record at Cut and Digest the history digest after it,
// so the receiver's log can go on from Cut as if it had held everything.
//
// A state larger than a frame travels in chunks: State holds the bytes
// from Offset on of a state Total bytes long, and the receiver asks for
// each next chunk with a CheckpointAck. A state that fits in one frame is
// the chunk at offset 0 with Total equal to its length.
type Checkpoint struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
	CutEpoch    uint64
	Digest      []byte
	Offset      uint64
	Total       uint64
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
	b = AppendUint64(b, m.Offset)
	b = AppendUint64(b, m.Total)
	return AppendBytes(b, m.State)
}

func decodeCheckpoint(d *Decoder) *Checkpoint {
	m := &Checkpoint{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64(), CutEpoch: d.Uint64(),
		Digest: d.Bytes(), Offset: d.Uint64(), Total: d.Uint64(), State: d.Bytes()}
	if d.err == nil && (m.Offset > m.Total || uint64(len(m.State)) > m.Total-m.Offset) {
		d.err = fmt.Errorf("wire: checkpoint chunk of %d bytes at offset %d overruns its total of %d", len(m.State), m.Offset, m.Total)
	}
	return m
}

// Last reports whether the chunk ends the state.
func (m *Checkpoint) Last() bool { return m.Offset+uint64(len(m.State)) == m.Total }

// String describes the checkpoint without its state.
func (m *Checkpoint) String() string {
	return fmt.Sprintf("{q=%s inc=%x epoch=%d cut=%d/%d digest=%x state=%dB@%d/%d}", m.Queue, m.Incarnation, m.Epoch, m.Cut, m.CutEpoch,
		m.Digest[:min(6, len(m.Digest))], len(m.State), m.Offset, m.Total)
}

// CheckpointAck tells the sender of a chunked checkpoint how many bytes
// of its state at Cut (in the sender's epoch Epoch) the receiver holds,
// so that the sender goes on from there; Received 0 asks it to start
// again.
type CheckpointAck struct {
	Queue       string
	Incarnation uint64
	Epoch       uint64
	Cut         uint64
	Received    uint64
}

// Kind implements Message.
func (*CheckpointAck) Kind() Kind { return KindCheckpointAck }

// AppendBody implements Message.
func (m *CheckpointAck) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = AppendUint64(b, m.Incarnation)
	b = AppendUint64(b, m.Epoch)
	b = AppendUint64(b, m.Cut)
	return AppendUint64(b, m.Received)
}

func decodeCheckpointAck(d *Decoder) *CheckpointAck {
	return &CheckpointAck{Queue: d.String(), Incarnation: d.Uint64(), Epoch: d.Uint64(), Cut: d.Uint64(), Received: d.Uint64()}
}
