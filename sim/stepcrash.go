package sim

import (
	"slices"
	"time"
)

// Crashing an owner at one of its steps. Some of an owner's steps are
// dangerous for a few milliseconds only: right after it appended a
// dead-letter record that no quorum holds yet, or right after a handoff
// stopped waiting for its in-flight publishes and before the metadata
// named the next owner. A node that dies then must leave nothing a
// client was told is done only half done. The swarm's crashes fall at
// drawn times and its crash-at faults at a drawn node's boundary, so
// they land there a few times in a thousand seeds (the planted bugs
// dead-letter-twice and handoff-before-drain, which act in exactly those
// moments, were caught by 1 to 3 of seeds 1-1,000). Two fifths of the
// generated queue scenarios that can reach one of those steps, drawn from
// a stream of their own so that no other draw moves, arm one crash at a
// drawn time in the first three quarters of the safety phase: it strikes
// the first process, of any node, to reach the drawn step after that
// time, for the usual crash lengths.

// streamStepCrash draws a generated scenario's crash at an owner's step.
const streamStepCrash = "step-crash"

// StepCrashBoundaries are the steps a crash-at-step fault aims at.
var StepCrashBoundaries = []string{"deadletter.after.record", "handoff.before.plan-proposed"}

// drawStepCrash adds the fault above to a generated scenario and reports
// whether it did. It aims only at steps the scenario can reach: a
// dead-letter record needs a queue with a delivery limit, a handoff an
// owner move or a graceful stop.
func drawStepCrash(sc *Scenario) bool {
	r := newStream(sc.Seed, streamStepCrash)
	if r.IntN(5) >= 2 {
		return false
	}
	var steps []string
	if slices.ContainsFunc(sc.Workload.Queues, func(q QueueSpec) bool { return q.MaxDeliveries > 0 }) {
		steps = append(steps, StepCrashBoundaries[0])
	}
	if sc.Workload.Moves > 0 || slices.ContainsFunc(sc.Faults, func(f Fault) bool { return f.Kind == FaultStop }) {
		steps = append(steps, StepCrashBoundaries[1])
	}
	if len(steps) == 0 {
		return false
	}
	f := Fault{
		At:       time.Duration(r.Int64N(int64(sc.Safety) * 3 / 4)),
		Kind:     FaultCrashAtStep,
		Boundary: steps[r.IntN(len(steps))],
		Length:   time.Duration(10+r.IntN(1500)) * time.Millisecond,
	}
	if r.IntN(4) == 0 {
		f.Length = time.Duration(5+r.IntN(30)) * time.Millisecond // restarted at once, as by a supervisor
	}
	sc.Faults = append(sc.Faults, f)
	return true
}

// crashAtStep crashes p if a crash-at-step fault waits for the boundary
// it just reached. The fault's touch of p is recorded as it strikes,
// since no one knew beforehand which node it would touch.
func (w *World) crashAtStep(p *process, boundary string) {
	if w.live {
		return
	}
	for i, a := range w.stepCrashes {
		if a.boundary != boundary {
			continue
		}
		w.stepCrashes = append(w.stepCrashes[:i], w.stepCrashes[i+1:]...)
		w.noteTouches([]int{p.index}, w.now+a.down, FaultCrashAtStep.String(), true)
		panic(crashSignal{reason: "at step " + boundary, down: a.down})
	}
}
