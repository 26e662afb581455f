package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Checkpoint certification, on the owner. When enough has been confirmed
// since the last certified cut, the owner picks its commit index as the
// next cut, asks every replica (itself included) to checkpoint there, and
// collects their receipts. When every replica of the set reports the same
// state digest, it asks the metadata to certify the cut; every replica
// then drops the log segments below it. A replica that reports another
// state is reported and the cut is abandoned: two replicas that applied
// the same confirmed history to different states is a bug, and no one
// compacts on the strength of it.
//
// A replica the metadata lists as lost (fenced for damaged storage) is
// left out of the cut: it answers no ask, holds nothing any recovery
// reads, and its replacement copies the queue from a healthy replica, so
// waiting for it would only stop compaction until a node outside the set
// could take its place, which in a cluster of three never happens.

// certifyResendTicks is how long, in owner ticks, an owner waits for
// receipts before asking again; certifyGiveUpTicks when it abandons the
// cut (a replica that is down cannot answer, and the next cut will ask
// again).
const (
	certifyResendTicks = 25
	certifyGiveUpTicks = 250
)

// certifyAttempt is the owner's attempt to certify one cut.
type certifyAttempt struct {
	cut      uint64
	members  []NodeID
	receipts []certReceipt
	started  uint64 // owner tick
	asked    uint64 // owner tick of the latest asks
	proposed bool
}

// certReceipt is one replica's report of its checkpoint at the cut.
type certReceipt struct {
	from   NodeID
	digest [32]byte
}

// maybeCertify starts a certification once enough records or bytes were
// confirmed since the last certified cut. One attempt at a time.
func (o *ownerState) maybeCertify() {
	r := o.r
	cfg := r.n.cfg
	if cfg.CheckpointRecords < 0 || o.certify != nil || !r.serving() {
		return
	}
	q := r.n.meta.state.queues[r.name]
	if q == nil || q.Incarnation != r.inc || q.State != QueueActive || len(q.Prior) > 0 {
		return
	}
	// A checkpoint this replica holds past the certified cut was built
	// for a cut never certified: the owner that asked for it failed
	// first, or a replica did not answer in time. It is certified again
	// at once, whatever the thresholds say: until a cut at or past it is
	// certified no replica may compact below it, and replicas that hold
	// it answer at once or build on from it at the cost of the records
	// since. An attempt that gives up is followed by the next.
	held := max(r.ckpt.cut, r.ckptWant)
	pending := held > q.CheckpointCut && o.commit >= held
	base := max(q.CheckpointCut, o.lastCertifyCut)
	if o.commit <= base && !pending {
		return
	}
	now := r.n.env.Now()
	if o.certifyFactor == 0 {
		o.certifyFactor, o.lastCertifyAt = jitterFactor(r.n.env.Rand().Float64()), now
	}
	f := o.certifyFactor
	// A settles record counts once per message it settles: the acks of a
	// turn share one record, yet each changes the state a checkpoint lets
	// the log forget.
	records := max(float64(o.commit-base), float64(o.appendedChanges))
	due := pending || records >= float64(cfg.CheckpointRecords)*f || float64(o.appendedBytes) >= float64(cfg.CheckpointBytes)*f ||
		float64(now.Sub(o.lastCertifyAt)) >= float64(cfg.CheckpointInterval)*f || o.reclaimsSpace()
	if !due {
		return
	}
	cut, why := o.certifyCut(q)
	o.startCertify(cut, why)
}

// certifyCut picks the cut of the next attempt: the owner's commit index,
// unless this replica holds or builds a checkpoint past the certified cut,
// less than a checkpoint's worth of records behind the commit index, that
// no attempt of this epoch has asked for yet. Then that cut: every
// replica was asked for it by an owner of an earlier epoch, so most hold
// it already or are building it, and a certificate there needs only the
// receipts of those that do not. Asking for the commit index instead
// makes every replica build again at each epoch change: in cairn-bench
// history, whose owner failed every 2 to 3 s, the replicas ended the run
// holding checkpoints at three different cuts, none certified for over a
// minute, and the log since the last certificate was kept whole. An
// attempt at a reused cut that gives up is followed by one at the commit
// index, so a cut no replica can reach any more stalls nothing for longer
// than one attempt. A cut further behind is not reused: building anew
// costs less than certifying a cut whose log still holds a checkpoint's
// worth, which the next attempt would ask to build at once anyway.
func (o *ownerState) certifyCut(q *QueueMeta) (uint64, string) {
	r := o.r
	if !o.reusedCut {
		held := max(r.ckpt.cut, r.ckptWant)
		if held > q.CheckpointCut && held <= o.commit && o.commit-held < uint64(r.n.cfg.CheckpointRecords) {
			o.reusedCut = true
			return held, "reused"
		}
	}
	return o.commit, "commit"
}

// reclaimsSpace reports whether a checkpoint at the commit index would
// give a replica short of space much of it back: this node or a
// follower of the queue refuses new messages for want of room, and the
// queue's state now takes at most half of what this replica keeps for
// it (its checkpoint and its log), and a segment less at least.
//
// Only a checkpoint gives space back, and a disk that refuses new
// messages gets few new records to count towards the next one: a queue
// that consumers drained, or a purge emptied, in fewer records than the
// cadence asks for would otherwise keep its old state, and its node
// refuse messages and queues until the interval trigger (seed 290617 of
// the long sweep: a purge emptied a queue, its checkpoint still held
// 199 KB of the purged messages, and the 96 KB quota refused its
// dead-letter queue's creation for the rest of the run). Asking for half
// keeps this to a few checkpoints while a queue drains, each at least
// halving what it keeps; asking for a segment spares a nearly empty
// queue a checkpoint at each record, which would give back nothing
// compaction can drop.
func (o *ownerState) reclaimsSpace() bool {
	r := o.r
	if !r.n.disk.full && !slices.ContainsFunc(o.followers, func(f *progress) bool { return f.diskFull }) {
		return false
	}
	return reclaims(o.state.messageBytes, r.keptBytes(), r.n.cfg.SegmentSize)
}

// reclaims reports whether a checkpoint that holds state bytes is worth
// building in place of what a replica keeps: it holds at most half of
// it, and at least a log segment less.
func reclaims(state, kept, segment int64) bool {
	return 2*state <= kept && kept-state >= segment
}

// keptBytes is what the replica keeps on disk for its queue: its log and
// its checkpoint.
func (r *replica) keptBytes() int64 {
	kept := r.checkpointBytes()
	if r.log != nil {
		kept += r.log.RetainedBytes()
	}
	return kept
}

// startCertify begins certifying cut, at most the owner's commit index;
// why says where the cut comes from (event.NewCheckpointAsked).
func (o *ownerState) startCertify(cut uint64, why string) {
	r := o.r
	if cut > o.commit {
		panic(fmt.Sprintf("node: queue %s certifies cut %d past its commit index %d", r.name, cut, o.commit))
	}
	now := r.n.env.Now()
	o.lastCertifyCut, o.appendedBytes, o.appendedChanges, o.lastCertifyAt = max(o.lastCertifyCut, cut), 0, 0, now
	o.certifyFactor = jitterFactor(r.n.env.Rand().Float64())
	members := certifyMembers(r.members, r.n.meta.state.queues[r.name])
	if bugs.Active(bugs.CertifyWaitsForLost) {
		members = slices.Clone(r.members) // planted: a fenced replica's receipt is awaited
	}
	o.certify = &certifyAttempt{cut: cut, members: members, started: o.ticks}
	r.n.emit(event.NewCheckpointAsked(r.name, cut, r.epoch, why))
	o.askCheckpoints()
}

// certifyMembers lists the replicas a cut is asked of: members without
// those q lists as lost.
func certifyMembers(members []NodeID, q *QueueMeta) []NodeID {
	out := slices.Clone(members)
	if q != nil {
		out = slices.DeleteFunc(out, func(id NodeID) bool { return containsSorted(q.Lost, id) })
	}
	return out
}

// jitterFactor maps a uniform draw in [0, 1) to the factor every
// checkpoint threshold is scaled by: [0.9, 1.1).
func jitterFactor(u float64) float64 { return 0.9 + 0.2*u }

// askCheckpoints asks every replica that has not answered yet.
func (o *ownerState) askCheckpoints() {
	r, a := o.r, o.certify
	a.asked = o.ticks
	for _, id := range a.members {
		if slices.ContainsFunc(a.receipts, func(c certReceipt) bool { return c.from == id }) {
			continue
		}
		if id == r.n.cfg.ID {
			r.askCheckpoint(id, a.cut)
			continue
		}
		r.n.env.Send(id, &wire.CheckpointAsk{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, Cut: a.cut})
	}
}

// certifyTick asks again for missing receipts, and gives up on a cut that
// cannot be certified.
func (o *ownerState) certifyTick() {
	a := o.certify
	switch {
	case a == nil || a.proposed:
	case o.ticks-a.started > certifyGiveUpTicks:
		o.certify = nil
	case o.ticks-a.asked >= certifyResendTicks:
		o.askCheckpoints()
	}
}

// noteReceipt counts one replica's receipt for the cut being certified,
// and proposes the certificate once every replica reported the same
// state.
//
// An owner cut off from its quorum counts no receipt. Its peers may have
// moved the queue to a newer epoch behind its back and replaced a replica
// that answered, and that replica may have dropped its files, checkpoint
// included: a receipt that reaches such an owner late (it was paused, or
// the link held it) vouches for a checkpoint that may no longer exist, and
// the owner's metadata may not know of the newer epoch yet. While it still
// hears from a quorum no replica of its epoch can have been dropped: a
// new owner is planned only after it has been silent for the limit, and a
// replacement that keeps it owner reaches it as a new replica set, which
// clears the attempt, before the activation that lets a replica drop.
// So receipts counted then stand. The ask is repeated, so a replica
// answers again once the quorum is back.
func (o *ownerState) noteReceipt(from NodeID, cut uint64, digest [32]byte) {
	r, a := o.r, o.certify
	if a == nil || a.proposed || o.cutOff() || !slices.Contains(a.members, from) {
		return
	}
	if cut > a.cut && cut <= o.commit {
		// raiseCut asks this replica too, which may answer at once and
		// settle the attempt before this receipt is counted.
		if a = o.raiseCut(cut); a.proposed || o.certify != a {
			return
		}
	}
	if cut != a.cut || slices.ContainsFunc(a.receipts, func(c certReceipt) bool { return c.from == from }) {
		return
	}
	a.receipts = append(a.receipts, certReceipt{from: from, digest: digest})
	need := len(a.members)
	if bugs.Active(bugs.CertificateMissingReceipt) {
		need = len(a.members)/2 + 1 // planted: a majority's receipts stand for every replica's
	}
	if len(a.receipts) < need {
		return
	}
	for _, c := range a.receipts[1:] {
		if c.digest != a.receipts[0].digest {
			for _, d := range a.receipts {
				r.n.emit(event.NewCheckpointMismatch(r.name, a.cut, uint32(d.from)))
			}
			o.certify = nil
			return
		}
	}
	a.proposed = true
	r.n.env.Boundary("checkpoint.before.certify")
	r.n.emit(event.NewCheckpointProposed(r.name, r.inc, a.cut, r.epoch, nodeNumbers(a.members)))
	r.n.meta.propose(command{kind: cmdCertifyCheckpoint, name: r.name, inc: r.inc, epoch: r.epoch, node: r.n.cfg.ID,
		cut: a.cut, members: a.members}, lifecycleTimeoutTicks, func(result) {
		if o.certify == a {
			o.certify = nil
			if o.handoff != nil {
				r.n.scheduleFlush() // a preparing handoff waits for this cut
			}
		}
	})
}

// raiseCut moves the attempt up to cut, the later checkpoint a replica
// reported holding when asked for an earlier one. A checkpoint only ever
// moves forward, so that replica cannot answer for the earlier cut, and
// an attempt waiting for it would give up; the others can all build
// forward to the later one. The receipts counted so far are for the old
// cut and are dropped.
func (o *ownerState) raiseCut(cut uint64) *certifyAttempt {
	a := o.certify
	o.r.n.emit(event.NewCheckpointAsked(o.r.name, cut, o.r.epoch, "raised"))
	a.cut, a.receipts, a.started = cut, nil, o.ticks
	o.lastCertifyCut = max(o.lastCertifyCut, cut)
	if h := o.handoff; h != nil && h.preparing {
		h.ckptCut = cut // the handoff waits for this attempt, whatever its cut
	}
	o.askCheckpoints()
	return a
}

// askCheckpoint records that the owner asker wants this replica's
// checkpoint at cut, and builds it if it can. A replica already holding
// that checkpoint, or a later one, answers at once: with a later one,
// the owner moves its attempt up to it (raiseCut).
func (r *replica) askCheckpoint(asker NodeID, cut uint64) {
	r.ckptAsker, r.ckptAskEpoch = asker, r.epoch
	if cut <= r.ckpt.cut {
		r.sendReceipt()
		return
	}
	r.ckptWant = max(r.ckptWant, cut)
	r.buildCheckpoint()
}

// sendReceipt reports the replica's checkpoint to the owner that asked
// for it, in the epoch it asked.
func (r *replica) sendReceipt() {
	if r.ckptAsker == 0 || r.ckptAskEpoch != r.epoch || r.ckpt.cut == 0 {
		return
	}
	if r.ckptAsker == r.n.cfg.ID {
		if r.serving() {
			r.own.noteReceipt(r.ckptAsker, r.ckpt.cut, r.ckpt.stateDigest)
		}
		return
	}
	r.n.env.Send(r.ckptAsker, &wire.CheckpointReceipt{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, Cut: r.ckpt.cut,
		StateDigest: r.ckpt.stateDigest[:], Instance: r.n.process})
}

// onCheckpointAsk takes the owner's request for a checkpoint.
func (n *Node) onCheckpointAsk(from NodeID, m *wire.CheckpointAsk) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.present() || r.hasOwnerSide() || m.Epoch != r.epoch || from != r.follow.epochOwner {
		return
	}
	r.askCheckpoint(from, m.Cut)
}

// onCheckpointReceipt counts a replica's receipt on the owner.
func (n *Node) onCheckpointReceipt(from NodeID, m *wire.CheckpointReceipt) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.serving() || m.Epoch != r.epoch || len(m.StateDigest) != 32 {
		return
	}
	r.own.noteReceipt(from, m.Cut, [32]byte(m.StateDigest))
	if h := r.own.handoff; h != nil {
		if from == h.to && m.Instance != 0 {
			h.toProcess = m.Instance
		}
		n.scheduleFlush() // the receipt a handoff waits for may be in
	}
}

// onCertified lets this node's replica compact once the metadata
// certified a cut.
func (n *Node) onCertified(c command, res result) {
	q := n.meta.state.queues[c.name]
	if !res.ok || q == nil || q.CheckpointCut != c.cut {
		return
	}
	n.emit(event.NewCheckpointCertified(c.name, c.inc, c.cut, c.epoch, nodeNumbers(c.members)))
	if r := n.queues[c.name]; r != nil && r.inc == c.inc {
		r.compact()
	}
}
