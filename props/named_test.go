package props

import (
	"testing"
)

// TestNamedFailoverScenarios runs every acceptance scenario of owner
// failover over a few seeds' workloads: all checkers must pass, and what
// the scenario is about (its expected events) must have happened.
func TestNamedFailoverScenarios(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, ns := range NamedScenarios {
		t.Run(ns.Name, func(t *testing.T) {
			for _, seed := range seeds {
				sc := ns.Scenario(seed)
				if len(sc.Expect) == 0 {
					t.Fatalf("%s expects nothing; every named scenario must say what it exercises", ns.Name)
				}
				for _, v := range RunQueue(sc, nil).Violations {
					t.Errorf("seed %d: %s (%s)", seed, v, ns.About)
				}
			}
		})
	}
}

// A scripted run that never does what it is about fails, so a scenario
// cannot quietly stop testing its case.
func TestExpectedEventMissingFails(t *testing.T) {
	sc := NamedScenarios[0].Scenario(1)
	sc.Faults = nil // nothing to recover from
	rep := RunQueue(sc, nil)
	for _, v := range rep.Violations {
		if v.Checker == "expected-event" {
			return
		}
	}
	t.Fatalf("a calm run claimed to have recovered; violations: %v", rep.Violations)
}
