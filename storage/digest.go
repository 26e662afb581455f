package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Digest is a rolling digest of a log's history. The digest after record i
// covers the digest after record i-1 and record i's index, type and body,
// so two logs with equal digests at the same index hold the same records.
type Digest [32]byte

// String renders a short prefix, enough to tell digests apart in a trace.
func (d Digest) String() string { return hex.EncodeToString(d[:6]) }

// Next returns the digest that follows d after appending one record.
func (d Digest) Next(index uint64, typ RecordType, body []byte) Digest {
	h := sha256.New()
	var hdr [len(Digest{}) + 9]byte
	copy(hdr[:], d[:])
	binary.LittleEndian.PutUint64(hdr[len(d):], index)
	hdr[len(d)+8] = byte(typ)
	h.Write(hdr[:])
	h.Write(body)
	var out Digest
	h.Sum(out[:0])
	return out
}
