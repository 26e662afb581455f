package storage_test

import (
	"fmt"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestDigestAtMatchesTheChain checks the digests a log remembers at its
// batch ends against the chain recomputed record by record, across a
// truncation (the marks of removed records go with them) and past the
// number of marks it keeps (the oldest go).
func TestDigestAtMatchesTheChain(t *testing.T) {
	host := &fakeHost{}
	l, err := storage.Open(vfs.NewMem(), "log", host, storage.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	chain := map[uint64]storage.Digest{}
	var ends []uint64
	appendBatch := func(n int, tag string) {
		entries := make([]storage.Entry, n)
		d := l.Digest()
		for i := range entries {
			entries[i] = storage.Entry{Type: 1, Body: fmt.Appendf(nil, "%s-%d-%d", tag, l.LastIndex(), i)}
			d = d.Next(l.LastIndex()+1+uint64(i), 1, entries[i].Body)
			chain[l.LastIndex()+1+uint64(i)] = d
		}
		last, err := l.AppendBatch(entries)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, last)
		for host.completeOne(nil) {
		}
	}
	for i := range 50 {
		appendBatch(1+i%4, "a")
	}
	check := func(when string) {
		t.Helper()
		for _, end := range ends {
			if got, ok := l.DigestAt(end); ok && got != chain[end] {
				t.Fatalf("%s: the digest at %d differs from the chain's", when, end)
			}
		}
	}
	check("after appends")
	// Between two batch ends, the latest remembered digest is the
	// earlier end's.
	for i := 1; i < len(ends); i++ {
		for index := ends[i-1]; index < ends[i]; index++ {
			at, got, ok := l.LatestDigestThrough(index)
			if !ok || at != ends[i-1] || got != chain[at] {
				t.Fatalf("the latest digest through %d is at %d (%v), want the batch end %d", index, at, ok, ends[i-1])
			}
		}
	}
	if _, _, ok := l.LatestDigestThrough(ends[0] - 1); ok {
		t.Fatalf("the log claims a digest before its first batch end %d", ends[0])
	}
	for _, end := range ends {
		if _, ok := l.DigestAt(end); !ok {
			t.Fatalf("the log forgot the digest at batch end %d of only %d batches", end, len(ends))
		}
	}
	if _, ok := l.DigestAt(ends[3] - 1); ends[3]-1 != ends[2] && ok {
		t.Fatalf("the log claims a digest inside a batch, at %d", ends[3]-1)
	}
	// A truncation drops the marks after its point; new records at the
	// same indexes have other digests, which the marks must follow.
	k := ends[20]
	if err := l.TruncateAfter(k); err != nil {
		t.Fatal(err)
	}
	for host.completeOne(nil) {
	}
	ends = ends[:21]
	for i := range 10 {
		appendBatch(2+i%3, "b")
	}
	check("after a truncation and new appends")
	if got, ok := l.DigestAt(ends[len(ends)-1]); !ok || got != l.Digest() {
		t.Fatal("the digest at the last batch end is not the log's digest")
	}
	// Past the number of marks kept, the latest stay.
	for range 5000 {
		appendBatch(1, "c")
	}
	check("after many batches")
	if _, ok := l.DigestAt(ends[len(ends)-1]); !ok {
		t.Fatal("the log forgot its latest batch end")
	}
	if _, ok := l.DigestAt(ends[0]); ok {
		t.Fatal("the log keeps every mark it ever made")
	}
}
