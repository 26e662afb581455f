package storage_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func stateVersion(v int) []byte {
	return []byte(fmt.Sprintf("epoch=%d;%s", v, bytes.Repeat([]byte{'x'}, v*37%900)))
}

// TestStateFileCrashes writes a sequence of versions, crashing at every
// point of the sequence with torn survivors, and checks that a reopened
// state file holds one complete version, no older than the last one
// reported durable.
func TestStateFileCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		for stop := 0; stop <= 24; stop++ {
			if err := stateCrashRun(seed, stop); err != nil {
				t.Fatalf("seed %d stop %d: %v", seed, stop, err)
			}
		}
	}
}

func stateCrashRun(seed uint64, stop int) error {
	disk := sim.NewDisk(rand.New(rand.NewPCG(seed, uint64(stop))), crashProfile)
	rng := rand.New(rand.NewPCG(seed, 5))
	host := &fakeHost{}
	sf, data, err := storage.OpenStateFile(disk.FS(), "data/meta", "epoch", host)
	if err != nil || data != nil {
		return fmt.Errorf("fresh open: data %q err %v", data, err)
	}
	durable, written := 0, 0
	for step := 0; step < stop; step++ {
		if rng.IntN(3) > 0 {
			written++
			v := written
			sf.Write(stateVersion(v), func(err error) {
				if err == nil {
					durable = max(durable, v)
				}
			})
		} else {
			host.completeOne(rng)
		}
	}
	disk.Crash()
	_, data, err = storage.OpenStateFile(disk.FS(), "data/meta", "epoch", &fakeHost{})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	if data == nil {
		if durable > 0 {
			return fmt.Errorf("state lost: version %d was reported durable", durable)
		}
		return nil
	}
	for v := durable; v <= written; v++ {
		if v > 0 && bytes.Equal(data, stateVersion(v)) {
			return nil
		}
	}
	return fmt.Errorf("reopened state %.20q is not a version in [%d, %d]", data, durable, written)
}

func TestStateFileCorruptionIsReported(t *testing.T) {
	mem := vfs.NewCrashableMem()
	host := &fakeHost{}
	sf, _, err := storage.OpenStateFile(mem, "meta", "seal", host)
	if err != nil {
		t.Fatal(err)
	}
	sf.Write([]byte("sealed at epoch 4"), func(err error) {
		if err != nil {
			t.Errorf("write: %v", err)
		}
	})
	host.drain()
	flipByte(t, mem, "meta/seal", 20)
	if _, _, err := storage.OpenStateFile(mem, "meta", "seal", &fakeHost{}); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("open of a damaged state file: %v, want ErrCorrupt", err)
	}
}
