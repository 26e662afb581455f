package storage_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// syncOp matches file and directory syncs.
type syncOp struct{}

func (syncOp) String() string { return "(Sync)" }
func (syncOp) Evaluate(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData
}

// TestFailedSyncIsNeverDurable injects EIO on the n-th sync, for each n in
// a range, and checks the fsyncgate rule: the records that sync covered
// are never reported durable, the log refuses further appends and syncs,
// and a reopened log does not pretend otherwise.
func TestFailedSyncIsNeverDurable(t *testing.T) {
	for n := 0; n < 12; n++ {
		t.Run(fmt.Sprintf("sync-%d", n), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			fs := errorfs.Wrap(mem, errorfs.ErrInjected.If(errorfs.And(syncOp{}, errorfs.OnIndex(int32(n)))))
			host := &fakeHost{}
			m := newModel()
			l, err := storage.Open(fs, "log", host, m.options(1024))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(n), 9))
			var appendErr error
			for i := 0; i < 40 && appendErr == nil; i++ {
				index := l.LastIndex() + 1
				b := body(rng, index)
				if _, appendErr = l.Append(1, b); appendErr == nil {
					m.wrote(index, b)
				}
				l.RequestSync()
				host.completeOne(nil)
			}
			host.drain()
			if m.failed == nil || l.Err() == nil {
				t.Fatalf("sync %d failed but the log did not fail (OnFailed %v, Err %v)", n, m.failed, l.Err())
			}
			if !errors.Is(l.Err(), storage.ErrFailed) {
				t.Fatalf("Err() = %v, want ErrFailed", l.Err())
			}
			before := l.DurableIndex()
			if _, err := l.Append(1, []byte("after failure")); !errors.Is(err, storage.ErrFailed) {
				t.Fatalf("append after a failed sync: err %v, want ErrFailed", err)
			}
			l.RequestSync()
			if len(host.pending) != 0 {
				t.Fatalf("a failed log issued %d more syncs", len(host.pending))
			}
			host.drain()
			if l.DurableIndex() != before {
				t.Fatalf("durable index moved from %d to %d after failure", before, l.DurableIndex())
			}
			// What the failed log reported durable survives a crash.
			l2, err := storage.Open(mem.CrashClone(vfs.CrashCloneCfg{}), "log", &fakeHost{}, storage.Options{SegmentSize: 1024})
			if err != nil {
				t.Fatalf("reopen after failure: %v", err)
			}
			if l2.LastIndex() < m.confirmed {
				t.Fatalf("reopened log has %d records, %d were reported durable", l2.LastIndex(), m.confirmed)
			}
		})
	}
}

// buildLog writes n synced records into a fresh log on mem and returns it
// closed, with the names of its segment files.
func buildLog(t *testing.T, mem *vfs.MemFS, n int, segmentSize int64) []string {
	t.Helper()
	host := &fakeHost{}
	l, err := storage.Open(mem, "log", host, storage.Options{SegmentSize: segmentSize})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 1; i <= n; i++ {
		if _, err := l.Append(2, body(rng, uint64(i))); err != nil {
			t.Fatal(err)
		}
		l.RequestSync()
		host.drain()
	}
	l.Close()
	names, _ := mem.List("log")
	return names
}

func flipByte(t *testing.T, fs vfs.FS, path string, off int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptionInSealedSegmentIsReported(t *testing.T) {
	mem := vfs.NewCrashableMem()
	names := buildLog(t, mem, 30, 2048)
	if len(names) < 3 {
		t.Fatalf("want several segments, have %v", names)
	}
	flipByte(t, mem, "log/00000000000000000001.seg", 300)
	_, err := storage.Open(mem, "log", &fakeHost{}, storage.Options{SegmentSize: 2048})
	var ce *storage.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("open after flipping a sealed byte: %v, want a CorruptionError", err)
	}
}

func TestCorruptionBelowSyncedOffsetIsReported(t *testing.T) {
	mem := vfs.NewCrashableMem()
	buildLog(t, mem, 10, 1<<20) // one segment, every record synced before the next
	flipByte(t, mem, "log/00000000000000000001.seg", 64+30)
	_, err := storage.Open(mem, "log", &fakeHost{}, storage.Options{SegmentSize: 1 << 20})
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("open after flipping a synced byte of the active segment: %v, want ErrCorrupt", err)
	}
}

func TestCorruptSegmentHeaderIsReported(t *testing.T) {
	mem := vfs.NewCrashableMem()
	buildLog(t, mem, 30, 2048)
	flipByte(t, mem, "log/00000000000000000001.seg", 20)
	if _, err := storage.Open(mem, "log", &fakeHost{}, storage.Options{SegmentSize: 2048}); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("open after damaging a segment header: %v, want ErrCorrupt", err)
	}
}

// TestBitFlipsNeverYieldWrongRecords flips bits at rest in synced data
// over many seeds. Open must either report corruption or return only
// records identical to what was appended.
func TestBitFlipsNeverYieldWrongRecords(t *testing.T) {
	detected := 0
	for seed := uint64(1); seed <= 300; seed++ {
		disk := sim.NewDisk(rand.New(rand.NewPCG(seed, 77)), sim.DiskProfile{FlipChance: 1})
		host := &fakeHost{}
		m := newModel()
		l, err := storage.Open(disk.FS(), "log", host, m.options(1500))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 78))
		for i := 0; i < 12; i++ {
			applyOp(l, host, m, rng, op{kind: opAppend, count: 1 + rng.IntN(3)})
			l.RequestSync()
			host.drain()
		}
		disk.Crash()
		l, err = storage.Open(disk.FS(), "log", &fakeHost{}, storage.Options{SegmentSize: 1500})
		if errors.Is(err, storage.ErrCorrupt) {
			detected++
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: open: %v", seed, err)
		}
		m.confirmed = 0 // the final synced frame is the documented blind spot
		if err := verifyLog(l, m); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	if detected < 250 {
		t.Fatalf("only %d of 300 flips were reported as corruption", detected)
	}
}
