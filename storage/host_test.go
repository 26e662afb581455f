package storage_test

import (
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fakeHost queues syncs and completes them when the test says so, which is
// exactly the freedom the simulator has: syncs finish later, in any order.
type fakeHost struct {
	pending    []pendingSync
	boundaries []string
}

type pendingSync struct {
	f    vfs.File
	done func(error)
}

func (h *fakeHost) Sync(f vfs.File, done func(error)) {
	h.pending = append(h.pending, pendingSync{f, done})
}

func (h *fakeHost) Boundary(name string) { h.boundaries = append(h.boundaries, name) }

// completeOne finishes one pending sync, chosen by rng (or the oldest when
// rng is nil), performing the real Sync at completion time.
func (h *fakeHost) completeOne(rng *rand.Rand) bool {
	if len(h.pending) == 0 {
		return false
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(h.pending))
	}
	p := h.pending[i]
	h.pending = append(h.pending[:i], h.pending[i+1:]...)
	p.done(p.f.Sync())
	return true
}

// drain completes syncs until none are pending (completions may issue new
// ones).
func (h *fakeHost) drain() {
	for h.completeOne(nil) {
	}
}
