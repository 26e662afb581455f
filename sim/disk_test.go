package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncingHost completes every sync at once.
type syncingHost struct{}

func (syncingHost) Sync(f vfs.File, done func(error)) { done(f.Sync()) }
func (syncingHost) Boundary(string)                   {}

// A bit that decays while the node runs stays decayed: what a power loss
// leaves, and what the disk holds after a crash, have the flip, even in a
// sealed segment no sync touches again.
func TestARotOutlivesACrash(t *testing.T) {
	d := NewDisk(rand.New(rand.NewPCG(3, 4)), DiskProfile{})
	l, err := storage.Open(d.FS(), "log", syncingHost{}, storage.Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := l.Append(1, fmt.Appendf(nil, "record %d", i)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
	}
	rot, ok := d.Rot("log")
	if !ok {
		t.Fatal("no synced frame to rot in a log of 30 synced records")
	}
	read := func(fs vfs.FS) byte {
		data, err := readAll(fs, rot.Path)
		if err != nil || int64(len(data)) <= rot.Offset {
			t.Fatalf("reading %s: %d bytes, err %v", rot.Path, len(data), err)
		}
		return data[rot.Offset]
	}
	if got := read(d.FS()); got != rot.After {
		t.Fatalf("the running disk reads %#x at the rot, want %#x", got, rot.After)
	}
	if got := read(d.Durable()); got != rot.After {
		t.Fatalf("a power loss would leave %#x at the rot, want %#x", got, rot.After)
	}
	l.Close()
	d.Crash()
	if got := read(d.FS()); got != rot.After {
		t.Fatalf("after a crash the disk reads %#x at the rot, want %#x", got, rot.After)
	}
	if d.Stats().Rots != 1 {
		t.Fatalf("stats count %d rots, want 1", d.Stats().Rots)
	}
}

// A stalled device holds every sync started before the stall ends, then
// answers with its usual latency.
func TestAStallHoldsSyncsBack(t *testing.T) {
	d := NewDisk(rand.New(rand.NewPCG(5, 6)), DiskProfile{})
	if at := d.SyncDone(time.Second); at != time.Second {
		t.Fatalf("an idle disk with no latency completes a sync at %v, want 1s", at)
	}
	d.Stall(3 * time.Second)
	if at := d.SyncDone(2 * time.Second); at != 3*time.Second {
		t.Fatalf("a sync started in a stall completes at %v, want at its end, 3s", at)
	}
	if at := d.SyncDone(4 * time.Second); at != 4*time.Second {
		t.Fatalf("a sync after the stall completes at %v, want 4s", at)
	}
	if d.Stats().StalledSyncs != 1 {
		t.Fatalf("stats count %d stalled syncs, want 1", d.Stats().StalledSyncs)
	}
}
