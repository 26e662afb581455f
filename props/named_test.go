package props

import (
	"slices"
	"testing"

	"github.com/cairnmq/cairn/sim"
)

// TestNamedFailoverScenarios runs every acceptance scenario of owner
// failover over a few seeds' workloads: all checkers must pass, and what
// the scenario is about must have happened.
func TestNamedFailoverScenarios(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, ns := range NamedScenarios {
		t.Run(ns.Name, func(t *testing.T) {
			for _, seed := range seeds {
				rep := RunQueue(ns.Scenario(seed), nil)
				for _, v := range rep.Violations {
					t.Errorf("seed %d: %s", seed, v)
				}
				for _, want := range ns.Expect {
					if !slices.ContainsFunc(rep.History.NodeEvents, func(e sim.NodeEvent) bool { return e.Name == want }) {
						t.Errorf("seed %d: %s never happened (%s)", seed, want, ns.About)
					}
				}
			}
		})
	}
}
