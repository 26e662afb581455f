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

func TestMisdirectOnASmallSegmentChangesNothing(t *testing.T) {
	fs := syncedLog(t, 3)
	from, err := storage.MisdirectLastFrames(fs, "log", 2)
	if err != nil || from != 0 {
		t.Fatalf("overwrote from %d, err %v; want nothing done", from, err)
	}
	l, err := storage.Open(fs, "log", &fakeHost{}, storage.Options{})
	if err != nil || l.LastIndex() != 3 {
		t.Fatalf("the log changed: %v", err)
	}
	l.Close()
}
