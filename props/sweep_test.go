package props

import (
	"testing"

	"github.com/cairnmq/cairn/sim"
)

// TestBoundarySweeps crashes each node at each boundary its baseline met
// (the first hit of each, here; cairn-sim sweep-boundaries goes deeper)
// and requires every run to keep every promise and recover. The replace
// baseline walks through a failover and then a replica replacement.
func TestBoundarySweeps(t *testing.T) {
	if testing.Short() {
		t.Skip("a boundary sweep runs a few hundred scenarios")
	}
	for _, tc := range []struct {
		name     string
		baseline sim.Scenario
		k        int
	}{
		{"failover", BoundaryBaseline(1), 1},
		{"replace", ReplaceBaseline(1), 1},
		{"handoff", HandoffBaseline(1), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := RunQueue(tc.baseline, nil)
			if base.Failed() {
				t.Fatalf("the baseline fails: %v", base.Violations)
			}
			cases := BoundaryCases(base.Result, tc.k)
			covered := map[string]bool{}
			for _, c := range cases {
				covered[c.Boundary] = true
				for _, v := range RunQueue(CaseScenario(tc.baseline, c), nil).Violations {
					t.Errorf("crash n%d at %s hit %d: %s", c.Node+1, c.Boundary, c.Hit, v)
				}
			}
			for b := range base.Boundaries {
				if !covered[b] {
					t.Errorf("the baseline hit %s, but no case crashes there", b)
				}
			}
			if len(covered) < 20 {
				t.Fatalf("only %d boundaries covered; the baseline no longer walks through a failover", len(covered))
			}
		})
	}
}
