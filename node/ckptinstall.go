package node

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// Moving a checkpoint to a replica that needs history its sender no
// longer keeps: the owner to a follower whose next index lies before the
// owner's first retained record (a replacement starts empty), and a
// recovery source to a candidate in the same position. The receiver makes
// the checkpoint durable, then replaces its log with an empty one that
// starts right after the cut; the sender goes on from there.

// checkpointChunk is the chunk of this replica's checkpoint that starts at
// offset (clamped to its length), as a message in its epoch; false when
// the checkpoint could not be read (the replica is fenced).
func (r *replica) checkpointChunk(offset uint64) (*wire.Checkpoint, bool) {
	c := r.ckpt
	state := r.checkpointWireState()
	if state == nil {
		return nil, false
	}
	total := uint64(len(state))
	offset = min(offset, total)
	end := min(total, offset+uint64(r.n.cfg.CheckpointChunkBytes))
	return &wire.Checkpoint{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, Cut: c.cut, CutEpoch: c.cutEpoch,
		Digest: c.digest[:], Offset: offset, Total: total, State: state[offset:end]}, true
}

// sendCheckpointChunk sends to the chunk of the checkpoint at offset.
func (r *replica) sendCheckpointChunk(to NodeID, offset uint64) {
	if m, ok := r.checkpointChunk(offset); ok {
		r.n.env.Send(to, m)
	}
}

// sendCheckpoint sends a follower the next chunk of this owner's
// checkpoint, as a probe: the follower's answer says where to go on (a
// CheckpointAck for the next chunk, an AppendReply once it holds it all).
// A transfer of an older checkpoint starts over with the current one.
func (o *ownerState) sendCheckpoint(f *progress) {
	r := o.r
	if r.ckpt.cut == 0 || r.ckpt.cut+1 < r.log.FirstIndex() {
		panic(fmt.Sprintf("node: queue %s has no checkpoint to cover the log before %d", r.name, r.log.FirstIndex()))
	}
	if f.ckptCut != r.ckpt.cut {
		f.ckptCut, f.ckptOffset = r.ckpt.cut, 0
	}
	f.probing, f.probeOutstanding, f.probeSentAt = true, true, r.n.env.Now()
	r.sendCheckpointChunk(f.id, f.ckptOffset)
}

// onCheckpointAck sends the chunk a receiver asks for next: as the owner,
// to a follower that still needs the checkpoint; as a sealed recovery
// source, to the candidate of the epoch it is sealed at. A receiver that
// asks for a checkpoint this replica no longer holds gets the current one
// from its start.
func (n *Node) onCheckpointAck(from NodeID, m *wire.CheckpointAck) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.present() || m.Epoch != r.epoch || r.ckpt.cut == 0 {
		return
	}
	offset := m.Received
	if m.Cut != r.ckpt.cut {
		offset = 0
	}
	if r.hasOwnerSide() {
		o := r.own
		f := o.progressOf(from)
		if f == nil || f.next >= r.log.FirstIndex() {
			return // it no longer needs the checkpoint
		}
		f.ckptCut, f.ckptOffset = r.ckpt.cut, offset
		o.sendCheckpoint(f)
		return
	}
	if r.role == roleFollower && from == r.follow.epochOwner {
		r.sendCheckpointChunk(from, offset)
	}
}

// checkpointAssembly is a chunked checkpoint a replica is receiving: the
// first chunk's fields, with State the bytes received so far.
type checkpointAssembly struct {
	from NodeID
	msg  wire.Checkpoint
}

// sameTransfer reports whether m is a chunk of the checkpoint a is
// assembling.
func (a *checkpointAssembly) sameTransfer(from NodeID, m *wire.Checkpoint) bool {
	return a != nil && a.from == from && a.msg.Epoch == m.Epoch && a.msg.Cut == m.Cut && a.msg.CutEpoch == m.CutEpoch &&
		a.msg.Total == m.Total && bytes.Equal(a.msg.Digest, m.Digest)
}

// assembleCheckpoint takes one chunk of a checkpoint and returns the whole
// checkpoint once every chunk is in. The receiver drives the transfer: it
// asks for the next chunk after each one it appends, so one request is
// outstanding at a time. A chunk at offset 0 either starts a transfer or,
// for the transfer under way, asks where it stands (a sender that heard
// nothing for a while sends one): the answer is a request for the chunk
// after what is held, or the whole checkpoint again if it is all here.
// Any other chunk out of place is a duplicate or follows a lost one, and
// is dropped; the sender's next offset-0 chunk finds the place again.
func (r *replica) assembleCheckpoint(from NodeID, m *wire.Checkpoint) (*wire.Checkpoint, bool) {
	a := r.n.receiving[r.name]
	same := a.sameTransfer(from, m)
	switch {
	case m.Offset == 0 && m.Last():
		delete(r.n.receiving, r.name)
		return m, true
	case m.Offset == 0 && !same:
		a = &checkpointAssembly{from: from, msg: *m}
		a.msg.State = append([]byte(nil), m.State...)
		r.n.receiving[r.name] = a
	case same && m.Offset == uint64(len(a.msg.State)):
		a.msg.State = append(a.msg.State, m.State...)
	case same && m.Offset == 0:
		// Where the transfer stands: answered below.
	default:
		return nil, false
	}
	if held := uint64(len(a.msg.State)); held < a.msg.Total {
		r.n.env.Send(from, &wire.CheckpointAck{Queue: r.name, Incarnation: r.inc, Epoch: m.Epoch, Cut: m.Cut, Received: held})
		return nil, false
	}
	whole := a.msg
	return &whole, true
}

// errCheckpointBelowCommit refuses a checkpoint that would replace records
// this replica was told are confirmed beyond its cut.
var errCheckpointBelowCommit = errors.New("the checkpoint's cut lies below the known commit")

// onCheckpoint takes a checkpoint: as a recovery candidate, from the
// source it is copying; as a follower, from the owner of its epoch.
func (n *Node) onCheckpoint(from NodeID, m *wire.Checkpoint) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.present() {
		return
	}
	if m.Epoch >= r.epoch {
		whole, ok := r.assembleCheckpoint(from, m)
		if !ok {
			if r.role == roleCandidate && r.own.recovery != nil {
				r.own.stepRecovery(recovery.ChunkReceived{Facts: r.own.recoveryFacts(), From: uint32(from)})
			}
			return
		}
		m = whole
	}
	if r.role == roleCandidate {
		if r.own.recovery != nil {
			r.own.stepRecovery(recovery.CheckpointOffered{Facts: r.own.recoveryFacts(), From: uint32(from), Msg: m})
		}
		return
	}
	switch {
	case m.Epoch < r.epoch:
		r.sendReply(from, false, 0, r.log.LastIndex())
		return
	case m.Epoch > r.epoch:
		r.becomeFollower(from)
		r.follow.epochOwner = from
		r.adoptEpoch(m.Epoch)
	case r.hasOwnerSide():
		return
	case r.follow.epochOwner != 0 && r.follow.epochOwner != from:
		n.emit(event.NewQueueSecondWriter(m.Queue, uint32(from), m.Epoch))
		return
	default:
		r.follow.epochOwner = from
	}
	epoch := r.epoch
	r.takeCheckpoint(from, m, func(err error) {
		if err != nil || r.epoch != epoch {
			return
		}
		r.follow.match = max(r.follow.match, m.Cut)
		r.sendReply(from, true, r.follow.match, r.log.LastIndex())
	})
}

// takeCheckpoint makes m this replica's checkpoint and resets the log to
// go on after its cut, then calls done. A replica whose log already holds
// the cut in the same epoch keeps its log. It refuses a checkpoint below
// what it knows was confirmed, and one that does not decode.
func (r *replica) takeCheckpoint(from NodeID, m *wire.Checkpoint, done func(error)) {
	switch {
	case r.ckptBusy || r.installing:
		return // the sender asks again
	}
	delete(r.n.receiving, r.name) // taken or refused: a new transfer starts over
	switch {
	case m.Cut <= r.ckpt.cut || m.Cut <= r.log.LastIndex() && m.Cut >= r.log.FirstIndex() && r.epochOf(m.Cut) == m.CutEpoch:
		done(nil)
		return
	case m.Cut < r.commitKnown:
		r.n.emit(event.NewCheckpointRefused(r.name, m.Cut, errCheckpointBelowCommit.Error()))
		done(errCheckpointBelowCommit)
		return
	}
	c := replicaCheckpoint{cut: m.Cut, cutEpoch: m.CutEpoch, installed: true, state: m.State}
	s, err := decodeState(r.name, m.State, nil)
	if err == nil {
		err = s.checkWindow()
	}
	if err != nil || len(m.Digest) != len(c.digest) {
		err = fmt.Errorf("a checkpoint from %s does not decode: %v", from, err)
		r.n.emit(event.NewCheckpointRefused(r.name, m.Cut, err.Error()))
		done(err)
		return
	}
	copy(c.digest[:], m.Digest)
	c.stateDigest = stateDigest(s)
	r.abortBuild()
	r.installing = true
	r.writeCheckpoint(c, func() {
		r.installing = false
		// The window now sits in the checkpoint: the journal is no one's.
		if err := r.dropJournal(); err != nil {
			r.n.env.Halt(fmt.Sprintf("queue %s: %v", r.name, err))
			return
		}
		if err := r.resetLog(); err != nil {
			if errors.Is(err, storage.ErrCorrupt) {
				r.fence(err)
			} else {
				r.n.env.Halt(fmt.Sprintf("queue %s: resetting its log after a checkpoint: %v", r.name, err))
			}
			return
		}
		r.noteCommit(c.cut)
		r.n.emit(event.NewCheckpointInstalled(r.name, c.cut, uint32(from)))
		done(nil)
	})
}

// takeCheckpointForRecovery carries out a recovery's TakeCheckpoint and
// answers the core as it answers a page.
func (o *ownerState) takeCheckpointForRecovery(c *recovery.Core, a recovery.TakeCheckpoint) {
	r := o.r
	r.takeCheckpoint(NodeID(a.From), a.Msg, func(err error) {
		if o.recovery == c {
			o.perform(c, c.Step(recovery.PageAppended{Facts: o.recoveryFacts(), Err: err}))
		}
	})
}
