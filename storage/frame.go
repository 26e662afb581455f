package storage

import (
	"encoding/binary"
	"hash/crc32"
)

// RecordType is the caller's tag for a record. Zero is reserved so that a
// zero-filled region of a file can never parse as a valid frame.
type RecordType uint8

// Record is one log entry. Body may alias a reader's buffer; copy it to
// keep it past the next read.
type Record struct {
	Index uint64
	Type  RecordType
	Body  []byte
}

// frameHeaderSize is the size of a frame header:
// crc (4), body length (4), type (1), index (8), synced-through (4).
const frameHeaderSize = 21

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends a frame for one record to b.
func appendFrame(b []byte, index uint64, typ RecordType, body []byte, syncedThrough uint32) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeaderSize)...)
	h := b[start:]
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(body)))
	h[8] = byte(typ)
	binary.LittleEndian.PutUint64(h[9:17], index)
	binary.LittleEndian.PutUint32(h[17:21], syncedThrough)
	b = append(b, body...)
	crc := crc32.Update(0, castagnoli, b[start+4:])
	binary.LittleEndian.PutUint32(b[start:start+4], crc)
	return b
}

// frameHeader is a parsed, not yet verified, frame header.
type frameHeader struct {
	crc           uint32
	bodyLen       uint32
	typ           RecordType
	index         uint64
	syncedThrough uint32
}

func parseFrameHeader(h []byte) frameHeader {
	return frameHeader{
		crc:           binary.LittleEndian.Uint32(h[0:4]),
		bodyLen:       binary.LittleEndian.Uint32(h[4:8]),
		typ:           RecordType(h[8]),
		index:         binary.LittleEndian.Uint64(h[9:17]),
		syncedThrough: binary.LittleEndian.Uint32(h[17:21]),
	}
}

// frameValid checks a whole frame (header and body) against its CRC.
func frameValid(frame []byte) bool {
	if len(frame) < frameHeaderSize {
		return false
	}
	want := binary.LittleEndian.Uint32(frame[0:4])
	return crc32.Update(0, castagnoli, frame[4:]) == want
}
