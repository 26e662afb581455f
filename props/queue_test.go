package props

import (
	"testing"
)

// TestQueueSeedsHoldEveryPromise runs a handful of generated queue
// scenarios (each with its own fault mix) and requires every checker to
// pass. The long sweep is `make sim`; this keeps `go test` honest.
func TestQueueSeedsHoldEveryPromise(t *testing.T) {
	seeds := uint64(24)
	if testing.Short() {
		seeds = 6
	}
	confirmed := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		rep := RunQueueSeed(seed, nil)
		for _, v := range rep.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		confirmed += rep.Stats.Confirmed
	}
	if confirmed < 1000 {
		t.Fatalf("only %d publishes confirmed over %d seeds; the workload is not exercising the queue", confirmed, seeds)
	}
}
