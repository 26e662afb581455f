package storage_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A bit that decays in a synced record of an open log is met by the next
// read of that record, which fails as corruption, while every record
// before it still reads; the flip lands in the running log's file, not in
// a copy.
func TestARotIsMetByTheNextReadOfItsRecord(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fs := vfs.NewMem()
			host := &fakeHost{}
			l, err := storage.Open(fs, "log", host, storage.Options{SegmentSize: 512})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			const n = 40
			for i := range n {
				if _, err := l.Append(1, fmt.Appendf(nil, "record %d", i+1)); err != nil {
					t.Fatal(err)
				}
				l.RequestSync()
				host.drain()
			}
			rng := rand.New(rand.NewPCG(seed, 7))
			rot, ok, err := storage.RotSyncedFrame(fs, fs, "log", rng.IntN)
			if err != nil || !ok {
				t.Fatalf("rot: ok %v, err %v", ok, err)
			}
			if x := rot.Before ^ rot.After; rot.Index < 1 || rot.Index > n || x == 0 || x&(x-1) != 0 {
				t.Fatalf("rot %+v: want one flipped bit in a record of 1..%d", rot, n)
			}
			rd := l.NewReader(1)
			for i := uint64(1); i < rot.Index; i++ {
				if page, err := rd.Next(i, 1, 1<<10); err != nil || len(page) != 1 || page[0].Index != i {
					t.Fatalf("record %d before the rot at %d: %v, err %v", i, rot.Index, page, err)
				}
			}
			if _, err := rd.Next(rot.Index, 1, 1<<10); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("reading decayed record %d (%+v): err %v, want corruption", rot.Index, rot, err)
			}
		})
	}
}

// Only data a sync made durable decays: a log whose records were never
// synced offers nothing, and a record cut away since the sync is passed
// over.
func TestARotNeedsSyncedData(t *testing.T) {
	live := vfs.NewCrashableMem()
	host := &fakeHost{}
	l, err := storage.Open(live, "log", host, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(1, []byte("never synced")); err != nil {
		t.Fatal(err)
	}
	synced := live.CrashClone(vfs.CrashCloneCfg{})
	if rot, ok, err := storage.RotSyncedFrame(live, synced, "log", rand.New(rand.NewPCG(1, 2)).IntN); ok || err != nil {
		t.Fatalf("rotted %+v (err %v) in a log with nothing synced", rot, err)
	}
}
