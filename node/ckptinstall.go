package node

import (
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

// checkpointMessage is this replica's checkpoint as a message in its
// epoch.
func (r *replica) checkpointMessage() *wire.Checkpoint {
	c := r.ckpt
	return &wire.Checkpoint{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, Cut: c.cut, CutEpoch: c.cutEpoch,
		Digest: c.digest[:], State: c.state}
}

// sendCheckpoint sends a follower this owner's checkpoint, as a probe:
// the follower's answer says where to go on.
func (o *ownerState) sendCheckpoint(f *progress) {
	r := o.r
	if r.ckpt.cut == 0 || r.ckpt.cut+1 < r.log.FirstIndex() {
		panic(fmt.Sprintf("node: queue %s has no checkpoint to cover the log before %d", r.name, r.log.FirstIndex()))
	}
	f.probing, f.probeOutstanding, f.probeSentAt = true, true, r.n.env.Now()
	r.n.env.Send(f.id, r.checkpointMessage())
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
	case m.Cut <= r.ckpt.cut || m.Cut <= r.log.LastIndex() && m.Cut >= r.log.FirstIndex() && r.epochOf(m.Cut) == m.CutEpoch:
		done(nil)
		return
	case m.Cut < r.commitKnown:
		r.n.emit(event.NewCheckpointRefused(r.name, m.Cut, errCheckpointBelowCommit.Error()))
		done(errCheckpointBelowCommit)
		return
	}
	c := replicaCheckpoint{cut: m.Cut, cutEpoch: m.CutEpoch, installed: true, state: m.State}
	_, err := decodeState(r.name, m.State)
	if err != nil || len(m.Digest) != len(c.digest) {
		err = fmt.Errorf("a checkpoint from %s does not decode: %v", from, err)
		r.n.emit(event.NewCheckpointRefused(r.name, m.Cut, err.Error()))
		done(err)
		return
	}
	copy(c.digest[:], m.Digest)
	c.stateDigest = stateDigest(c.state)
	r.abortBuild()
	r.installing = true
	r.writeCheckpoint(c, func() {
		r.installing = false
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
