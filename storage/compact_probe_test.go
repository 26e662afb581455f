package storage_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Appends in bursts while syncs complete out of order: once every sync is
// done, every sealed segment can be dropped by TruncateFront.
func TestSealedSegmentsBecomeDroppable(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		fs := vfs.NewMem()
		host := &fakeHost{}
		l, err := storage.Open(fs, "log", host, storage.Options{SegmentSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := uint64(1); i <= 400; i++ {
			if _, err := l.Append(3, make([]byte, 100+rng.IntN(200))); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				l.RequestSync()
			}
			for rng.IntN(2) == 0 && host.completeOne(rng) {
			}
		}
		l.RequestSync()
		for host.completeOne(rng) {
		}
		l.RequestSync()
		for host.completeOne(nil) {
		}
		if l.DurableIndex() != l.LastIndex() {
			t.Fatalf("seed %d: durable %d, last %d", seed, l.DurableIndex(), l.LastIndex())
		}
		if err := l.TruncateFront(l.LastIndex()); err != nil {
			t.Fatal(err)
		}
		if l.Segments() > 2 {
			t.Fatalf("seed %d: %d segments left after TruncateFront(%d); first %d", seed, l.Segments(), l.LastIndex(), l.FirstIndex())
		}
	}
}

// An active segment that outgrows the segment size while it is still
// pending rolls once it is established, without waiting for another
// append, so compaction can drop it.
func TestOversizedSegmentRollsOnceEstablished(t *testing.T) {
	fs := vfs.NewMem()
	host := &fakeHost{}
	l, err := storage.Open(fs, "log", host, storage.Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for range 30 { // all while the first segment is pending: no roll yet
		if _, err := l.Append(3, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
	}
	if l.Segments() != 1 {
		t.Fatalf("%d segments before any sync, want 1", l.Segments())
	}
	l.RequestSync()
	for host.completeOne(nil) {
	}
	if l.Segments() != 2 {
		t.Fatalf("%d segments once the oversized one is established, want 2 (it rolls)", l.Segments())
	}
	if err := l.TruncateFront(l.LastIndex() + 1); err != nil {
		t.Fatal(err)
	}
	if l.FirstIndex() != l.LastIndex()+1 {
		t.Fatalf("first index %d after dropping everything before %d", l.FirstIndex(), l.LastIndex()+1)
	}
}
