package storage

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrCompacted is returned for a read below the log's first retained index.
var ErrCompacted = errors.New("storage: records below the first retained index are gone")

// Reader reads a log sequentially in bounded pages. Each page is read with
// one positioned read into a buffer the reader reuses, and every frame is
// verified again, so damage that appeared after open is caught on read.
type Reader struct {
	l       *Log
	next    uint64
	file    vfs.File
	seg     *segment
	buf     []byte
	records []Record
}

// NewReader returns a reader positioned at index from.
func (l *Log) NewReader(from uint64) *Reader {
	return &Reader{l: l, next: from}
}

// Position is the index the next page starts at.
func (r *Reader) Position() uint64 { return r.next }

// Next returns the next page: up to maxRecords records and, beyond the
// first record, at most maxBytes of bodies, never past index upTo. The
// records alias the reader's buffer and stay valid until the next call. An
// empty page means the reader has reached upTo or the end of the log.
func (r *Reader) Next(upTo uint64, maxRecords, maxBytes int) ([]Record, error) {
	if maxRecords <= 0 {
		panic(fmt.Sprintf("storage: Reader.Next with maxRecords %d", maxRecords))
	}
	upTo = min(upTo, r.l.lastIndex)
	if r.next > upTo {
		return nil, nil
	}
	if r.next < r.l.FirstIndex() {
		return nil, fmt.Errorf("%w: want %d, first is %d", ErrCompacted, r.next, r.l.FirstIndex())
	}
	seg := r.l.segmentFor(r.next)
	if err := r.openSegment(seg); err != nil {
		return nil, err
	}
	first := int(r.next - seg.header.firstIndex)
	last := first
	limit := min(int(upTo-seg.header.firstIndex), len(seg.offsets)-1)
	bytes := seg.frameEnd(first) - int64(seg.offsets[first])
	for last < limit && last-first+1 < maxRecords {
		n := seg.frameEnd(last+1) - int64(seg.offsets[last+1])
		if bytes+n > int64(maxBytes)+int64(frameHeaderSize)*int64(last-first+2) {
			break
		}
		bytes += n
		last++
	}
	start, end := int64(seg.offsets[first]), seg.frameEnd(last)
	if cap(r.buf) < int(end-start) {
		r.buf = make([]byte, end-start)
	}
	buf := r.buf[:end-start]
	if err := r.l.readAt(seg, r.file, buf, start); err != nil {
		return nil, err
	}
	r.records = r.records[:0]
	for i := first; i <= last; i++ {
		lo, hi := int64(seg.offsets[i])-start, seg.frameEnd(i)-start
		frame := buf[lo:hi]
		fh := parseFrameHeader(frame)
		index := seg.header.firstIndex + uint64(i)
		if (!frameValid(frame) && !bugs.Active(bugs.ReadSkipsVerify)) || fh.index != index {
			return nil, corrupt(seg.path, int64(seg.offsets[i]), index, "frame fails verification on read")
		}
		r.records = append(r.records, Record{Index: index, Type: fh.typ, Body: frame[frameHeaderSize:]})
	}
	r.next = seg.header.firstIndex + uint64(last) + 1
	return r.records, nil
}

func (r *Reader) openSegment(seg *segment) error {
	if r.seg == seg && r.file != nil {
		return nil
	}
	r.Close()
	f, err := r.l.fs.Open(seg.path)
	if err != nil {
		return fmt.Errorf("storage: opening %s: %w", seg.path, err)
	}
	r.seg, r.file = seg, f
	return nil
}

// Close releases the reader's file handle.
func (r *Reader) Close() {
	if r.file != nil {
		r.file.Close()
		r.file, r.seg = nil, nil
	}
}

// segmentFor finds the segment holding index, which must be retained.
func (l *Log) segmentFor(index uint64) *segment {
	i := sort.Search(len(l.segments), func(i int) bool {
		return l.segments[i].header.firstIndex > index
	})
	if i == 0 {
		panic(fmt.Sprintf("storage: index %d below first segment", index))
	}
	return l.segments[i-1]
}
