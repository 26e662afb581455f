package storage

import "slices"

// digestMarksMax bounds how many batch ends a log remembers the digest
// of.
const digestMarksMax = 4096

// digestMark is the history digest after the record at index.
type digestMark struct {
	index  uint64
	digest Digest
}

// markDigest remembers the digest after the last record of a batch just
// appended, dropping the oldest marks past digestMarksMax.
func (l *Log) markDigest(index uint64, d Digest) {
	if len(l.marks) == digestMarksMax {
		l.marks = slices.Delete(l.marks, 0, digestMarksMax/2)
	}
	l.marks = append(l.marks, digestMark{index: index, digest: d})
}

// DigestAt returns the history digest after the record at index, if the
// log still remembers it: it does for the last record of each of its
// latest batches appended since it was opened. A reader that would
// otherwise hash every record up to index (a checkpoint build) can take
// it from here instead.
func (l *Log) DigestAt(index uint64) (Digest, bool) {
	i, ok := slices.BinarySearchFunc(l.marks, index, func(m digestMark, index uint64) int {
		switch {
		case m.index < index:
			return -1
		case m.index > index:
			return 1
		}
		return 0
	})
	if !ok {
		return Digest{}, false
	}
	return l.marks[i].digest, true
}

// forgetDigestsAfter drops the marks of records a truncation removed.
func (l *Log) forgetDigestsAfter(k uint64) {
	l.marks = slices.DeleteFunc(l.marks, func(m digestMark) bool { return m.index > k })
}

// LatestDigestThrough returns the latest record at or below index whose
// history digest the log still remembers, and that digest. A reader that
// holds the records by other means (a replica's decoded tail) moves its
// digest to that record without hashing any.
func (l *Log) LatestDigestThrough(index uint64) (uint64, Digest, bool) {
	i, _ := slices.BinarySearchFunc(l.marks, index+1, func(m digestMark, index uint64) int {
		if m.index < index {
			return -1
		}
		return 1
	})
	if i == 0 {
		return 0, Digest{}, false
	}
	return l.marks[i-1].index, l.marks[i-1].digest, true
}
