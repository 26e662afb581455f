package props

import (
	"cmp"
	"fmt"
	"io"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// Report is a judged run.
type Report struct {
	sim.Result
	Stats Stats
}

// RunQueue runs a queue scenario and judges it with every queue checker.
func RunQueue(sc sim.Scenario, trace io.Writer) Report {
	res := newQueueRun(sc, trace).Run()
	violations, stats := CheckQueue(res.History, ownerOnlyQueues(sc))
	res.Violations = append(res.Violations, violations...)
	res.Violations = append(res.Violations, checkExpected(sc.Expect, res.History)...)
	res.Violations = append(res.Violations, checkDedupWindow(cmp.Or(sc.Dedup, node.DefaultDedupWindow), res.History)...)
	lim := limitsFor(sc).afterFlaps(res.History)
	res.Violations = append(res.Violations, checkFailoverBound(lim, res.History)...)
	res.Violations = append(res.Violations, checkRedundancy(sc, lim, res.History)...)
	res.Summary = stats.String()
	return Report{Result: res, Stats: stats}
}

// RunQueueSeed draws the scenario for seed and runs it.
func RunQueueSeed(seed uint64, trace io.Writer) Report {
	return RunQueue(sim.QueueScenario(seed), trace)
}

// checkExpected fails a scripted run in which something it exists to
// exercise never happened. An expectation "a|b" is met by either event.
func checkExpected(expect []string, h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, name := range expect {
		met := false
		for _, alt := range sim.ExpectedNames(name) {
			met = met || h.EventCounts[alt] > 0
		}
		if !met {
			out = append(out, sim.Violation{Kind: sim.Liveness, Checker: "expected-event",
				Detail: fmt.Sprintf("the scenario expects %s, which never happened", name)})
		}
	}
	return out
}
