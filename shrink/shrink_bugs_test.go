//go:build cairn_bugs

package shrink

import (
	"testing"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// shrinkBug is the planted bug the shrinking test uses: it needs a
// failover to show, so a minimal counterexample keeps at least one fault
// and shrinking has real work to do.
const shrinkBug = bugs.SkipSeal

// huntSeeds bounds the search for a seed that catches the bug.
const huntSeeds = 150

// catches returns the first n generated scenarios that catch the bug
// switched on now.
func catches(t *testing.T, n int) []sim.Scenario {
	t.Helper()
	var out []sim.Scenario
	for seed := uint64(1); seed <= huntSeeds && len(out) < n; seed++ {
		sc := sim.QueueScenario(seed)
		if props.RunQueue(sc, nil).Failed() {
			out = append(out, sc)
		}
	}
	if len(out) < n {
		t.Fatalf("only %d seeds in 1-%d catch %s, want %d", len(out), huntSeeds, shrinkBug, n)
	}
	return out
}

// Shrink turns a planted bug's failing seeds into scenarios that still
// fail with the bug and pass without it, most of them of at most five
// faults. Not every one: a seed whose failure needs a lying disk, a
// partition and a compaction to line up can be a local minimum of seven
// faults, none of which can go alone or in a run. So the first three
// catching seeds are shrunk; every one must keep its failure and lose it
// without the bug, and two of the three must end at five faults or fewer.
func TestShrinkPlantedBugToFewFaults(t *testing.T) {
	if err := bugs.Enable(shrinkBug); err != nil {
		t.Fatal(err)
	}
	defer bugs.Enable("")
	small := 0
	for _, sc := range catches(t, 3) {
		bugs.Enable(shrinkBug)
		res, ok := Scenario(sc, 300)
		if !ok {
			t.Fatalf("seed %d: the catching scenario did not fail when run again", sc.Seed)
		}
		t.Logf("seed %d: %d faults → %d in %d runs; %s", sc.Seed, len(sc.Faults), len(res.Scenario.Faults), res.Runs, res.Violation)
		if len(res.Scenario.Faults) <= 5 {
			small++
		}
		if !props.RunQueue(res.Scenario, nil).Failed() {
			t.Fatalf("seed %d: the shrunk scenario no longer fails with the bug", sc.Seed)
		}
		bugs.Enable("")
		if rep := props.RunQueue(res.Scenario, nil); rep.Failed() {
			t.Fatalf("seed %d: the shrunk scenario fails without the bug: %s", sc.Seed, rep.Violations[0])
		}
	}
	if small < 2 {
		t.Fatalf("%d of 3 shrunk scenarios have at most 5 faults, want at least 2", small)
	}
}
