package storage_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// gatedHost is a fakeHost whose state files share a gate.
type gatedHost struct {
	fakeHost
	gate *storage.FileGate
}

func (h *gatedHost) FileGate() *storage.FileGate { return h.gate }

// TestStateFilesTakeTurnsAtTheGate writes forty state files at once
// through a gate of three: no more than three temporary files are ever
// under way, every write lands with its own content, and the ones
// that waited start in the order they asked.
func TestStateFilesTakeTurnsAtTheGate(t *testing.T) {
	fs := vfs.NewMem()
	host := &gatedHost{gate: storage.NewFileGate(3)}
	const files = 40
	var landed []int
	sfs := make([]*storage.StateFile, files)
	for i := range files {
		sf, _, err := storage.OpenStateFile(fs, fmt.Sprintf("q%02d", i), "epoch", host)
		if err != nil {
			t.Fatal(err)
		}
		sfs[i] = sf
	}
	for i, sf := range sfs {
		sf.Write([]byte{byte(i)}, func(err error) {
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
			landed = append(landed, i)
		})
	}
	if got := len(host.pending); got != 3 {
		t.Fatalf("%d writes syncing at once through a gate of 3", got)
	}
	if host.gate.Waiting() != files-3 {
		t.Fatalf("%d writes waiting, want %d", host.gate.Waiting(), files-3)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for host.completeOne(rng) {
		if running := files - len(landed) - host.gate.Waiting(); running > 3 {
			t.Fatalf("%d writes under way through a gate of 3", running)
		}
	}
	if len(landed) != files || host.gate.Waiting() != 0 {
		t.Fatalf("%d of %d writes landed, %d still waiting", len(landed), files, host.gate.Waiting())
	}
	for i := range files {
		_, data, err := storage.OpenStateFile(fs, fmt.Sprintf("q%02d", i), "epoch", &fakeHost{})
		if err != nil || len(data) != 1 || data[0] != byte(i) {
			t.Fatalf("state file %d reads %v, %v", i, data, err)
		}
	}
	// The three that went first land in any order; the others started in
	// the order they asked, so the last to ask is never among the first
	// to land.
	for _, i := range landed[:3] {
		if i >= 6 {
			t.Fatalf("write %d, which waited behind others, landed among the first three: %v", i, landed)
		}
	}
}
