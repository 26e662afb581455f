package node

import (
	"errors"
	"fmt"
	"github.com/cairnmq/cairn/bugs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// epochRun says that log entries from start on were written in epoch,
// up to the next run's start.
type epochRun struct {
	start uint64
	epoch uint64
}

// replica is this node's copy of one queue incarnation: its log, its
// durable identity and epoch, and, on the owner, the applied state and
// everything needed to serve.
type replica struct {
	n       *Node
	name    string
	inc     uint64
	members []NodeID
	log     *storage.Log
	meta    *storage.StateFile
	// identity is what the replica recorded when it prepared: it refuses
	// to serve a queue whose metadata names another identity.
	identity replicaIdentity
	// epoch is the owner's own epoch, or on a follower the highest epoch
	// seen; epochDurable is the part of that known to be on disk.
	epoch        uint64
	epochDurable uint64
	runs         []epochRun
	// role is the part the replica plays (see roles.go); fencedErr says
	// why a fenced replica's storage cannot be trusted.
	role      replicaRole
	fencedErr error
	// suspect is set when this process opened storage an earlier process
	// wrote: a disk can lose writes it acknowledged as synced, so the log
	// may hold less than the replica once reported durable. A suspect's
	// witness counts toward a seal only beside one more witness than a
	// seal quorum, until an owner has verified this log through its
	// commit index (verifyAt, once armed) or a recovery here installed a
	// history selected from a seal.
	suspect     bool
	verifyArmed bool
	verifyAt    uint64
	// commitKnown is the highest index this replica was told is
	// confirmed and holds in agreement with the owner that said so. No
	// record at or below it is ever dropped. It is persisted with the
	// epoch, so after a restart it may also reveal a log that lost
	// records it once held.
	commitKnown uint64

	// follow is the replica's follower side, always present; own is the
	// owner side, present exactly while the role is candidate, owner or
	// stale.
	own    *ownerState
	follow *followerState
	// durableWaiters run once the log is durable up to their index.
	durableWaiters []durableWaiter

	// ckpt is the replica's newest durable checkpoint, kept in ckptFile.
	// ckptWant is the newest cut an owner asked for, ckptAsker that owner
	// and ckptAskEpoch its epoch; ckptBusy is set while a checkpoint is
	// being written.
	ckpt         replicaCheckpoint
	ckptFile     *storage.StateFile
	ckptWant     uint64
	ckptAsker    NodeID
	ckptAskEpoch uint64
	ckptBusy     bool
	// ckptBuilt is the cut of the latest build finished, being written
	// or written: a newer cut asked for is still to be built (rollBase).
	ckptBuilt uint64
	// ckptState is the base of the next build: the queue state at ckpt's
	// cut or, rolled forward tick by tick (ckptroll.go), at a confirmed
	// index past it, with ckptStateDigest the history digest there. It is
	// kept between builds so each build only applies the records since;
	// nil until the first build decodes it, and while a build advances it
	// (until the build has reached its cut and writes it).
	// build is the build under way; installing is set while a checkpoint
	// taken from another replica replaces the log.
	ckptState       *queueState
	ckptStateDigest storage.Digest
	// rollSeen is the index the base could roll to at the last tick; tail holds
	// the records appended lately, decoded, for the base to roll from
	// (ckpttail.go).
	rollSeen uint64
	tail     recordTail
	// rolled counts the records the base applied from the tail and from
	// the log, for tests and diagnostics.
	rolled     struct{ fromTail, fromLog uint64 }
	build      *ckptBuild
	installing bool
	// journal is the window journal, open while the checkpoint names it
	// or a build writes it; travelling caches the checkpoint in the form
	// it travels in, while a transfer needs it.
	journal    *windowJournal
	travelling wireState
	// journaling is the window a finished build appends to the journal,
	// a step each tick (journalWindow), until it is all there.
	journaling *journalJob
}

// replicaStateV1Size is the size of a replica state file written before
// it carried the known commit index: identity (24 bytes) and epoch.
const replicaStateV1Size = 32

// replicaIdentity is the durable identity of a replica's storage.
type replicaIdentity struct {
	Incarnation, HistoryID, SessionID uint64
}

// replicaDir is the directory of one queue incarnation.
func (n *Node) replicaDir(name string, inc uint64) string {
	return n.path(queuesDir, replicaDirName(name, inc))
}

// replicaDirName names the directory of a queue incarnation's replica;
// ParseReplicaDir reads it back.
func replicaDirName(name string, inc uint64) string { return fmt.Sprintf("%s.%016x", name, inc) }

// ParseReplicaDir splits a replica directory name into queue name and
// incarnation; ok is false for any other name (a replica being removed,
// renamed aside first, is one).
func ParseReplicaDir(dir string) (string, uint64, bool) {
	i := strings.LastIndexByte(dir, '.')
	if i <= 0 || len(dir)-i-1 != 16 {
		return "", 0, false
	}
	inc, err := strconv.ParseUint(dir[i+1:], 16, 64)
	if err != nil || ValidQueueName(dir[:i]) != nil {
		return "", 0, false
	}
	return dir[:i], inc, true
}

// openReplica opens a replica directory that exists on disk. An I/O error
// halts the process, so a restart retries; damage fences the replica.
func (n *Node) openReplica(name string, inc uint64, members []NodeID) *replica {
	r := &replica{n: n, name: name, inc: inc, members: members, follow: &followerState{}}
	n.addQueue(r)
	if err := r.open(); err != nil {
		if !errors.Is(err, storage.ErrCorrupt) {
			n.env.Halt(fmt.Sprintf("opening queue %s: %v", name, err))
		}
		r.fence(err)
		return r
	}
	n.emit(event.NewQueueOpen(name, r.inc, r.log.LastIndex(), r.epoch))
	if r.ckpt.cut > 0 {
		// A checkpoint found on disk answers an owner's ask at once, so
		// it is reported like one just written: its write may have
		// become durable right before a crash, too late to be reported.
		r.emitCheckpointDurable()
	}
	return r
}

func (r *replica) open() error {
	fs := r.n.env.FS()
	dir := r.n.replicaDir(r.name, r.inc)
	meta, data, err := storage.OpenStateFile(fs, dir, "replica", r.n.syncs)
	if bugs.Active(bugs.DamagedStateReadAsNew) && errors.Is(err, storage.ErrCorrupt) && fs.Remove(fs.PathJoin(dir, "replica")) == nil {
		meta, data, err = storage.OpenStateFile(fs, dir, "replica", r.n.syncs)
	}
	if err != nil {
		return err
	}
	r.meta = meta
	if data != nil {
		d := wire.NewDecoder(data)
		r.identity = replicaIdentity{Incarnation: d.Uint64(), HistoryID: d.Uint64(), SessionID: d.Uint64()}
		r.epoch = d.Uint64()
		if len(data) > replicaStateV1Size {
			r.commitKnown = d.Uint64()
		}
		if err := d.Finish(); err != nil || r.identity.Incarnation != r.inc {
			return fmt.Errorf("%w: replica state of %s: %v (incarnation %x in %x)", storage.ErrCorrupt, r.name, err, r.identity.Incarnation, r.inc)
		}
		r.epochDurable = r.epoch
		r.suspect = true
		r.becomePrepared()
	}
	if err := r.openCheckpoint(dir); err != nil {
		return err
	}
	r.commitKnown = commitWithCheckpoint(r.commitKnown, r.ckpt.cut)
	if err := fs.RemoveAll(fs.PathJoin(dir, "log.old")); err != nil {
		return err
	}
	if err := r.openLog(); err != nil {
		return err
	}
	if err := r.reconcileLog(); err != nil {
		return err
	}
	return r.replay()
}

// replay reads the retained log once to rebuild the epoch runs; the
// checkpoint says the epoch at its cut, if the log starts after it.
func (r *replica) replay() error {
	if c := r.ckpt; c.cut > 0 && r.log.FirstIndex() == c.cut+1 {
		r.runs = []epochRun{{start: c.cut, epoch: c.cutEpoch}}
	}
	return r.scan(r.log.FirstIndex(), func(index uint64, rec record) { r.noteEntry(index, rec.epoch) })
}

// buildState applies the log after the checkpoint to the checkpoint's
// state: what an owner serves from.
func (r *replica) buildState() (*queueState, error) {
	state, _, err := r.servingBase()
	if err != nil {
		return nil, err
	}
	err = r.scan(state.applied+1, func(index uint64, rec record) { state.apply(index, rec) })
	return state, err
}

// scan decodes every record of the log from index from on, in order.
func (r *replica) scan(from uint64, fn func(uint64, record)) error {
	rd := r.log.NewReader(from)
	defer rd.Close()
	for {
		page, err := rd.Next(math.MaxUint64, r.n.cfg.PageRecords, r.n.cfg.PageBytes)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, rec := range page {
			dec, err := decodeRecord(rec.Type, rec.Body)
			if err != nil {
				return fmt.Errorf("%w: queue %s record %d: %v", storage.ErrCorrupt, r.name, rec.Index, err)
			}
			fn(rec.Index, dec)
		}
	}
}

// noteEntry records the epoch of the entry just appended at index.
func (r *replica) noteEntry(index, epoch uint64) {
	if n := len(r.runs); n > 0 && r.runs[n-1].epoch == epoch {
		return
	}
	if n := len(r.runs); n > 0 && r.runs[n-1].epoch > epoch {
		panic(fmt.Sprintf("node: queue %s entry %d has epoch %d after epoch %d", r.name, index, epoch, r.runs[n-1].epoch))
	}
	r.runs = append(r.runs, epochRun{start: index, epoch: epoch})
}

// noteTruncated forgets the epochs of entries after k.
func (r *replica) noteTruncated(k uint64) {
	if k < r.ckpt.cut {
		panic(fmt.Sprintf("node: queue %s truncated after %d, below its checkpoint at %d", r.name, k, r.ckpt.cut))
	}
	if s := r.ckptState; s != nil && s.applied > k && !bugs.Active(bugs.RollPastCommit) {
		// Never at or below the known commit, which is as far as a base
		// rolls; should it happen, the next build decodes its base again
		// rather than start from records the log no longer holds.
		r.ckptState = nil
	}
	r.tail.truncateAfter(k)
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].start > k })
	r.runs = r.runs[:i]
}

// epochOf returns the epoch of the entry at index, or 0 for index 0.
func (r *replica) epochOf(index uint64) uint64 {
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].start > index })
	if index == 0 || i == 0 {
		return 0
	}
	return r.runs[i-1].epoch
}

// epochKnown reports whether the epoch runs cover the entry at index, so
// that epochOf tells its epoch rather than 0. They may not cover the entry
// just before the log: replay rebuilds them from the first retained entry,
// and only a log that starts right after the checkpoint's cut has the
// cut's epoch to start from. A log compacted to a certified cut and then
// checkpointed further on starts at or below its own cut, and after a
// restart the epoch of the entry before its first is known nowhere.
func (r *replica) epochKnown(index uint64) bool {
	return index == 0 || len(r.runs) > 0 && r.runs[0].start <= index
}

// runStart returns the first index of the run holding index.
func (r *replica) runStart(index uint64) uint64 {
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].start > index })
	if i == 0 {
		return 0
	}
	return r.runs[i-1].start
}

// persistEpoch makes the identity and epoch durable and then calls done.
// The durable epoch never goes down: a replica that forgot an epoch it had
// promised to honour could be talked into obeying a superseded owner.
func (r *replica) persistEpoch(epoch uint64, done func()) {
	if epoch < r.epochDurable {
		panic(fmt.Sprintf("node: queue %s lowering its durable epoch from %d to %d", r.name, r.epochDurable, epoch))
	}
	b := wire.AppendUint64(nil, r.identity.Incarnation)
	b = wire.AppendUint64(b, r.identity.HistoryID)
	b = wire.AppendUint64(b, r.identity.SessionID)
	b = wire.AppendUint64(b, epoch)
	b = wire.AppendUint64(b, r.commitKnown)
	r.meta.Write(b, func(err error) {
		if err != nil {
			r.n.env.Halt(fmt.Sprintf("queue %s: persisting epoch %d: %v", r.name, epoch, err))
			return
		}
		r.epochDurable = max(r.epochDurable, epoch)
		r.becomePrepared()
		r.checkVerified()
		done()
	})
}

func (r *replica) onDurable(index uint64) {
	r.n.emit(event.NewQueueDurable(r.name, r.inc, index))
	r.runDurableWaiters()
	r.checkVerified()
	r.buildCheckpoint()
	if r.hasOwnerSide() {
		r.own.updateCommit()
		return
	}
	r.reportDurable()
}

// readFailed handles a failed read of this replica's own log: damage
// fences the replica (reported, never repaired by guessing); any other
// error halts, so a restart retries.
func (r *replica) readFailed(err error) {
	if !errors.Is(err, storage.ErrCorrupt) {
		r.n.env.Halt(fmt.Sprintf("queue %s: reading its log: %v", r.name, err))
		return
	}
	r.fence(err)
}

// commitWithCheckpoint is the commit a replica knows after a restart: the
// one it persisted, raised to the cut of the checkpoint it holds. The
// commit is persisted only with the epoch, while a checkpoint is built
// (only at a cut known confirmed) or installed (which notes its cut as
// confirmed) in between, so the persisted commit can lag behind the cut.
// Left there, it would let a recovery take a source's coarse conflict
// hint, which points at where the source's run of one epoch began, below
// the checkpoint, and cut the log under the state the checkpoint holds.
func commitWithCheckpoint(persisted, cut uint64) uint64 {
	return max(persisted, cut)
}

// noteCommit raises the index this replica knows is confirmed. The caller
// vouches that this log holds every record up to it, in agreement with
// the owner that confirmed them.
func (r *replica) noteCommit(index uint64) {
	if index > r.commitKnown {
		r.commitKnown = index
		r.buildCheckpoint()
	}
}

// armVerification notes that the owner of the current epoch confirmed
// everything up to commit and that this log agrees with it that far: once
// that prefix is durable here, this replica holds every record it could
// ever have reported durable and been counted for, and stops being
// suspect. A commit of zero proves nothing (an owner still installing a
// recovery has confirmed nothing in its epoch yet).
func (r *replica) armVerification(commit uint64) {
	if !r.suspect || r.verifyArmed || commit == 0 || r.follow.match < commit {
		return
	}
	r.verifyArmed, r.verifyAt = true, commit
	r.checkVerified()
}

// checkVerified clears suspicion once the armed prefix is durable in the
// current epoch.
func (r *replica) checkVerified() {
	if !r.suspect || !r.verifyArmed || r.log.DurableIndex() < r.verifyAt || r.epochDurable < r.epoch {
		return
	}
	r.trust("verified by the owner through " + strconv.FormatUint(r.verifyAt, 10))
}

// trust ends this replica's suspicion.
func (r *replica) trust(why string) {
	if !r.suspect {
		return
	}
	r.suspect, r.verifyArmed = false, false
	r.n.emit(event.NewQueueTrusted(r.name, r.epoch, why))
}
