package storage

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure a Log.
type Options struct {
	// SegmentSize is the size at which the active segment is rolled.
	// Default 64 MiB; at most 1 GiB.
	SegmentSize int64
	// MaxRecordSize bounds a record body. Default 4 MiB.
	MaxRecordSize int
	// FirstIndex and BaseDigest say where a fresh log begins: the index
	// of its first record (default 1) and the history digest before it.
	// They are ignored when the log already exists.
	FirstIndex uint64
	BaseDigest Digest
	// OnDurable is called, from a sync completion, whenever the durable
	// index advances.
	OnDurable func(index uint64)
	// OnFailed is called once when the log fails.
	OnFailed func(err error)
}

func (o *Options) fill() {
	if o.SegmentSize == 0 {
		o.SegmentSize = 64 << 20
	}
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = 4 << 20
	}
	if o.FirstIndex == 0 {
		o.FirstIndex = 1
	}
	if o.SegmentSize < segmentHeaderSize || o.SegmentSize > 1<<30 {
		panic(fmt.Sprintf("storage: SegmentSize %d outside [%d, 1 GiB]", o.SegmentSize, segmentHeaderSize))
	}
}

// Entry is a record to append.
type Entry struct {
	Type RecordType
	Body []byte
}

// ErrRecordTooLarge rejects a record body above Options.MaxRecordSize.
var ErrRecordTooLarge = errors.New("storage: record exceeds the size limit")

// Log is an append-only segmented log. It is not safe for concurrent use;
// its owner drives it from one event loop.
type Log struct {
	fs   vfs.FS
	dir  string
	host Host
	opts Options

	// newDirs are directories whose entries changed when Open created the
	// log directory (and perhaps its ancestors); the first sync covers them.
	newDirs   []string
	segments  []*segment
	lastIndex uint64
	digest    Digest
	durable   uint64
	failed    error
	// unwritten holds the frames appended to the active segment and not
	// yet handed to its file: they end at the segment's size. Appends
	// gather here and go out in one write when a sync starts, a read
	// needs them, the segment rolls or they pass writeBehindMax, so a
	// group commit costs one write rather than one per append (write.go).
	unwritten []byte

	inflight   *syncBatch
	syncWanted bool
	// syncBatches counts group commits started, for cost accounting.
	syncBatches uint64

	// gen is the current truncation generation.
	gen uint64
	// dead holds segments a truncation made obsolete: their files are
	// removed once the truncation is durable, and their handles closed
	// once no sync of them is in flight.
	dead []*segment
	// truncatedPending is set while a truncation's successor segment is
	// not yet established.
	truncatedPending bool
	// marks holds the digests after the latest batches, oldest first
	// (digestmarks.go).
	marks []digestMark
}

// Open opens the log in dir, creating it if it does not exist. It verifies
// every segment; a torn unsynced tail is set aside, corruption inside
// durable data is returned as a *CorruptionError. Open requests a sync at
// once when it found segments, because records read back after a process
// crash may still sit only in the operating system's cache: DurableIndex
// covers them only after that sync completes. It also does for a new log
// that starts anywhere but the origin (a first index past 1 or a base
// digest), whose start only its first segment's header records: a log
// reopened without options, as an inspection does, must find it. A new
// log from the origin has nothing to make durable yet: an empty directory
// reopens as the same log, so its first segment and new directories ride
// the sync of its first append (every new queue replica saved a sync so).
func Open(fs vfs.FS, dir string, host Host, opts Options) (*Log, error) {
	opts.fill()
	l := &Log{fs: fs, dir: dir, host: host, opts: opts}
	newDirs, err := ensureDir(fs, dir)
	if err != nil {
		return nil, err
	}
	l.newDirs = newDirs
	names, err := l.listSegments()
	if err != nil {
		return nil, err
	}
	if err := l.load(names); err != nil {
		return nil, err
	}
	fromOrigin := len(l.segments) == 0 && opts.FirstIndex == 1 && opts.BaseDigest == (Digest{})
	if err := l.prepareActive(); err != nil {
		return nil, err
	}
	l.durable = l.computeDurable()
	if !fromOrigin {
		l.RequestSync()
	}
	return l, nil
}

// listSegments returns established segment names in index order, removing
// pending segments left by an earlier process: their records were never
// reported durable.
func (l *Log) listSegments() ([]string, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: listing %s: %w", l.dir, err)
	}
	slices.Sort(names) // MemFS lists in map order
	var segs []string
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, pendingSuffix):
			if err := l.fs.Remove(l.fs.PathJoin(l.dir, name)); err != nil {
				return nil, fmt.Errorf("storage: removing stale %s: %w", name, err)
			}
		case strings.HasSuffix(name, segmentSuffix):
			if _, ok := parseSegmentName(name); !ok {
				return nil, fmt.Errorf("storage: malformed segment name %q in %s", name, l.dir)
			}
			segs = append(segs, name)
		default:
			return nil, fmt.Errorf("storage: unexpected file %q in log directory %s", name, l.dir)
		}
	}
	return segs, nil
}

// load reads and verifies all established segments.
func (l *Log) load(all []string) error {
	var names []string
	var headers []segmentHeader
	for _, name := range all {
		h, err := l.readHeader(name)
		if err != nil {
			return err
		}
		names, headers = append(names, name), append(headers, h)
	}
	names, headers, err := l.dropSuperseded(names, headers)
	if err != nil {
		return err
	}
	l.lastIndex = l.opts.FirstIndex - 1
	l.digest = l.opts.BaseDigest
	for i, name := range names {
		path := l.fs.PathJoin(l.dir, name)
		h := headers[i]
		l.gen = max(l.gen, h.gen)
		if i > 0 {
			prev := l.segments[i-1]
			if h.firstIndex != prev.lastIndex()+1 || h.prevDigest != prev.endDigest || h.gen < prev.header.gen {
				return corrupt(path, 0, h.firstIndex, "segment does not continue %s (ends at %d, digest %s; header says %d, %s)",
					prev.path, prev.lastIndex(), prev.endDigest, h.firstIndex, h.prevDigest)
			}
		} else {
			l.lastIndex, l.digest = h.firstIndex-1, h.prevDigest
		}
		limit := int64(-1)
		if i+1 < len(names) {
			limit = headers[i+1].prevLength
		}
		res, err := scanSegment(l.fs, path, h, limit, l.opts.MaxRecordSize)
		if err != nil {
			return fmt.Errorf("storage: reading %s: %w", path, err)
		}
		if err := l.judgeScan(res, limit); err != nil {
			return err
		}
		l.segments = append(l.segments, res.seg)
		l.lastIndex, l.digest = res.seg.lastIndex(), res.seg.endDigest
	}
	return nil
}

// dropSuperseded removes segments that a later-generation segment at or
// before their first index made obsolete: the leftovers of a truncation
// whose cleanup did not finish.
func (l *Log) dropSuperseded(names []string, headers []segmentHeader) ([]string, []segmentHeader, error) {
	var keptNames []string
	var kept []segmentHeader
	var maxGen uint64
	for i, h := range headers {
		if i > 0 && maxGen > h.gen {
			if err := l.fs.Remove(l.fs.PathJoin(l.dir, names[i])); err != nil {
				return nil, nil, fmt.Errorf("storage: removing superseded segment %s: %w", names[i], err)
			}
			continue
		}
		maxGen = max(maxGen, h.gen)
		keptNames, kept = append(keptNames, names[i]), append(kept, h)
	}
	return keptNames, kept, nil
}

func (l *Log) readHeader(name string) (segmentHeader, error) {
	path := l.fs.PathJoin(l.dir, name)
	f, err := l.fs.Open(path)
	if err != nil {
		return segmentHeader{}, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, segmentHeaderSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n < len(buf) && !isEOF(err) {
		return segmentHeader{}, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	h, herr := decodeSegmentHeader(buf[:n])
	if herr != nil {
		return segmentHeader{}, corrupt(path, 0, 0, "segment header: %v", herr)
	}
	if first, _ := parseSegmentName(name); first != h.firstIndex {
		return segmentHeader{}, corrupt(path, 0, h.firstIndex, "header says first index %d, name says %d", h.firstIndex, first)
	}
	return h, nil
}

// judgeScan decides whether a bad frame is a torn tail or corruption.
func (l *Log) judgeScan(res scanResult, limit int64) error {
	seg := res.seg
	if res.badAt < 0 {
		seg.synced = seg.size
		if limit < 0 {
			seg.synced = res.maxSynced
		}
		return nil
	}
	index := seg.header.firstIndex + uint64(len(seg.offsets))
	if limit >= 0 {
		return corrupt(seg.path, res.badAt, index, "%s, inside a sealed segment", res.reason)
	}
	if res.badAt < res.maxSynced {
		return corrupt(seg.path, res.badAt, index, "%s, below the synced offset %d", res.reason, res.maxSynced)
	}
	seg.synced = res.maxSynced
	return nil
}

// prepareActive makes the last segment writable, or starts a new one when
// the log is empty or its last segment has a torn tail.
func (l *Log) prepareActive() error {
	if len(l.segments) == 0 {
		return l.startSegment(0, l.opts.BaseDigest)
	}
	last := l.segments[len(l.segments)-1]
	info, err := l.fs.Stat(last.path)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	f, err := l.fs.OpenReadWrite(last.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("storage: reopening %s: %w", last.path, err)
	}
	if info.Size() == last.size {
		last.file = f
		return nil
	}
	// A torn tail: leave the bytes in place and start a successor that
	// records this segment's valid length.
	if len(last.offsets) == 0 {
		// No valid record: the successor takes this segment's name and
		// replaces it on rename.
		f.Close()
		l.segments = l.segments[:len(l.segments)-1]
		prevLen := int64(0)
		if n := len(l.segments); n > 0 {
			prevLen = l.segments[n-1].size
		}
		return l.startSegment(prevLen, last.header.prevDigest)
	}
	last.file = f
	return l.startSegment(last.size, last.endDigest)
}

// startSegment creates a pending segment for the next record.
func (l *Log) startSegment(prevLength int64, prevDigest Digest) error {
	// What the segment before gathered belongs in its file, not this one's.
	if err := l.writeOut(); err != nil {
		return err
	}
	first := l.lastIndex + 1
	h := segmentHeader{firstIndex: first, prevLength: prevLength, prevDigest: prevDigest, gen: l.gen}
	path := l.fs.PathJoin(l.dir, pendingName(first))
	l.host.Boundary("storage.before.create-segment")
	f, err := l.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return l.fail("creating segment", err)
	}
	if _, err := f.WriteAt(h.encode(), 0); err != nil {
		f.Close()
		return l.fail("writing segment header", err)
	}
	l.segments = append(l.segments, &segment{
		header: h, path: path, file: f, size: segmentHeaderSize, pending: true, endDigest: prevDigest,
	})
	l.host.Boundary("storage.after.create-segment")
	return nil
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// Rest closes the active segment's write handle when everything written
// to it is durable and established and no sync is in flight; the next
// append opens it again. A node with thousands of idle queues otherwise
// holds a descriptor per queue for nothing, and a mass failover, which
// opens more files at once, then ran out of them. It reports whether the
// log now holds no write handle.
func (l *Log) Rest() bool {
	if l.failed != nil || len(l.segments) == 0 {
		return false
	}
	seg := l.active()
	if seg.file == nil {
		return true
	}
	if l.inflight != nil || l.syncWanted || seg.pending || seg.synced < seg.size || seg.syncing > 0 {
		return false
	}
	seg.file.Close()
	seg.file = nil
	return true
}

// reopenActive opens the write handle of an active segment that rested.
func (l *Log) reopenActive(seg *segment) error {
	f, err := l.fs.OpenReadWrite(seg.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return l.fail("reopening the active segment", err)
	}
	seg.file = f
	return nil
}

// Append appends one record and returns its index.
func (l *Log) Append(typ RecordType, body []byte) (uint64, error) {
	return l.AppendBatch([]Entry{{Type: typ, Body: body}})
}

// AppendBatch appends records and returns the index of the last. The
// records reach the segment's file with the next write-out (at the latest
// when a sync starts) and are not durable until a sync requested after
// this call completes.
func (l *Log) AppendBatch(entries []Entry) (uint64, error) {
	if l.failed != nil {
		return 0, l.failed
	}
	if len(entries) == 0 {
		return l.lastIndex, nil
	}
	seg := l.active()
	buf := l.unwritten
	offsets := make([]uint32, 0, len(entries))
	digest := l.digest
	for i, e := range entries {
		if e.Type == 0 {
			panic("storage: record type 0 is reserved")
		}
		if len(e.Body) > l.opts.MaxRecordSize {
			return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(e.Body), l.opts.MaxRecordSize)
		}
		index := l.lastIndex + 1 + uint64(i)
		offsets = append(offsets, uint32(seg.size+int64(len(buf)-len(l.unwritten))))
		buf = appendFrame(buf, index, e.Type, e.Body, uint32(seg.synced))
		digest = digest.Next(index, e.Type, e.Body)
	}
	added := int64(len(buf) - len(l.unwritten))
	l.unwritten = buf
	seg.offsets = append(seg.offsets, offsets...)
	seg.size += added
	seg.endDigest = digest
	l.digest = digest
	l.lastIndex += uint64(len(entries))
	l.markDigest(l.lastIndex, digest)
	if len(l.unwritten) >= writeBehindMax {
		if err := l.writeOut(); err != nil {
			return 0, err
		}
	}
	if seg.size >= l.opts.SegmentSize && !seg.pending {
		if err := l.startSegment(seg.size, l.digest); err != nil {
			return 0, err
		}
	}
	return l.lastIndex, nil
}

func (l *Log) fail(op string, err error) error {
	if l.failed == nil {
		l.failed = failed(op, err)
		l.inflight = nil
		if l.opts.OnFailed != nil {
			l.opts.OnFailed(l.failed)
		}
	}
	return l.failed
}

// FirstIndex is the index of the first retained record.
func (l *Log) FirstIndex() uint64 { return l.segments[0].header.firstIndex }

// LastIndex is the index of the last appended record (durable or not).
func (l *Log) LastIndex() uint64 { return l.lastIndex }

// DurableIndex is the index of the last record known durable.
func (l *Log) DurableIndex() uint64 { return l.durable }

// Digest is the history digest after the last appended record.
func (l *Log) Digest() Digest { return l.digest }

// Err reports why the log failed, or nil.
func (l *Log) Err() error { return l.failed }

// SyncInFlight reports whether a sync batch is outstanding.
func (l *Log) SyncInFlight() bool { return l.inflight != nil }

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func isNotExistErr(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

// BaseDigest is the history digest before the first retained record: the
// digest a checkpoint at FirstIndex-1 must carry.
func (l *Log) BaseDigest() Digest { return l.segments[0].header.prevDigest }

// RetainedBytes is the size of the segments the log keeps: what
// compaction has not dropped yet.
func (l *Log) RetainedBytes() int64 {
	var n int64
	for _, seg := range l.segments {
		n += seg.size
	}
	return n
}

// Segments is how many segment files the log keeps.
func (l *Log) Segments() int { return len(l.segments) }

// FrontLastIndex is the last index of the log's first segment, the one
// compaction drops next, and false when that segment is the active one,
// which is never dropped.
func (l *Log) FrontLastIndex() (uint64, bool) {
	if len(l.segments) < 2 {
		return 0, false
	}
	return l.segments[0].lastIndex(), true
}
