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

// firstCatch returns the first generated scenario that catches the bug
// switched on now.
func firstCatch(t *testing.T) sim.Scenario {
	t.Helper()
	for seed := uint64(1); seed <= huntSeeds; seed++ {
		sc := sim.QueueScenario(seed)
		if props.RunQueue(sc, nil).Failed() {
			return sc
		}
	}
	t.Fatalf("no seed in 1-%d catches %s", huntSeeds, shrinkBug)
	return sim.Scenario{}
}

// Shrink turns a planted bug's failing seed into a scenario of at most
// five faults that still fails with the bug and passes without it.
func TestShrinkPlantedBugToFewFaults(t *testing.T) {
	if err := bugs.Enable(shrinkBug); err != nil {
		t.Fatal(err)
	}
	defer bugs.Enable("")
	sc := firstCatch(t)
	res, ok := Scenario(sc, 300)
	if !ok {
		t.Fatal("the catching scenario did not fail when run again")
	}
	t.Logf("%d faults → %d in %d runs; %s", len(sc.Faults), len(res.Scenario.Faults), res.Runs, res.Violation)
	if n := len(res.Scenario.Faults); n > 5 {
		t.Fatalf("shrunk to %d faults, want at most 5", n)
	}
	if !props.RunQueue(res.Scenario, nil).Failed() {
		t.Fatal("the shrunk scenario no longer fails with the bug")
	}
	bugs.Enable("")
	if rep := props.RunQueue(res.Scenario, nil); rep.Failed() {
		t.Fatalf("the shrunk scenario fails without the bug: %s", rep.Violations[0])
	}
}
