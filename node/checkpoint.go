package node

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// A checkpoint is a replica's durable copy of its queue's state at a cut:
// every live message with its payload, the ID sets, and the history digest
// after the cut. A replica restarts from its checkpoint and replays only
// the log after the cut; once the metadata certifies a cut every replica
// checkpointed with the same state, each drops the log segments the cut
// covers, so a queue's disk follows its live backlog, not its history.
//
// Only a confirmed index is ever a cut, and a replica builds a checkpoint
// only at or below the commit index it was told: no record there can be
// truncated by any later owner, so a checkpoint never needs to be undone.

// checkpointFile is the name of the checkpoint's state file in a replica
// directory.
const checkpointFile = "checkpoint"

// checkpointVersion opens every checkpoint file. Version 2 added when the
// checkpoint was made; version 1 files are still read (made at an
// unknown time). Version 3 added whether the window sits in the window
// journal, and the running number of its first entry there.
const checkpointVersion = 3

// maxCheckpointSize bounds a checkpoint file: the live backlog of one
// queue must fit.
const maxCheckpointSize = 1 << 30

// replicaCheckpoint is a replica's newest durable checkpoint; a zero cut
// means none.
type replicaCheckpoint struct {
	cut      uint64
	cutEpoch uint64
	digest   storage.Digest // the history digest after cut
	// installed says the checkpoint came from another replica and
	// replaced this log: until the log was reset to start after the cut,
	// the log on disk may disagree with it.
	installed   bool
	state       []byte // encodeState's bytes
	stateDigest [32]byte
	// madeAt is when this replica made the checkpoint durable, Unix
	// nanoseconds on its clock (zero: unknown), for its age on the
	// status page.
	madeAt int64
	// journaled says state is in the journaled form: its window's entries
	// are the journal's, numbered from journalFrom on.
	journaled   bool
	journalFrom uint64
}

// encodeCheckpointHead is a checkpoint file's content up to its state,
// which follows it (decodeCheckpoint reads both): the state's own bytes
// are then written as they are, without a copy.
func encodeCheckpointHead(c replicaCheckpoint) []byte {
	b := wire.AppendUint8(nil, checkpointVersion)
	b = wire.AppendUint64(b, c.cut)
	b = wire.AppendUint64(b, c.cutEpoch)
	b = wire.AppendBytes(b, c.digest[:])
	b = wire.AppendBool(b, c.installed)
	b = wire.AppendInt64(b, c.madeAt)
	b = wire.AppendBool(b, c.journaled)
	b = wire.AppendUint64(b, c.journalFrom)
	return wire.AppendUint32(b, uint32(len(c.state)))
}

func decodeCheckpoint(data []byte) (replicaCheckpoint, error) {
	d := wire.NewDecoder(data)
	v := d.Uint8()
	if v < 1 || v > checkpointVersion {
		return replicaCheckpoint{}, fmt.Errorf("checkpoint version %d, want 1 to %d", v, checkpointVersion)
	}
	c := replicaCheckpoint{cut: d.Uint64(), cutEpoch: d.Uint64()}
	digest := d.Bytes()
	c.installed = d.Bool()
	if v >= 2 {
		c.madeAt = d.Int64()
	}
	if v >= 3 {
		c.journaled, c.journalFrom = d.Bool(), d.Uint64()
	}
	c.state = d.Bytes()
	if err := d.Finish(); err != nil {
		return replicaCheckpoint{}, err
	}
	if len(digest) != len(c.digest) || c.cut == 0 {
		return replicaCheckpoint{}, fmt.Errorf("checkpoint at %d with a %d-byte digest", c.cut, len(digest))
	}
	copy(c.digest[:], digest)
	return c, nil
}

// openCheckpoint reads the replica's checkpoint file, if any, with the
// window journal it names, and keeps the decoded state for the first
// build. A journal no checkpoint names is removed.
func (r *replica) openCheckpoint(dir string) error {
	fs := r.n.env.FS()
	f, data, err := storage.OpenSizedStateFile(fs, dir, checkpointFile, r.n.syncs, maxCheckpointSize)
	if err != nil {
		return err
	}
	r.ckptFile = f
	if data == nil {
		return removeJournal(fs, dir)
	}
	c, err := decodeCheckpoint(data)
	if err != nil {
		return fmt.Errorf("%w: checkpoint of %s: %v", storage.ErrCorrupt, r.name, err)
	}
	if c.journaled {
		if err := r.openJournal(); err != nil {
			return err
		}
	} else if err := removeJournal(fs, dir); err != nil {
		return err
	}
	s, err := decodeState(r.name, c.state, r.windowSource(c, true))
	if err == nil {
		err = s.checkWindow()
	}
	if err != nil {
		return asCorrupt(err, "checkpoint of "+r.name)
	}
	s.recentBase = c.journalFrom
	c.stateDigest = stateDigest(s)
	r.ckpt, r.ckptState, r.ckptStateDigest = c, s, c.digest
	return nil
}

// openJournal opens the replica's window journal.
func (r *replica) openJournal() error {
	fs := r.n.env.FS()
	j, err := openJournal(fs, r.n.replicaDir(r.name, r.inc), r.n.syncs, r.n.cfg.SegmentSize,
		func(err error) { r.n.env.Halt(fmt.Sprintf("queue %s window journal failed: %v", r.name, err)) })
	if err != nil {
		return err
	}
	r.journal = j
	return nil
}

// resetJournal replaces the window journal with an empty one.
func (r *replica) resetJournal() error {
	if err := r.dropJournal(); err != nil {
		return err
	}
	return r.openJournal()
}

// dropJournal closes and removes the window journal: only ever while the
// checkpoint on disk does not name it.
func (r *replica) dropJournal() error {
	r.closeJournal()
	return removeJournal(r.n.env.FS(), r.n.replicaDir(r.name, r.inc))
}

// closeJournal closes the window journal, if open.
func (r *replica) closeJournal() {
	if r.journal != nil {
		r.journal.log.Close()
		r.journal = nil
	}
}

// reconcileLog checks the log just opened against the checkpoint: the log
// must go on from the cut. A log that ends before the cut, or (after an
// installed checkpoint) still holds the history the install replaced, is
// reset to start right after the cut; a log that starts after the cut
// lost records nothing else holds here, which is damage.
func (r *replica) reconcileLog() error {
	c := r.ckpt
	first := r.log.FirstIndex()
	switch {
	case c.cut == 0 && first > 1:
		return fmt.Errorf("%w: queue %s log starts at %d with no checkpoint", storage.ErrCorrupt, r.name, first)
	case c.cut == 0:
		return nil
	case first > c.cut+1:
		return fmt.Errorf("%w: queue %s log starts at %d after its checkpoint at %d", storage.ErrCorrupt, r.name, first, c.cut)
	case r.log.LastIndex() < c.cut:
		return r.resetLog()
	case first == c.cut+1 && r.log.BaseDigest() != c.digest:
		if c.installed {
			return r.resetLog()
		}
		return fmt.Errorf("%w: queue %s log after %d does not continue its checkpoint", storage.ErrCorrupt, r.name, c.cut)
	case first <= c.cut && c.installed:
		return r.resetLog()
	}
	return nil
}

// resetLog replaces the log with an empty one that starts right after the
// checkpoint's cut. The old log directory is renamed away first, so a
// crash leaves either the old log (reset again at the next open) or the
// new one, never a mix; the new log's first sync makes the rename durable.
func (r *replica) resetLog() error {
	fs := r.n.env.FS()
	dir := r.n.replicaDir(r.name, r.inc)
	logDir, oldDir := fs.PathJoin(dir, "log"), fs.PathJoin(dir, "log.old")
	if r.log != nil {
		// Records past the cut belong to the history the checkpoint
		// replaced (an installed checkpoint is taken only at or above the
		// known commit, and only when the log does not already hold the
		// cut in the cut's epoch), so dropping them is a truncation at a
		// newer owner's word and is announced like one; unannounced, the
		// replica looked as if its disk had lost records it had reported
		// durable (seed 111807: an isolated epoch-1 owner's unconfirmed
		// records 104-108, replaced by the epoch-3 owner's checkpoint at
		// 104).
		if r.log.LastIndex() > r.ckpt.cut {
			r.n.emit(event.NewQueueTruncate(r.name, r.inc, r.ckpt.cut))
		}
		r.log.Close()
		r.log = nil
	}
	r.n.env.Boundary("checkpoint.before.reset-log")
	if err := fs.RemoveAll(oldDir); err != nil {
		return fmt.Errorf("removing %s: %w", oldDir, err)
	}
	if err := fs.Rename(logDir, oldDir); err != nil {
		return fmt.Errorf("renaming %s: %w", logDir, err)
	}
	if err := fs.RemoveAll(oldDir); err != nil {
		return fmt.Errorf("removing %s: %w", oldDir, err)
	}
	if err := r.openLog(); err != nil {
		return err
	}
	r.n.env.Boundary("checkpoint.after.reset-log")
	r.runs = []epochRun{{start: r.ckpt.cut, epoch: r.ckpt.cutEpoch}}
	return nil
}

// openLog opens the replica's log; a fresh one starts after the
// checkpoint's cut.
func (r *replica) openLog() error {
	fs := r.n.env.FS()
	dir := r.n.replicaDir(r.name, r.inc)
	r.tail.reset() // its records were the old log's
	var err error
	r.log, err = storage.Open(fs, fs.PathJoin(dir, "log"), r.n.syncs, storage.Options{
		SegmentSize: r.n.cfg.SegmentSize,
		FirstIndex:  r.ckpt.cut + 1,
		BaseDigest:  r.ckpt.digest,
		OnDurable:   r.onDurable,
		OnFailed:    func(err error) { r.n.env.Halt(fmt.Sprintf("queue %s log failed: %v", r.name, err)) },
	})
	return err
}

// baseState is the state at the checkpoint's cut: where applying the log
// starts.
func (r *replica) baseState() (*queueState, error) {
	c := r.ckpt
	if c.cut == 0 {
		return newQueueState(r.name), nil
	}
	s, err := decodeState(r.name, c.state, r.windowSource(c, false))
	if err != nil {
		return nil, asCorrupt(err, "checkpoint of "+r.name)
	}
	s.recentBase = c.journalFrom
	return s, nil
}

// readError is a window journal read that failed for a reason other
// than damage (an I/O error): the caller must not take it for damage.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// windowSource gives decodeState the window of c from the journal, or nil
// when c holds its window inline. Opening, it first cuts what a crashed
// build left after the window, and resets a journal an empty window does
// not need. A read that fails without damage comes back as a readError.
func (r *replica) windowSource(c replicaCheckpoint, opening bool) func(int) (windowList, error) {
	if !c.journaled {
		return nil
	}
	return func(n int) (windowList, error) {
		var entries windowList
		var err error
		switch {
		case opening && n == 0:
			err = r.resetJournal()
		case opening:
			err = r.journal.trimTo(c.journalFrom + uint64(n))
		}
		if err == nil && n > 0 {
			entries, err = r.journal.read(c.journalFrom, n)
		}
		if err != nil && !errors.Is(err, storage.ErrCorrupt) {
			err = readError{err}
		}
		return entries, err
	}
}

// asCorrupt marks an error reading what as damage, unless it is a read
// that failed without damage.
func asCorrupt(err error, what string) error {
	var re readError
	if errors.As(err, &re) && !bugs.Active(bugs.ReadErrorIsDamage) {
		return fmt.Errorf("reading the %s: %w", what, re.err)
	}
	if errors.Is(err, storage.ErrCorrupt) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %v", storage.ErrCorrupt, what, err)
}

// Recovery rebuilds a state, and reads journals and logs whole, in pages
// of at most pageRecords records (or pageBytes of them).
const (
	pageRecords = 4096
	pageBytes   = 4 << 20
)

// Building a checkpoint is spread over ticks, so a large cut never holds
// up replication, heartbeats or the metadata for long: each step applies
// twice as many records as the log grew by since the previous step, so
// the build gains on the log (up to some 800,000 records a second at the
// default tick), but at least
// buildStepRecordsMin and at most buildStepRecordsMax, and at most
// buildStepBytesPerRecord bytes per record of the step. Small steps keep
// the pause a build puts between two publishes short (a step of 4,096
// records took about 10 ms and doubled p99 confirm latency at 6,000
// msg/s).
//
// Once the state reaches the cut, its encoding (the live messages with
// their payloads, which for a large backlog runs to hundreds of
// megabytes) is written encodeStepBytes at a time, hashed as it goes: a
// node that encoded and hashed a 200 MB backlog in one go stood still for
// over a second, and its peers suspected it.
const (
	encodeStepBytes         = 8 << 20
	buildStepRecordsMin     = 1024
	buildStepRecordsMax     = 16384
	buildStepBytesPerRecord = 1024
)

// ckptBuild is a checkpoint being built: the state at the previous cut,
// advanced record by record up to cut.
type ckptBuild struct {
	cut    uint64
	state  *queueState
	digest storage.Digest // after the last record applied
	// hashed says digest follows the records applied. When the log still
	// remembered its digest at the cut, the build took that instead and
	// hashes nothing: hashing each record again cost a follower about a
	// third of its build.
	hashed bool
	rd     *storage.Reader
	// seenLast is the log's last index at the previous step.
	seenLast uint64
	// enc is the state being encoded, once it has reached the cut.
	enc *stateEncoding
}

// stepRecords is how many records the build's next step applies: as
// many as a roll of the base would (rollStepRecords), so a build that
// starts far behind its cut gains a quarter of the way a tick. Sized by
// the log's growth alone, a replica restarted over an old checkpoint and
// asked for a cut some 100,000 records on built 1,024 records a tick
// while its log was quiet. Made owner a second later, before its build
// was done, it finished the replay in the handler that installed it
// (adoptBuildState): in cairn-bench history, installs of 194 ms where
// others took 8 ms, and those rounds' activations took 212-345 ms.
func (b *ckptBuild) stepRecords(last uint64) int {
	grown := last - min(b.seenLast, last)
	b.seenLast = last
	return rollStepRecords(grown, b.cut-min(b.state.applied, b.cut))
}

// buildCheckpoint starts building, if it may, the checkpoint an owner
// asked for: once the cut is confirmed as far as this replica knows and
// durable in its log, and no other build or write is under way.
func (r *replica) buildCheckpoint() {
	cut := r.ckptWant
	switch {
	case cut <= r.ckpt.cut || r.build != nil || r.ckptBusy || r.installing || !r.present():
		return
	case cut > r.commitKnown || cut > r.log.DurableIndex():
		return // not yet: appends and durability bring it closer
	case r.ckpt.cut+1 < r.log.FirstIndex():
		panic(fmt.Sprintf("node: queue %s log starts at %d, after its checkpoint at %d", r.name, r.log.FirstIndex(), r.ckpt.cut))
	}
	state, digest := r.ckptState, r.ckptStateDigest
	if state != nil && state.filling {
		// A base copied for a new owner fills its ID maps a step a tick
		// (rollBase). Filling more than a step's worth here would stall
		// the node for as long as the window is big (0.8 s for 2,000,000
		// entries): the build then starts once the roll has filled them.
		if state.fillLeft() > fillStepEntries {
			return
		}
		state.fillMaps(-1)
	}
	if state == nil || state.applied > cut {
		// No base kept, or one rolled past a cut asked late (an ask
		// delayed behind the appends that told this replica a later
		// commit): start from the checkpoint itself.
		var err error
		if state, err = r.baseState(); err != nil {
			r.readFailed(err)
			return
		}
		digest = r.ckpt.digest
		if r.ckpt.cut == 0 {
			digest = r.log.BaseDigest()
		}
	}
	r.ckptState = nil // the build advances it; it is the cut's state again when the build is written
	state.keepSum = true
	b := &ckptBuild{cut: cut, state: state, digest: digest, hashed: true, rd: r.log.NewReader(state.applied + 1), seenLast: r.log.LastIndex()}
	if d, ok := r.log.DigestAt(cut); ok {
		b.digest, b.hashed = d, false
	}
	r.build = b
	r.stepCheckpoint()
}

// stepCheckpoint applies the next records of the build, and writes the
// checkpoint once it reaches its cut.
func (r *replica) stepCheckpoint() {
	b := r.build
	if b == nil {
		return
	}
	if !r.present() {
		r.abortBuild() // fenced or retired: its log is no one's concern now
		return
	}
	if b.enc == nil {
		if !r.replayBuildStep(b) {
			return // the next tick goes on, or the build was dropped
		}
		b.enc = newStateEncoding(b.state)
	}
	if !b.enc.step(encodeStepBytes) {
		return // the next tick writes more of the state
	}
	r.finishBuild(b)
}

// replayBuildStep applies the next records up to the build's cut, and
// reports whether the state has reached it. A read that fails drops the
// build.
//
// A page never crosses a segment boundary, so the step reads page after
// page until it has applied its records or their bytes: one page a step
// applied a segment a tick, and with small segments an owner whose log
// grew by more than that each tick never reached its cut (seed 154281:
// 4 KiB segments of one or two records each, some 100 records a second
// applied against some 200 published).
func (r *replica) replayBuildStep(b *ckptBuild) bool {
	n := b.stepRecords(r.log.LastIndex())
	records, bytes := n, n*buildStepBytesPerRecord
	for records > 0 && bytes > 0 && b.rd.Position() <= b.cut {
		page, err := b.rd.Next(b.cut, records, bytes)
		if err != nil {
			r.abortBuild()
			r.readFailed(err)
			return false
		}
		if len(page) == 0 {
			panic(fmt.Sprintf("node: queue %s log ends at %d, before the checkpoint cut %d", r.name, r.log.LastIndex(), b.cut))
		}
		var digest *storage.Digest
		if b.hashed {
			digest = &b.digest
		}
		if err := applyPage(r.name, b.state, page, digest); err != nil {
			r.abortBuild()
			r.readFailed(err)
			return false
		}
		records, bytes = records-len(page), bytes-pageBodyBytes(page)
	}
	return b.rd.Position() > b.cut
}

// finishBuild makes the encoded state the replica's checkpoint: its
// window entries first, then the file that names them.
func (r *replica) finishBuild(b *ckptBuild) {
	b.rd.Close()
	r.build, r.ckptBuilt = nil, b.cut
	c := replicaCheckpoint{cut: b.cut, cutEpoch: r.epochOf(b.cut), digest: b.digest,
		state: b.enc.buf, stateDigest: b.enc.sum(), journaled: true, journalFrom: b.state.recentBase}
	// The state at the cut is the base again from here, while its window
	// and file are written: a new owner chosen meanwhile serves from it
	// rather than decode the checkpoint (servingBase), and it rolls on
	// meanwhile: the journal takes a copy of its window at the cut, and
	// no build starts until the write is done (ckptBusy). The size
	// reported is the state's, window entries included, wherever they
	// are kept.
	r.ckptState, r.ckptStateDigest = b.state, b.digest
	size := len(c.state) + journalEntrySize*b.state.recent.len()
	r.journalWindow(b.state, func() {
		r.writeCheckpoint(c, func() {
			r.n.emit(event.NewCheckpointBuilt(r.name, c.cut, size))
			r.sendReceipt()
			r.compact()
			r.buildCheckpoint() // a newer cut may have been asked for meanwhile
		})
	})
}

// abortBuild drops a build under way: the log it reads is about to
// change, or cannot be read. The state at the checkpoint's cut is decoded
// again when the next build starts.
func (r *replica) abortBuild() {
	if r.build != nil {
		r.build.rd.Close()
		r.build = nil
	}
	r.ckptState = nil
}

// writeCheckpoint makes c the replica's checkpoint and calls done once it
// is durable. A write that fails halts the process: a restart finds the
// previous checkpoint, which is still whole.
func (r *replica) writeCheckpoint(c replicaCheckpoint, done func()) {
	r.ckptBusy = true
	c.madeAt = r.n.env.Now().UnixNano()
	r.n.env.Boundary("checkpoint.before.write")
	r.ckptFile.WriteParts([][]byte{encodeCheckpointHead(c), c.state}, func(err error) {
		r.ckptBusy = false
		if err != nil {
			r.n.env.Halt(fmt.Sprintf("queue %s: writing its checkpoint at %d: %v", r.name, c.cut, err))
			return
		}
		r.n.env.Boundary("checkpoint.after.write")
		if c.cut <= r.ckpt.cut {
			return // an install overtook it
		}
		r.ckpt, r.travelling = c, wireState{}
		r.emitCheckpointDurable()
		done()
	})
}

// emitCheckpointDurable reports the replica's checkpoint as durable: the
// checkers hold every receipt, and so every certificate, to a checkpoint
// reported here before it.
func (r *replica) emitCheckpointDurable() {
	r.n.emit(event.NewCheckpointDurable(r.name, r.inc, r.ckpt.cut, stateDigestText(r.ckpt.stateDigest)))
}

// stateDigestText renders a checkpoint's state digest for events: its
// first eight bytes, enough to tell two states apart in one run.
func stateDigestText(d [32]byte) string { return hex.EncodeToString(d[:8]) }

// compact drops the log segments that both this replica's checkpoint and
// the metadata's certificate cover. The removals need no sync of their
// own: a dropped segment that reappears after a crash is older history
// the next compaction removes again.
func (r *replica) compact() {
	q := r.n.meta.state.queues[r.name]
	if q == nil || q.Incarnation != r.inc || r.log == nil || !r.present() {
		return
	}
	through := min(r.ckpt.cut, q.CheckpointCut)
	if bugs.Active(bugs.CompactBeforeCertificate) {
		through = r.ckpt.cut // planted: the certificate is not waited for
	}
	if r.ckpt.journaled && r.journal != nil {
		if err := r.journal.dropBefore(r.ckpt.journalFrom); err != nil {
			return // the journal failed: the process is halting
		}
	}
	if !r.log.CanTruncateFront(through + 1) {
		r.log.SyncFront(through + 1) // a segment below the cut may wait for a sync nothing else asks for
		return                       // a later tick retries
	}
	before := r.log.FirstIndex()
	r.n.env.Boundary("compaction.before.drop-segments")
	if err := r.log.TruncateFront(through + 1); err != nil {
		return // the log failed: the process is halting
	}
	r.n.env.Boundary("compaction.after.drop-segments")
	if first := r.log.FirstIndex(); first > before {
		r.n.emit(event.NewQueueCompacted(r.name, r.inc, first))
	}
}
