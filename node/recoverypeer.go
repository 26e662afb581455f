package node

import (
	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/wire"
)

// onSeal seals this replica at the candidate's epoch: from then on it
// refuses every older epoch, which fences the old owner. It answers with
// its witness once both the epoch and its log are durable, so the witness
// describes what survives a crash.
func (n *Node) onSeal(from NodeID, m *wire.Seal) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.present() {
		return
	}
	if m.Epoch < r.epoch {
		n.env.Send(from, &wire.SealReply{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, Owner: uint32(r.follow.epochOwner)})
		return
	}
	if m.Epoch == r.epoch && r.hasOwnerSide() {
		return // this node is the writer of this epoch; only it seals in it
	}
	released, counts := r.releasesTo(m.Epoch)
	counts = r.sealCounts(counts)
	r.becomeFollower(from)
	r.follow.epochOwner = from
	if released {
		r.follow.releasedAt = m.Epoch
	}
	if m.Epoch > r.epoch {
		r.epoch = m.Epoch
		r.follow.match, r.follow.reported, r.follow.stamp = 0, 0, 0
		n.env.Boundary("recovery.before.seal-persisted")
	}
	r.log.RequestSync()
	epoch := r.epoch
	if bugs.Active(bugs.SealAnswerBeforeEpochSync) {
		// Planted: the answer waits for the log alone.
		r.persistEpoch(epoch, func() { n.env.Boundary("recovery.after.seal-persisted") })
		r.afterLogDurable(func() { r.answerSeal(from, epoch, released, counts) })
		return
	}
	r.persistEpoch(epoch, func() {
		n.env.Boundary("recovery.after.seal-persisted")
		r.afterLogDurable(func() { r.answerSeal(from, epoch, released, counts) })
	})
}

// releasesTo reports whether this replica, about to be sealed at epoch,
// was the owner of the epoch just before it and has stopped with no hold
// of its own left: no owner older than it can still be delivering (its
// hold outlasted them all), and it delivers nothing more. The candidate
// then need not wait out any delivery lease. It was stopped either by
// this seal or, before it, by the metadata naming the next owner (a
// handoff's usual order). With it come the delivery counts to hand over.
func (r *replica) releasesTo(epoch uint64) (bool, []wire.DeliveryCount) {
	switch {
	case r.follow.releasedAt == epoch:
		return true, nil // a resent seal: the first answer may have been lost
	case r.serving() && r.epoch+1 == epoch:
		if !r.own.holdOver() {
			return false, nil
		}
		return true, r.own.deliveryCounts()
	case !r.hasOwnerSide() && r.follow.steppedDown != 0 && r.follow.steppedDown == r.epoch && r.epoch+1 == epoch:
		return true, r.follow.steppedCounts
	}
	return false, nil
}

// answerSeal tells the candidate from that this replica is sealed at
// epoch, with its witness. The answer is an event too: the replica has
// given its word that it holds epoch durably, and the history holds it
// to that word across its restarts.
func (r *replica) answerSeal(from NodeID, epoch uint64, released bool, counts []wire.DeliveryCount) {
	if !r.present() || r.n.queues[r.name] != r {
		// The metadata replaced the replica (its files are going), or it
		// found damage, while its epoch was being written: it holds no
		// history to witness, and gives no word it could not keep.
		return
	}
	w := r.witness()
	r.n.emit(event.NewQueueSealed(r.name, r.inc, epoch, uint32(from)))
	r.n.env.Send(from, &wire.SealReply{
		Queue: r.name, Incarnation: r.inc, Epoch: epoch, OK: true, First: w.First, Last: w.Last,
		LastEpoch: w.LastEpoch, Digest: w.Digest[:], HistoryID: w.HistoryID, Instance: w.Process, Owner: uint32(from),
		Suspect: w.Suspect, Commit: w.Commit, LeaseGrantAgo: w.LeaseGrantAgo, Released: released, Delivered: counts,
	})
}

// afterLogDurable calls fn once everything appended so far is durable.
func (r *replica) afterLogDurable(fn func()) {
	if r.log.DurableIndex() >= r.log.LastIndex() {
		fn()
		return
	}
	r.durableWaiters = append(r.durableWaiters, durableWaiter{index: r.log.LastIndex(), fn: fn})
	r.log.RequestSync()
}

type durableWaiter struct {
	index uint64
	fn    func()
}

// runDurableWaiters calls the waiters whose index is now durable.
func (r *replica) runDurableWaiters() {
	kept := r.durableWaiters[:0]
	var ready []func()
	for _, w := range r.durableWaiters {
		if r.log.DurableIndex() >= w.index {
			ready = append(ready, w.fn)
		} else {
			kept = append(kept, w)
		}
	}
	r.durableWaiters = kept
	for _, fn := range ready {
		fn()
	}
}

// onSealReply hands a seal's answer to the candidate's recovery, which
// judges it (a straggler, a witness, or news of a newer epoch).
func (n *Node) onSealReply(from NodeID, m *wire.SealReply) {
	r := n.queues[m.Queue]
	if r != nil && r.serving() && m.OK && m.Released && m.Epoch == r.epoch && m.Incarnation == r.inc &&
		m.HistoryID == r.identity.HistoryID {
		// The old owner's answer came after this owner activated: it
		// stopped when sealed, so the hold has nothing left to guard.
		r.own.takeDeliveryCounts(m.Delivered)
		if r.own.hold.until != 0 {
			r.own.endHold()
			r.own.pump()
		}
		return
	}
	if r == nil || r.role != roleCandidate || r.own.recovery == nil {
		return
	}
	if m.OK && m.Epoch == r.epoch && m.Incarnation == r.inc {
		// Kept until the recovered state is built, at activation.
		r.own.carryCounts(m.Delivered)
	}
	r.own.stepRecovery(recovery.SealReply{Facts: r.own.recoveryFacts(), From: uint32(from), Msg: m})
}

// onFetch serves one page of this sealed replica's history to the
// candidate of the epoch it is sealed at.
func (n *Node) onFetch(from NodeID, m *wire.Fetch) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !r.present() {
		return
	}
	reply := &wire.FetchReply{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, PrevIndex: m.PrevIndex, Last: r.log.LastIndex()}
	switch last := r.log.LastIndex(); {
	case m.Epoch != r.epoch || from != r.follow.epochOwner:
		reply.Hint = last
	case m.PrevIndex > last:
		reply.Hint = last
	case m.PrevIndex+1 < r.log.FirstIndex() || !r.epochKnown(m.PrevIndex):
		// The candidate needs records this log dropped, or asks from the
		// entry just before this log, whose epoch this replica no longer
		// knows (it restarted over a log that starts at or below its
		// checkpoint's cut): the checkpoint that covers them goes in their
		// place. Compared with an unknown epoch, the candidate's entry
		// would look like a conflict, and the hint (before the first run)
		// would say nothing this log holds, so every attempt would fail
		// at the same page.
		r.sendCheckpointChunk(from, 0)
		return
	case r.epochOf(m.PrevIndex) != m.PrevEpoch:
		reply.Hint = r.runStart(m.PrevIndex) - 1
	default:
		rd := r.log.NewReader(m.PrevIndex + 1)
		page, err := rd.Next(last, n.cfg.PageRecords, n.cfg.PageBytes)
		rd.Close()
		if err != nil {
			// Damage found here fences the replica, as any read of its own
			// log does: a source that only reported it would be chosen
			// again by every attempt, which would fail at the same record.
			n.emit(event.NewRecoverySourceReadFailed(r.name, err))
			r.readFailed(err)
			return
		}
		reply.OK = true
		for _, rec := range page {
			reply.Entries = append(reply.Entries, wire.Entry{Type: uint8(rec.Type), Body: append([]byte(nil), rec.Body...)})
		}
	}
	n.env.Send(from, reply)
}

// onFetchReply hands a page from the source to the candidate's recovery.
func (n *Node) onFetchReply(from NodeID, m *wire.FetchReply) {
	r := n.queues[m.Queue]
	if r == nil || r.role != roleCandidate || r.own.recovery == nil {
		return
	}
	r.own.stepRecovery(recovery.FetchReply{Facts: r.own.recoveryFacts(), From: uint32(from), Msg: m})
}
