package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestStepQueueOrder pushes and pops steps in a seeded random interleaving
// and holds every pop to the (at, seq) order a sorted model gives.
func TestStepQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q stepQueue
	var model []step
	seq := uint64(0)
	for round := range 20000 {
		if rng.IntN(3) > 0 || len(model) == 0 {
			seq++
			// Few distinct instants, so ties on at are common and seq decides.
			s := step{at: time.Duration(rng.IntN(50)), seq: seq, proc: round}
			q.push(s)
			model = append(model, s)
			continue
		}
		slices.SortFunc(model, func(a, b step) int {
			if a.before(&b) {
				return -1
			}
			return 1
		})
		got, want := q.pop(), model[0]
		model = model[1:]
		if got.at != want.at || got.seq != want.seq || got.proc != want.proc {
			t.Fatalf("round %d: popped (at %v, seq %d), want (at %v, seq %d)", round, got.at, got.seq, want.at, want.seq)
		}
		if q.Len() != len(model) {
			t.Fatalf("round %d: queue holds %d steps, want %d", round, q.Len(), len(model))
		}
	}
}
