package storage

import (
	"fmt"
	"slices"
)

// TruncateAfter discards every record after index k, so the next append
// gets index k+1. It is how a replica drops a suffix that the owner of a
// newer epoch never confirmed.
//
// Nothing is rewritten in place. The segment holding k+1 is cut by a new
// successor segment, of a higher generation, whose header records the
// cut; segments after the cut are superseded by that generation and
// removed once the successor is established. If the process crashes
// before then, the log reopens either as it was before the truncation or
// as truncated, never as a mix, and DurableIndex never covers a record
// after k until the truncation itself is durable.
func (l *Log) TruncateAfter(k uint64) error {
	if l.failed != nil {
		return l.failed
	}
	if k >= l.lastIndex {
		return nil
	}
	// The cut reads its segment back from the file.
	if err := l.writeOut(); err != nil {
		return err
	}
	if first := l.FirstIndex(); k+1 < first {
		return fmt.Errorf("%w: cannot truncate to %d, first retained index is %d", ErrCompacted, k, first)
	}
	l.host.Boundary("storage.before.truncate")
	// The batch in flight was aimed at records that may be gone; let it
	// finish unheeded and start afresh.
	l.inflight, l.syncWanted = nil, false
	l.gen++
	i := slices.IndexFunc(l.segments, func(s *segment) bool { return s.lastIndex() > k })
	cut := l.segments[i]
	for _, seg := range l.segments[i+1:] {
		l.bury(seg)
	}
	j := int(k + 1 - cut.header.firstIndex)
	var prevLength int64
	var prevDigest Digest
	if j == 0 {
		// The cut segment loses every record; its successor takes its
		// first index, and so its name.
		l.bury(cut)
		l.segments = l.segments[:i]
		prevDigest = cut.header.prevDigest
		if i > 0 {
			prevLength = l.segments[i-1].size
		}
	} else {
		if err := l.cutSegment(cut, j); err != nil {
			return err
		}
		l.segments = l.segments[:i+1]
		prevLength, prevDigest = cut.size, cut.endDigest
	}
	l.lastIndex, l.digest = k, prevDigest
	l.forgetDigestsAfter(k)
	l.durable = min(l.durable, k)
	l.truncatedPending = true
	if err := l.startSegment(prevLength, prevDigest); err != nil {
		return err
	}
	l.host.Boundary("storage.after.truncate")
	l.RequestSync()
	return nil
}

// cutSegment keeps the first j records of seg and recomputes its closing
// digest by reading them back.
func (l *Log) cutSegment(seg *segment, j int) error {
	limit := int64(seg.offsets[j])
	res, err := scanSegment(l.fs, seg.path, seg.header, limit, l.opts.MaxRecordSize)
	if err != nil {
		return l.fail("rereading a segment to truncate it", err)
	}
	if res.badAt >= 0 || len(res.seg.offsets) != j {
		return corrupt(seg.path, res.badAt, seg.header.firstIndex+uint64(len(res.seg.offsets)), "while truncating: %s", res.reason)
	}
	seg.offsets = seg.offsets[:j]
	seg.size = limit
	seg.synced = min(seg.synced, limit)
	seg.endDigest = res.seg.endDigest
	return nil
}

// bury moves a segment to the dead list.
func (l *Log) bury(seg *segment) {
	l.dead = append(l.dead, seg)
	l.closeIfIdle(seg)
}

func (l *Log) anyPending() bool {
	return slices.ContainsFunc(l.segments, func(s *segment) bool { return s.pending })
}

// removeDead deletes the files of superseded segments once the truncation
// that superseded them is established. The removals need no directory
// sync: a dead file that reappears after a crash is superseded again.
func (l *Log) removeDead() {
	live := make(map[string]bool, len(l.segments))
	for _, seg := range l.segments {
		live[seg.path] = true
	}
	for _, seg := range l.dead {
		if !live[seg.path] {
			if err := l.fs.Remove(seg.path); err != nil && !isNotExistErr(err) {
				l.fail("removing a superseded segment", err)
				return
			}
		}
	}
	l.dead = slices.DeleteFunc(l.dead, func(s *segment) bool { return s.file == nil })
	l.truncatedPending = false
}

// TruncateFront drops whole segments whose records all lie before index,
// once a snapshot covers them. The segment holding index stays, so the
// first retained index may remain below it. The removals need no sync: a
// dropped segment that reappears after a crash is older history that the
// next TruncateFront removes again.
func (l *Log) TruncateFront(index uint64) error {
	if l.failed != nil {
		return l.failed
	}
	drop := 0
	for drop < len(l.segments)-1 {
		seg := l.segments[drop]
		if seg.lastIndex() >= index || !sealedAndSynced(seg) {
			break
		}
		drop++
	}
	for _, seg := range l.segments[:drop] {
		if seg.file != nil {
			seg.file.Close() // sealed and synced: a later sync would have closed it
			seg.file = nil
		}
		if err := l.fs.Remove(seg.path); err != nil && !isNotExistErr(err) {
			return l.fail("removing a compacted segment", err)
		}
	}
	l.segments = slices.Delete(l.segments, 0, drop)
	return nil
}

// CanTruncateFront reports whether TruncateFront(index) would drop a
// segment now: the first one is sealed, its write handle closed, and all
// its records lie before index.
func (l *Log) CanTruncateFront(index uint64) bool {
	if l.failed != nil || len(l.segments) < 2 {
		return false
	}
	seg := l.segments[0]
	return seg.lastIndex() < index && sealedAndSynced(seg)
}

// SyncFront asks for a sync when the first segment lies wholly before
// index but is not yet established and synced: that is what keeps
// TruncateFront(index) from dropping it, and a log that takes no more
// appends asks for no sync of its own.
func (l *Log) SyncFront(index uint64) {
	if l.failed != nil || len(l.segments) < 2 {
		return
	}
	if seg := l.segments[0]; seg.lastIndex() < index && !sealedAndSynced(seg) {
		l.RequestSync()
	}
}

// sealedAndSynced reports whether a segment that is not the active one is
// established and durable with no sync of it in flight: nothing will
// write or sync it again, so its handle may be closed and the file
// dropped.
func sealedAndSynced(seg *segment) bool {
	return !seg.pending && seg.synced >= seg.size && seg.syncing == 0
}
