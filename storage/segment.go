package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

const (
	segmentSuffix  = ".seg"
	pendingSuffix  = ".seg.pending"
	segmentVersion = 1
	// segmentHeaderSize: magic (8), version (2), reserved (2), first index
	// (8), previous segment's valid length (8), digest before the first
	// record (32), generation (8), crc (4).
	segmentHeaderSize = 72
)

var segmentMagic = [8]byte{'c', 'a', 'i', 'r', 'n', 's', 'e', 'g'}

// segmentHeader opens every segment file.
type segmentHeader struct {
	firstIndex uint64
	prevLength int64  // valid bytes of the previous segment; 0 if none
	prevDigest Digest // history digest before firstIndex
	// gen is the log's truncation generation when the segment was made. A
	// segment supersedes every lower-generation segment at or after its
	// first index: that is how a truncation stays correct even if the
	// files it made obsolete are still on disk.
	gen uint64
}

func (h segmentHeader) encode() []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b[0:8], segmentMagic[:])
	binary.LittleEndian.PutUint16(b[8:10], segmentVersion)
	binary.LittleEndian.PutUint64(b[12:20], h.firstIndex)
	binary.LittleEndian.PutUint64(b[20:28], uint64(h.prevLength))
	copy(b[28:60], h.prevDigest[:])
	binary.LittleEndian.PutUint64(b[60:68], h.gen)
	binary.LittleEndian.PutUint32(b[68:72], crc32.Checksum(b[:68], castagnoli))
	return b
}

func decodeSegmentHeader(b []byte) (segmentHeader, error) {
	if len(b) < segmentHeaderSize {
		return segmentHeader{}, fmt.Errorf("header is %d bytes, want %d", len(b), segmentHeaderSize)
	}
	if !bytes.Equal(b[0:8], segmentMagic[:]) {
		return segmentHeader{}, fmt.Errorf("bad magic %q", b[0:8])
	}
	if crc32.Checksum(b[:68], castagnoli) != binary.LittleEndian.Uint32(b[68:72]) {
		return segmentHeader{}, fmt.Errorf("header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint16(b[8:10]); v != segmentVersion {
		return segmentHeader{}, fmt.Errorf("unsupported segment version %d", v)
	}
	var h segmentHeader
	h.firstIndex = binary.LittleEndian.Uint64(b[12:20])
	h.prevLength = int64(binary.LittleEndian.Uint64(b[20:28]))
	copy(h.prevDigest[:], b[28:60])
	h.gen = binary.LittleEndian.Uint64(b[60:68])
	return h, nil
}

func segmentName(firstIndex uint64) string { return fmt.Sprintf("%020d%s", firstIndex, segmentSuffix) }

func pendingName(firstIndex uint64) string { return fmt.Sprintf("%020d%s", firstIndex, pendingSuffix) }

// parseSegmentName returns the first index encoded in an established
// segment's file name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	return v, err == nil
}

// segment is the in-memory view of one segment file.
type segment struct {
	header segmentHeader
	path   string
	// file is the write handle; nil once the segment is sealed and synced.
	file vfs.File
	// size is the number of valid bytes: the header plus whole frames.
	size int64
	// synced is a lower bound on the bytes of this file known durable.
	synced int64
	// offsets holds the file offset of each record's frame, in order.
	offsets []uint32
	// pending is true while the file still has its ".pending" name.
	pending bool
	// endDigest is the history digest after the segment's last record.
	endDigest Digest
	// syncing counts host syncs of file still in flight; the handle may
	// only be closed once it is zero.
	syncing int
}

// lastIndex is the index of the segment's last record, or firstIndex-1 if
// the segment holds none.
func (s *segment) lastIndex() uint64 { return s.header.firstIndex + uint64(len(s.offsets)) - 1 }

// frameEnd is the end offset of the i-th record's frame.
func (s *segment) frameEnd(i int) int64 {
	if i+1 < len(s.offsets) {
		return int64(s.offsets[i+1])
	}
	return s.size
}
