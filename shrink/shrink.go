// Package shrink minimizes a failing scenario: it drops faults, then
// shortens and simplifies what is left, keeping each step only while the
// run still fails with the same checker, so a counterexample ends up as
// small as its cause.
package shrink

import (
	"slices"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// Result is a minimized failing scenario.
type Result struct {
	Scenario sim.Scenario
	// Checker is the checker the original failure and the minimized one
	// share.
	Checker string
	// Runs counts the simulations the shrink took.
	Runs int
	// Violation is the minimized scenario's failure of Checker.
	Violation sim.Violation
}

// Scenario minimizes a failing scenario while the same checker keeps
// failing: it deletes faults (halves, then quarters, down to single
// faults, as delta debugging does), then simplifies the workload and
// turns the noise down, one step at a time, keeping each step only if the
// failure survives. The result is a local minimum: no single step of
// those kinds can be taken from it. ok is false when the scenario does
// not fail to begin with. Runs are bounded by maxRuns.
func Scenario(sc sim.Scenario, maxRuns int) (res Result, ok bool) {
	first := props.RunQueue(sc, nil)
	if !first.Failed() {
		return Result{Runs: 1}, false
	}
	s := &shrinker{checker: first.Violations[0].Checker, runs: 1, maxRuns: maxRuns, best: sc, violation: first.Violations[0]}
	for changed := true; changed && s.runs < s.maxRuns; {
		changed = s.dropFaults()
		for _, step := range simplifications {
			changed = s.try(step) || changed
		}
	}
	return Result{Scenario: s.best, Checker: s.checker, Runs: s.runs, Violation: s.violation}, true
}

// shrinker holds the smallest failing scenario found so far.
type shrinker struct {
	checker       string
	runs, maxRuns int
	best          sim.Scenario
	violation     sim.Violation
}

// fails runs a candidate and keeps it if the checker still fails.
func (s *shrinker) fails(sc sim.Scenario) bool {
	if s.runs >= s.maxRuns {
		return false
	}
	s.runs++
	for _, v := range props.RunQueue(sc, nil).Violations {
		if v.Checker == s.checker {
			s.best, s.violation = sc, v
			return true
		}
	}
	return false
}

// dropFaults removes chunks of faults, from half the list down to single
// faults, restarting at the coarsest size after every success.
func (s *shrinker) dropFaults() bool {
	changed := false
	for size := max(len(s.best.Faults)/2, 1); size >= 1 && len(s.best.Faults) > 0; {
		removed := false
		for start := 0; start < len(s.best.Faults); start += size {
			cand := s.best
			cand.Faults = slices.Delete(slices.Clone(s.best.Faults), start, min(start+size, len(s.best.Faults)))
			if s.fails(cand) {
				removed, changed = true, true
				break
			}
		}
		switch {
		case removed:
			size = max(len(s.best.Faults)/2, 1)
		case size == 1:
			return changed
		default:
			size /= 2
		}
	}
	return changed
}

// try applies one simplification if it changes the scenario and the
// failure survives it.
func (s *shrinker) try(step func(*sim.Scenario) bool) bool {
	cand := cloneScenario(s.best)
	if !step(&cand) {
		return false
	}
	return s.fails(cand)
}

// simplifications are the single steps that make a scenario smaller or
// calmer, in the order they are tried.
var simplifications = []func(*sim.Scenario) bool{
	func(sc *sim.Scenario) bool {
		changed := sc.Checkpoint != sim.CheckpointCadence{}
		sc.Checkpoint = sim.CheckpointCadence{}
		return changed
	},
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Net.Loss) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Net.Duplicate) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Net.Reorder) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Net.Latency.TailChance) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.SyncErrorRate) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.WriteErrorRate) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.ReadErrorRate) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.TornChance) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.ReorderChance) },
	func(sc *sim.Scenario) bool { return setZero(&sc.Swarm.Disk.FlipChance) },
	func(sc *sim.Scenario) bool {
		changed := sc.Swarm.ClockMax != 0
		sc.Swarm.ClockMax = 0
		return changed
	},
	func(sc *sim.Scenario) bool { return sc.Workload != nil && lower(&sc.Workload.Producers, 1) },
	func(sc *sim.Scenario) bool { return sc.Workload != nil && lower(&sc.Workload.Consumers, 1) },
	func(sc *sim.Scenario) bool {
		wl := sc.Workload
		if wl == nil || len(wl.Queues) <= 1 {
			return false
		}
		gone := wl.Queues[len(wl.Queues)-1].Name
		wl.Queues = wl.Queues[:len(wl.Queues)-1]
		// Queues that moved messages to the one dropped lose their
		// delivery limit with it: a limit naming no queue of the
		// workload is no scenario.
		for i := range wl.Queues {
			if wl.Queues[i].DeadLetter == gone {
				wl.Queues[i].DeadLetter, wl.Queues[i].MaxDeliveries = "", 0
			}
		}
		return true
	},
	func(sc *sim.Scenario) bool { return sc.Workload != nil && setZero(&sc.Workload.DelayChance) },
	func(sc *sim.Scenario) bool { return sc.Workload != nil && setZero(&sc.Workload.NackChance) },
	func(sc *sim.Scenario) bool {
		wl := sc.Workload
		if wl == nil || wl.AckChance == 1 {
			return false
		}
		wl.AckChance = 1
		return true
	},
}

func setZero(f *float64) bool {
	changed := *f != 0
	*f = 0
	return changed
}

// lower decrements n if it is above floor.
func lower(n *int, floor int) bool {
	if *n <= floor {
		return false
	}
	*n--
	return true
}

// cloneScenario copies a scenario deeply enough that simplifying the copy
// leaves the original alone.
func cloneScenario(sc sim.Scenario) sim.Scenario {
	sc.Faults = slices.Clone(sc.Faults)
	sc.Swarm.Classes = slices.Clone(sc.Swarm.Classes)
	sc.Expect = slices.Clone(sc.Expect)
	if sc.Workload != nil {
		wl := *sc.Workload
		wl.Queues = slices.Clone(wl.Queues)
		sc.Workload = &wl
	}
	return sc
}
