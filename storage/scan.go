package storage

import (
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// scanChunkSize is how much a sequential scan reads at a time. The scan's
// buffer grows beyond it only to hold a single frame larger than a chunk.
const scanChunkSize = 256 << 10

// minScanChunk is the smallest buffer a scan starts with.
const minScanChunk = 4 << 10

// fileScanner reads a file sequentially through a bounded window.
type fileScanner struct {
	f     vfs.File
	start int64 // file offset of buf[0]
	buf   []byte
	pos   int // read position within buf
	eof   bool
	// chunk is how much one read asks for, unless a frame needs more.
	chunk int
}

func newFileScanner(f vfs.File, from, size int64) *fileScanner {
	// A file smaller than a chunk is read whole into a buffer of its own
	// size (plus the byte that finds the end in the same read): small
	// segments, as the simulator uses, would otherwise allocate and clear
	// a whole chunk at every scan.
	chunk := int(min(max(size-from+1, minScanChunk), scanChunkSize))
	return &fileScanner{f: f, start: from, chunk: chunk, buf: make([]byte, 0, chunk)}
}

// offset is the file offset of the read position.
func (s *fileScanner) offset() int64 { return s.start + int64(s.pos) }

// peek returns the next n bytes without consuming them, or fewer if the
// file ends first.
func (s *fileScanner) peek(n int) ([]byte, error) {
	for len(s.buf)-s.pos < n && !s.eof {
		if err := s.fill(n); err != nil {
			return nil, err
		}
	}
	end := min(s.pos+n, len(s.buf))
	return s.buf[s.pos:end], nil
}

// fill slides the window forward and reads another chunk.
func (s *fileScanner) fill(want int) error {
	if s.pos > 0 {
		copy(s.buf, s.buf[s.pos:])
		s.start += int64(s.pos)
		s.buf = s.buf[:len(s.buf)-s.pos]
		s.pos = 0
	}
	need := max(want, s.chunk)
	if cap(s.buf) < need {
		grown := make([]byte, len(s.buf), need)
		copy(grown, s.buf)
		s.buf = grown
	}
	have := len(s.buf)
	n, err := s.f.ReadAt(s.buf[have:cap(s.buf)], s.start+int64(have))
	s.buf = s.buf[:have+n]
	if errors.Is(err, io.EOF) || (err == nil && n == 0) {
		s.eof = true
		return nil
	}
	return err
}

func (s *fileScanner) skip(n int) { s.pos += n }

// scanResult is what a segment scan learned.
type scanResult struct {
	seg *segment
	// badAt is the offset of the first frame that did not verify, or -1
	// if the scan reached its end cleanly.
	badAt  int64
	reason string
	// fileSize is the file's length on disk.
	fileSize int64
	// maxSynced is the largest synced-through value among valid frames.
	maxSynced int64
}

// scanSegment reads a segment's frames, checking each frame's CRC, index
// and synced-through field and extending the rolling digest. limit is the
// segment's valid length as recorded by its successor's header, or -1 for
// the last segment, which is scanned to its end.
func scanSegment(fs vfs.FS, path string, h segmentHeader, limit int64, maxRecord int) (scanResult, error) {
	f, err := fs.Open(path)
	if err != nil {
		return scanResult{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return scanResult{}, err
	}
	seg := &segment{header: h, path: path, size: segmentHeaderSize, endDigest: h.prevDigest}
	res := scanResult{seg: seg, badAt: -1, fileSize: info.Size(), maxSynced: segmentHeaderSize}
	sc := newFileScanner(f, segmentHeaderSize, info.Size())
	expect := h.firstIndex
	for {
		off := sc.offset()
		if off == limit || (limit < 0 && off == res.fileSize) {
			return res, nil
		}
		reason, n, err := checkFrameAt(sc, expect, maxRecord)
		if err != nil {
			return scanResult{}, err
		}
		if reason != "" {
			res.badAt, res.reason = off, reason
			if limit < 0 {
				// Frames that survive beyond the damage still say how
				// much of the file was durable when they were written.
				later, err := laterSyncedMark(sc, expect, maxRecord)
				if err != nil {
					return scanResult{}, err
				}
				res.maxSynced = max(res.maxSynced, later)
			}
			return res, nil
		}
		frame, _ := sc.peek(n)
		fh := parseFrameHeader(frame)
		seg.offsets = append(seg.offsets, uint32(off))
		seg.endDigest = seg.endDigest.Next(fh.index, fh.typ, frame[frameHeaderSize:])
		res.maxSynced = max(res.maxSynced, int64(fh.syncedThrough))
		seg.size = off + int64(n)
		sc.skip(n)
		expect++
		if limit >= 0 && seg.size > limit {
			res.badAt, res.reason = off, "frame crosses the valid length recorded by the next segment"
			return res, nil
		}
	}
}

// checkFrameAt verifies the frame at the scanner's position. It returns a
// non-empty reason if the frame is invalid, else the frame's total length.
func checkFrameAt(sc *fileScanner, expect uint64, maxRecord int) (string, int, error) {
	off := sc.offset()
	hdr, err := sc.peek(frameHeaderSize)
	if err != nil {
		return "", 0, err
	}
	if len(hdr) < frameHeaderSize {
		return "file ends inside a frame header", 0, nil
	}
	fh := parseFrameHeader(hdr)
	switch {
	case fh.typ == 0:
		return "zero record type", 0, nil
	case int64(fh.bodyLen) > int64(maxRecord):
		return "frame length exceeds the record size limit", 0, nil
	case fh.index != expect:
		return "frame index out of sequence", 0, nil
	case int64(fh.syncedThrough) > off:
		return "synced-through beyond the frame itself", 0, nil
	}
	n := frameHeaderSize + int(fh.bodyLen)
	frame, err := sc.peek(n)
	if err != nil {
		return "", 0, err
	}
	if len(frame) < n {
		return "file ends inside a frame body", 0, nil
	}
	if !frameValid(frame) {
		return "frame checksum mismatch", 0, nil
	}
	return "", n, nil
}

// laterSyncedMark searches past a bad frame, byte by byte, for frames that
// still verify, and returns the largest synced-through mark among them. A
// frame verifies only if its CRC32C matches and its index is one the log
// could hold there, so a false match in damaged bytes is vanishingly
// unlikely. This runs only when a segment is damaged.
func laterSyncedMark(sc *fileScanner, expect uint64, maxRecord int) (int64, error) {
	var mark int64
	sc.skip(1)
	for {
		hdr, err := sc.peek(frameHeaderSize)
		if err != nil {
			return 0, err
		}
		if len(hdr) < frameHeaderSize {
			return mark, nil
		}
		fh := parseFrameHeader(hdr)
		if fh.typ == 0 || int64(fh.bodyLen) > int64(maxRecord) || fh.index <= expect || fh.index-expect > 1<<32 {
			sc.skip(1)
			continue
		}
		n := frameHeaderSize + int(fh.bodyLen)
		frame, err := sc.peek(n)
		if err != nil {
			return 0, err
		}
		if len(frame) < n || !frameValid(frame) || int64(fh.syncedThrough) > sc.offset() {
			sc.skip(1)
			continue
		}
		mark = max(mark, int64(fh.syncedThrough))
		sc.skip(n)
	}
}
