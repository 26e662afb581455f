package node

import (
	"errors"
	"fmt"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// followerState is what a follower replica remembers about its owner.
type followerState struct {
	// epochOwner is the node that writes in the replica's current epoch:
	// the candidate that sealed it, or the owner whose appends it took.
	epochOwner NodeID
	// match is the last index verified to agree with the owner of the
	// current epoch.
	match uint64
	// reported is the largest durable index reported in the current
	// epoch, for the trace and its checkers.
	reported uint64
	// stamp is the latest owner stamp taken in the current epoch; replies
	// echo it.
	stamp uint64
	// releasedAt is the epoch whose seal found this replica the released
	// owner of the epoch before (recoverypeer.go): a resent seal answers
	// the same.
	releasedAt uint64
	// steppedDown is the epoch this replica served as owner until the
	// metadata named the next owner, its own hold over; steppedCounts the
	// delivery counts it held then. Its answer to the next epoch's seal
	// releases that history (recoverypeer.go).
	steppedDown   uint64
	steppedCounts []wire.DeliveryCount
	// counts are the latest delivery counts the owners' appends told this
	// follower, per message not yet settled (counts.go).
	counts map[wire.MessageID]uint32
	// leaseGrantedAt is, on this node's lease clock, the last moment this
	// replica did something that could keep an owner's delivery lease
	// alive: the last accepting reply that echoed an owner's stamp, or
	// the moment it stopped being the owner itself. Zero is the node's
	// start, which bounds whatever it granted before a restart. A sealed
	// replica reports how long ago that was, so that a recovery holds the
	// old owner's messages back no longer than its lease can last.
	leaseGrantedAt uint64
	// restsIn is the epoch whose owner's latest append said it rests
	// (rest.go), zero if it did not: while the replica is still in that
	// epoch, the owner's silence is its choice, not a failure.
	restsIn uint64
}

func (n *Node) onAppend(from NodeID, m *wire.Append) {
	r := n.queues[m.Queue]
	// A replica takes appends only for the incarnation it prepared; one
	// it has not prepared yet will be, once its metadata catches up, and
	// the owner's probes find it then.
	if r == nil || r.inc != m.Incarnation || !r.present() {
		return
	}
	switch {
	case m.Epoch > r.epoch:
		// A newer epoch: whoever writes in it is the owner now. An owner
		// of an older epoch learns here that it is stale.
		r.becomeFollower(from)
		r.follow.epochOwner = from
	case m.Epoch == r.epoch && r.hasOwnerSide():
		return // this node writes in this epoch; no one else may
	case m.Epoch == r.epoch && r.follow.epochOwner != 0 && r.follow.epochOwner != from:
		n.emit(event.NewQueueSecondWriter(m.Queue, uint32(from), m.Epoch))
		return
	case m.Epoch == r.epoch:
		r.follow.epochOwner = from
	}
	r.onAppend(from, m)
}

// onAppend applies the owner's append: reject a stale epoch, check that
// the log agrees at PrevIndex, drop any suffix that conflicts with the
// entries, append the rest.
func (r *replica) onAppend(from NodeID, m *wire.Append) {
	if m.Epoch < r.epoch && !bugs.Active(bugs.AcceptStaleEpoch) {
		r.sendReply(from, false, m.PrevIndex, r.log.LastIndex())
		return
	}
	if m.Epoch > r.epoch {
		r.adoptEpoch(m.Epoch)
	}
	r.follow.hearCounts(m.Delivered)
	if r.installing {
		return // a checkpoint is replacing the log; the owner probes again
	}
	m = r.skipCheckpointed(m)
	last := r.log.LastIndex()
	if m.PrevIndex > last {
		r.sendReply(from, false, m.PrevIndex, last)
		return
	}
	if r.epochOf(m.PrevIndex) != m.PrevEpoch {
		// Hint the owner past the whole conflicting run.
		r.sendReply(from, false, m.PrevIndex, r.runStart(m.PrevIndex)-1)
		return
	}
	if err := r.acceptEntries(m.PrevIndex, m.Epoch, m.Entries); err != nil {
		if errors.Is(err, storage.ErrCorrupt) {
			// Damage met in this replica's own log (a truncation rereads
			// the segment it cuts) fences the replica, as any read of its
			// own log does. Only reported, it would refuse every append
			// of the owner for good while still counting as a healthy
			// replica: never reported lost, never replaced, and a valid
			// target of a handoff that could never complete.
			r.readFailed(err)
			return
		}
		refused := event.NewQueueBadAppend
		if errors.Is(err, errDropsConfirmed) {
			refused = event.NewQueueRefusedTruncation
		}
		r.n.emit(refused(r.name, m.Epoch, uint32(from), err))
		return
	}
	r.follow.match = max(r.follow.match, m.PrevIndex+uint64(len(m.Entries)))
	if m.Stamp >= r.follow.stamp {
		// An append that arrives late says nothing of the owner now.
		if r.follow.restsIn != 0 && !m.Rest {
			r.n.rouse(r)
		}
		r.follow.restsIn = 0
		if m.Rest {
			r.follow.restsIn = m.Epoch
		}
	}
	r.follow.stamp = max(r.follow.stamp, m.Stamp)
	r.noteCommit(min(m.Commit, r.follow.match))
	r.armVerification(m.Commit)
	r.sendReply(from, true, r.follow.match, r.log.LastIndex())
}

// adoptEpoch moves to a newer owner epoch. The epoch is persisted before
// any durability is reported in it, so after a crash this replica still
// refuses the older owner.
func (r *replica) adoptEpoch(epoch uint64) {
	r.epoch = epoch
	r.follow.match, r.follow.reported, r.follow.stamp = 0, 0, 0
	r.verifyArmed = false
	r.n.env.Boundary("queue.before.persist-epoch")
	r.persistEpoch(epoch, func() {
		r.n.env.Boundary("queue.after.persist-epoch")
		r.reportDurable()
	})
}

// errDropsConfirmed refuses a truncation that would drop a record this
// replica was told is confirmed. A correct owner never asks for one; a
// refusal means a history that lacks confirmed records, which must stay
// stuck and reported rather than spread.
var errDropsConfirmed = errors.New("refusing to drop a confirmed record")

// acceptEntries appends the entries after prev that the log lacks, first
// truncating any entry of another epoch at the same index: such an entry
// was never confirmed, or the writer of epoch would hold it.
func (r *replica) acceptEntries(prev, epoch uint64, entries []wire.Entry) error {
	var fresh []storage.Entry
	var decoded []record
	index := prev
	for _, e := range entries {
		index++
		rec, err := decodeRecord(storage.RecordType(e.Type), e.Body)
		if err != nil {
			return fmt.Errorf("entry %d: %w", index, err)
		}
		if rec.epoch > epoch {
			return fmt.Errorf("entry %d has epoch %d, beyond the message's %d", index, rec.epoch, epoch)
		}
		if len(fresh) == 0 && index <= r.log.LastIndex() {
			if r.epochOf(index) == rec.epoch {
				continue // already held
			}
			if index <= r.commitKnown {
				return fmt.Errorf("%w: entry %d of epoch %d conflicts with the held entry of epoch %d, at or below the known commit %d",
					errDropsConfirmed, index, rec.epoch, r.epochOf(index), r.commitKnown)
			}
			r.n.emit(event.NewQueueTruncate(r.name, r.inc, index-1))
			if err := r.log.TruncateAfter(index - 1); err != nil {
				return err
			}
			r.noteTruncated(index - 1)
		}
		fresh = append(fresh, storage.Entry{Type: storage.RecordType(e.Type), Body: e.Body})
		decoded = append(decoded, rec)
		r.follow.forgetCounts(rec)
	}
	if len(fresh) == 0 {
		return nil
	}
	first := r.log.LastIndex() + 1
	if _, err := r.log.AppendBatch(fresh); err != nil {
		return err
	}
	for i, e := range fresh {
		r.noteEntry(first+uint64(i), recordEpoch(e.Body))
		r.keepInTail(first+uint64(i), decoded[i])
	}
	r.log.RequestSync()
	return nil
}

// durableReport is the durable index a follower may claim: nothing until
// the current epoch itself is durable.
//
// It never passes the entries known to agree with the current epoch's
// owner (follow.match): past them, a durable index may name entries of an
// older epoch. A follower that lost the owner's unsynced marker in a
// crash holds, after its restart, the older entry at that index durably;
// reported as durable, it would count toward a quorum holding the marker
// (seed 417: the all-policy recovery activated naming such a follower).
func (r *replica) durableReport() uint64 {
	if r.epochDurable < r.epoch {
		return 0
	}
	if bugs.Active(bugs.FollowerAckBeforeSync) {
		return min(r.log.LastIndex(), r.follow.match)
	}
	return min(r.log.DurableIndex(), r.follow.match)
}

func (r *replica) sendReply(to NodeID, ok bool, match, last uint64) {
	durable := r.durableReport()
	if ok && durable > r.follow.reported {
		r.follow.reported = durable
		r.n.emit(event.NewQueueReported(r.name, r.inc, r.epoch, durable))
	}
	if ok && r.follow.stamp != 0 {
		r.follow.leaseGrantedAt = r.n.leaseClock()
	}
	r.n.env.Send(to, &wire.AppendReply{
		Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, OK: ok, Match: match, Last: last, Durable: durable,
		Owner: uint32(r.follow.epochOwner), Stamp: r.follow.stamp, DiskFull: r.n.disk.full,
	})
}

// reportDurable tells the owner of the current epoch about new durability
// without waiting for its next append.
func (r *replica) reportDurable() {
	if r.role != roleFollower || r.follow.epochOwner == 0 || r.follow.epochOwner == r.n.cfg.ID {
		return
	}
	r.sendReply(r.follow.epochOwner, true, r.follow.match, r.log.LastIndex())
}

// skipCheckpointed drops from an append the entries at or before this
// replica's checkpoint cut: they were confirmed, so they are the entries
// the checkpoint covers, and this log may no longer hold them to compare.
func (r *replica) skipCheckpointed(m *wire.Append) *wire.Append {
	cut := r.ckpt.cut
	if m.PrevIndex >= cut {
		return m
	}
	trimmed := *m
	skip := cut - m.PrevIndex
	if skip >= uint64(len(m.Entries)) {
		trimmed.Entries = nil
	} else {
		trimmed.Entries = m.Entries[skip:]
	}
	trimmed.PrevIndex, trimmed.PrevEpoch = cut, r.epochOf(cut)
	return &trimmed
}
