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

// Records appended up to a segment roll with no sync asked for leave the
// first segment unsynced, so TruncateFront cannot drop it;
// SyncFront asks for the sync that finishes it, and only when the segment
// lies wholly before the index.
func TestSyncFrontFinishesTheFirstSegment(t *testing.T) {
	fs := vfs.NewMem()
	host := &fakeHost{}
	l, err := storage.Open(fs, "log", host, storage.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	// One synced record establishes the first segment; the records after
	// it fill it past its size, roll it, and are never asked to sync.
	if _, err := l.Append(3, make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	l.RequestSync()
	host.drain()
	for i := 0; l.Segments() < 2; i++ {
		if i == 100 {
			t.Fatal("the first segment never rolled")
		}
		if _, err := l.Append(3, make([]byte, 300)); err != nil {
			t.Fatal(err)
		}
	}
	next := l.LastIndex() + 1 // every record so far lies before it
	if l.CanTruncateFront(next) {
		t.Fatal("an unsynced first segment could be dropped")
	}
	l.SyncFront(l.FirstIndex()) // the first segment holds this index: nothing to finish
	if len(host.pending) != 0 {
		t.Fatalf("SyncFront asked for %d syncs for a segment it cannot drop", len(host.pending))
	}
	l.SyncFront(next)
	if len(host.pending) == 0 {
		t.Fatal("SyncFront asked for no sync")
	}
	host.drain()
	if !l.CanTruncateFront(next) {
		t.Fatal("the first segment still cannot be dropped after SyncFront's sync")
	}
}
