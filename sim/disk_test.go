package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
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

// writeLog writes a log of 30 synced records in dir on fs.
func writeLog(t *testing.T, fs vfs.FS, dir string) *storage.Log {
	t.Helper()
	l, err := storage.Open(fs, dir, syncingHost{}, storage.Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := l.Append(1, fmt.Appendf(nil, "record %d", i)); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
	}
	return l
}

// A decayed bit belongs to the file it decayed in, not to the file's name.
// A replica dropped and created again writes a new log of the same records
// under the same names (seed 227643 of the long sweep); a crash must not
// lay the old file's decay on it. A rename carries the decay along.
func TestARotGoesWithItsFile(t *testing.T) {
	byteAt := func(t *testing.T, fs vfs.FS, path string, off int64) byte {
		t.Helper()
		data, err := readAll(fs, path)
		if err != nil || int64(len(data)) <= off {
			t.Fatalf("reading %s: %d bytes, err %v", path, len(data), err)
		}
		return data[off]
	}
	t.Run("dropped and written again", func(t *testing.T) {
		d := NewDisk(rand.New(rand.NewPCG(3, 4)), DiskProfile{})
		fs := d.FS()
		writeLog(t, fs, "q/log").Close()
		rot, ok := d.Rot("q/log")
		if !ok {
			t.Fatal("no synced frame to rot in a log of 30 synced records")
		}
		if err := fs.Rename("q", "q.gone"); err != nil {
			t.Fatal(err)
		}
		if err := fs.RemoveAll("q.gone"); err != nil {
			t.Fatal(err)
		}
		writeLog(t, fs, "q/log").Close()
		if got := byteAt(t, fs, rot.Path, rot.Offset); got != rot.Before {
			t.Fatalf("the new log reads %#x at the old rot, want %#x as the old one did before it decayed", got, rot.Before)
		}
		d.Crash()
		if got := byteAt(t, d.FS(), rot.Path, rot.Offset); got != rot.Before {
			t.Fatalf("after a crash the new log reads %#x at the old rot, want %#x: the old file's decay landed on it", got, rot.Before)
		}
	})
	t.Run("renamed", func(t *testing.T) {
		d := NewDisk(rand.New(rand.NewPCG(3, 4)), DiskProfile{})
		fs := d.FS()
		writeLog(t, fs, "q/log").Close()
		rot, ok := d.Rot("q/log")
		if !ok {
			t.Fatal("no synced frame to rot in a log of 30 synced records")
		}
		if err := fs.Rename("q", "r"); err != nil {
			t.Fatal(err)
		}
		dir, err := fs.OpenDir(".")
		if err != nil {
			t.Fatal(err)
		}
		if err := dir.Sync(); err != nil {
			t.Fatal(err)
		}
		dir.Close()
		moved := "r" + rot.Path[len("q"):]
		d.Crash()
		if got := byteAt(t, d.FS(), moved, rot.Offset); got != rot.After {
			t.Fatalf("after a crash the renamed log reads %#x at the rot, want %#x", got, rot.After)
		}
	})
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

// A disk drawn to fail operations on names fails each kind of them, and
// only while faults are on; the bytes of an open file stay readable and
// writable. A disk with no such rate draws nothing for them, so seeds
// from before the rate run as they did.
func TestANameErrorRateFailsOperationsOnNames(t *testing.T) {
	d := NewDisk(rand.New(rand.NewPCG(5, 6)), DiskProfile{})
	f, err := d.FS().Create("kept", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	d.profile.NameErrorRate = 1
	ops := []struct {
		name string
		op   func(fs vfs.FS) error
	}{
		{"create", func(fs vfs.FS) error { _, err := fs.Create("a", vfs.WriteCategoryUnspecified); return err }},
		{"mkdir", func(fs vfs.FS) error { return fs.MkdirAll("dir", 0o755) }},
		{"rename", func(fs vfs.FS) error { return fs.Rename("kept", "moved") }},
		{"remove", func(fs vfs.FS) error { return fs.Remove("kept") }},
		{"list", func(fs vfs.FS) error { _, err := fs.List("."); return err }},
		{"stat", func(fs vfs.FS) error { _, err := fs.Stat("kept"); return err }},
		{"open", func(fs vfs.FS) error { _, err := fs.Open("kept"); return err }},
	}
	for _, o := range ops {
		if err := o.op(d.FS()); !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("%s with a name error rate of 1: %v, want the injected error", o.name, err)
		}
	}
	if _, err := f.Write([]byte("bytes")); err != nil {
		t.Fatalf("a write to an open file failed under a name error rate alone: %v", err)
	}
	if got := d.Stats().NameErrors; got != len(ops) {
		t.Fatalf("%d name errors counted, want %d", got, len(ops))
	}
	d.SetFaulty(false)
	if _, err := d.FS().Stat("kept"); err != nil {
		t.Fatalf("a stat with faults off: %v", err)
	}

	// Without the rate the disk's random stream is left alone.
	quiet := NewDisk(rand.New(rand.NewPCG(7, 8)), DiskProfile{})
	for range 10 {
		if _, err := quiet.FS().Stat("nothing"); err == nil {
			t.Fatal("a missing file was found")
		}
	}
	if got, want := quiet.rng.Uint64(), rand.New(rand.NewPCG(7, 8)).Uint64(); got != want {
		t.Fatal("operations on names drew from the disk's stream with no name error rate")
	}
}
