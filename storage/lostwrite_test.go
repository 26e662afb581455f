package storage_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncedLog writes n records to a fresh log, makes them durable and closes
// it, as a node that stopped after a clean sync would leave it.
func syncedLog(t *testing.T, n int) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	host := &fakeHost{}
	l, err := storage.Open(fs, "log", host, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(1, fmt.Appendf(nil, "record %d", i+1)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		host.drain()
	}
	if l.DurableIndex() != uint64(n) {
		t.Fatalf("durable %d after syncing %d records", l.DurableIndex(), n)
	}
	l.Close()
	return fs
}

func TestLostWritesLeaveALogThatOpensShorter(t *testing.T) {
	fs := syncedLog(t, 10)
	cut, from, err := storage.LoseLastFrames(fs, "log", 3)
	if err != nil || cut != 3 || from != 8 {
		t.Fatalf("cut %d frames from index %d, err %v; want 3 from 8", cut, from, err)
	}
	l, err := storage.Open(fs, "log", &fakeHost{}, storage.Options{})
	if err != nil {
		t.Fatalf("a log that lost its last synced writes must still open (nothing shows the loss): %v", err)
	}
	defer l.Close()
	if l.LastIndex() != 7 {
		t.Fatalf("last index %d after losing 3 of 10 records, want 7", l.LastIndex())
	}
}

func TestMisdirectedWritesAreCorruption(t *testing.T) {
	fs := syncedLog(t, 10)
	from, err := storage.MisdirectLastFrames(fs, "log", 2)
	if err != nil || from != 1 {
		t.Fatalf("overwrote from index %d, err %v; want 2 frames over index 1", from, err)
	}
	_, err = storage.Open(fs, "log", &fakeHost{}, storage.Options{})
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("frames overwritten inside the synced range must read as corruption, got %v", err)
	}
}

// A misdirection of no frames, or of more than a segment this small can
// hold twice over, changes nothing; nor does a loss of no frames.
func TestMisdirectOnASmallSegmentChangesNothing(t *testing.T) {
	fs := syncedLog(t, 3)
	for _, k := range []int{2, 0, -1} {
		from, err := storage.MisdirectLastFrames(fs, "log", k)
		if err != nil || from != 0 {
			t.Fatalf("misdirecting %d frames overwrote from %d, err %v; want nothing done", k, from, err)
		}
	}
	if cut, _, err := storage.LoseLastFrames(fs, "log", 0); err != nil || cut != 0 {
		t.Fatalf("losing no frames cut %d, err %v", cut, err)
	}
	l, err := storage.Open(fs, "log", &fakeHost{}, storage.Options{})
	if err != nil || l.LastIndex() != 3 {
		t.Fatalf("the log changed: %v", err)
	}
	l.Close()
}

// A sealed segment cut short, anywhere before the length its successor
// records (inside its header, at a frame boundary, inside a frame), is
// damage the log refuses to open over: reading it as a torn tail would
// silently drop every record of the later segments. Cut exactly at that
// length, nothing was lost and the log opens whole.
func TestCutSealedSegmentIsCorruption(t *testing.T) {
	fs := vfs.NewMem()
	host := &fakeHost{}
	l, err := storage.Open(fs, "log", host, storage.Options{SegmentSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := l.Append(1, fmt.Appendf(nil, "record %d", i+1)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		host.drain()
	}
	l.Close()
	sealed, err := storage.SealedSegments(fs, "log")
	if err != nil || len(sealed) < 2 {
		t.Fatalf("%d sealed segments, err %v; want at least 2", len(sealed), err)
	}
	pristine := vfs.NewMem()
	if _, err := vfs.Clone(fs, pristine, "log", "log"); err != nil {
		t.Fatal(err)
	}
	for _, seg := range sealed {
		for _, n := range []int64{0, 10, 72, 73, seg.Valid / 2, seg.Valid - 1, seg.Valid} {
			disk := vfs.NewMem()
			if _, err := vfs.Clone(pristine, disk, "log", "log"); err != nil {
				t.Fatal(err)
			}
			if err := storage.CutFile(disk, seg.Path, n); err != nil {
				t.Fatal(err)
			}
			l, err := storage.Open(disk, "log", &fakeHost{}, storage.Options{SegmentSize: 512})
			if n == seg.Valid {
				if err != nil || l.LastIndex() != 60 {
					t.Fatalf("%s cut at its valid length %d: err %v", seg.Path, n, err)
				}
				l.Close()
				continue
			}
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("%s (first index %d, valid %d) cut to %d bytes: want corruption, got %v",
					seg.Path, seg.FirstIndex, seg.Valid, n, err)
			}
		}
	}
	if err := storage.CutFile(fs, sealed[0].Path, sealed[0].Valid+1<<20); err == nil {
		t.Fatal("cutting a file to more than its length succeeded")
	}
}
