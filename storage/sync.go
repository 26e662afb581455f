package storage

import (
	"slices"

	"github.com/cairnmq/cairn/bugs"
)

// syncBatch is one group commit. Phase one syncs the data of every segment
// that still has unsynced bytes; phase two renames pending segments whose
// predecessors are now complete and syncs the directories whose entries
// changed. Only then does the durable index move.
type syncBatch struct {
	targets     []syncTarget
	outstanding int
	err         error
}

type syncTarget struct {
	seg  *segment
	size int64
}

// RequestSync asks for everything appended so far to become durable. If a
// sync is already in flight, the request rides the next batch.
func (l *Log) RequestSync() {
	if l.failed != nil {
		return
	}
	if l.inflight != nil {
		l.syncWanted = true
		return
	}
	if !bugs.Active(bugs.SyncSkipsWriteOut) && l.writeOut() != nil {
		return
	}
	b := &syncBatch{}
	for _, seg := range l.segments {
		if seg.file != nil && (seg.synced < seg.size || seg.pending) {
			b.targets = append(b.targets, syncTarget{seg: seg, size: seg.size})
		}
	}
	if len(b.targets) == 0 && len(l.newDirs) == 0 {
		return
	}
	l.inflight = b
	l.syncBatches++
	l.host.Boundary("storage.before.sync")
	if len(b.targets) == 0 {
		l.syncDirs(b)
		return
	}
	b.outstanding = len(b.targets)
	for _, t := range b.targets {
		l.syncSegment(t.seg, func(err error) { l.fileSynced(b, err) })
	}
}

// DirSynced tells the log that dir, one of the directories whose entries
// changed when Open created the log directory, was synced by its caller
// after Open returned, so the log's first sync need not sync it again. A
// new queue replica's first state file write syncs the replica's
// directory, which holds the log directory made a moment before: each
// new replica saves one sync so. It does nothing while a sync is in
// flight, which may be syncing dir already.
func (l *Log) DirSynced(dir string) {
	if l.inflight != nil {
		return
	}
	l.newDirs = slices.DeleteFunc(l.newDirs, func(d string) bool { return d == dir })
}

// SyncBatches counts the group commits this log has started since it
// was opened; callers difference it to learn what an operation cost.
func (l *Log) SyncBatches() uint64 { return l.syncBatches }

// syncSegment asks the host to sync a segment's file, keeping count of
// syncs in flight so the handle outlives them. A failure fails the log
// even if the batch that asked was abandoned by a truncation: after a
// failed fsync nothing unsynced in that file can be trusted.
func (l *Log) syncSegment(seg *segment, done func(error)) {
	seg.syncing++
	l.host.Sync(seg.file, func(err error) {
		seg.syncing--
		l.closeIfIdle(seg)
		if err != nil {
			l.fail("syncing segment", err)
			return
		}
		done(nil)
	})
}

// closeIfIdle closes a dead segment's handle once no sync needs it.
func (l *Log) closeIfIdle(seg *segment) {
	if seg.syncing == 0 && seg.file != nil && slices.Contains(l.dead, seg) {
		seg.file.Close()
		seg.file = nil
	}
}

func (l *Log) fileSynced(b *syncBatch, err error) {
	if l.inflight != b {
		return // the log failed while this sync was in flight
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	b.outstanding--
	if b.outstanding > 0 {
		return
	}
	if b.err != nil {
		l.fail("syncing segment", b.err)
		return
	}
	for _, t := range b.targets {
		t.seg.synced = max(t.seg.synced, t.size)
	}
	l.syncDirs(b)
}

// syncDirs renames each pending segment whose predecessor is complete and
// whose own header is durable, then syncs the directory (and the parent of
// a freshly created log directory).
func (l *Log) syncDirs(b *syncBatch) {
	dirDirty := false
	for i, seg := range l.segments {
		if !seg.pending || seg.synced < segmentHeaderSize {
			continue
		}
		if i > 0 {
			prev := l.segments[i-1]
			if prev.pending || prev.synced < prev.size {
				continue
			}
		}
		final := l.fs.PathJoin(l.dir, segmentName(seg.header.firstIndex))
		l.host.Boundary("storage.before.rename-segment")
		if err := l.fs.Rename(seg.path, final); err != nil {
			l.fail("renaming segment", err)
			return
		}
		seg.path, seg.pending = final, false
		dirDirty = true
		l.host.Boundary("storage.after.rename-segment")
	}
	var dirs []string
	if dirDirty && !bugs.Active(bugs.SkipDirSync) {
		dirs = append(dirs, l.dir)
	}
	created := l.newDirs
	dirs = append(dirs, created...)
	if len(dirs) == 0 {
		l.finishSync(b)
		return
	}
	syncDirNames(l.fs, l.host, dirs, func(err error) {
		if err != nil {
			l.fail("syncing log directory", err)
			return
		}
		if l.inflight != b {
			return
		}
		l.newDirs = l.newDirs[len(created):]
		l.finishSync(b)
	})
}

func (l *Log) finishSync(b *syncBatch) {
	l.inflight = nil
	l.host.Boundary("storage.after.sync")
	// Sealed segments that are complete and established need no write
	// handle any more.
	for _, seg := range l.segments[:len(l.segments)-1] {
		if seg.file != nil && !seg.pending && seg.synced >= seg.size && seg.syncing == 0 {
			seg.file.Close()
			seg.file = nil
		}
	}
	if l.truncatedPending && !l.anyPending() {
		l.removeDead()
	}
	// An active segment that outgrew the segment size while it was still
	// pending rolls as soon as it is established, not at the next append,
	// which may be long in coming: until it rolls, compaction cannot drop
	// any of it.
	if seg := l.active(); !seg.pending && seg.size >= l.opts.SegmentSize && len(seg.offsets) > 0 {
		if err := l.startSegment(seg.size, l.digest); err != nil {
			return
		}
		l.syncWanted = true
	}
	advanced := false
	if d := l.computeDurable(); d > l.durable {
		l.durable, advanced = d, true
	}
	if l.syncWanted {
		l.syncWanted = false
		l.RequestSync()
	}
	if advanced && l.opts.OnDurable != nil {
		l.opts.OnDurable(l.durable)
	}
}

// computeDurable finds the last record that lies in an established
// segment and below that segment's synced offset, with every earlier
// segment complete.
func (l *Log) computeDurable() uint64 {
	durable := l.segments[0].header.firstIndex - 1
	for _, seg := range l.segments {
		if seg.pending {
			return durable
		}
		if seg.synced >= seg.size {
			durable = seg.lastIndex()
			continue
		}
		for i := range seg.offsets {
			if seg.frameEnd(i) > seg.synced {
				break
			}
			durable = seg.header.firstIndex + uint64(i)
		}
		return durable
	}
	return durable
}

// Close releases the log's file handles. Records not yet durable stay
// wherever the operating system has them; a sync in flight completes
// unheeded, so a closed log never reports durability again.
func (l *Log) Close() error {
	if l.failed == nil && len(l.unwritten) > 0 && len(l.segments) > 0 && l.active().file != nil {
		// The gathered frames go where written frames go, into the
		// operating system's cache, as they would have without the
		// gathering; they were never durable, so a failed write changes
		// nothing a reader may rely on.
		_ = l.writeGathered(l.active())
	}
	l.unwritten = nil
	l.inflight = nil
	// A handle with a sync in flight stays open until that sync is done:
	// the host may still be using it.
	l.dead = append(l.dead, l.segments...)
	for _, seg := range l.dead {
		l.closeIfIdle(seg)
	}
	if l.failed == nil {
		l.failed = failed("using", errClosed)
	}
	return nil
}
