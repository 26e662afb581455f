package props

import (
	"io"

	"github.com/cairnmq/cairn/sim"
)

// Report is a judged run.
type Report struct {
	sim.Result
	Stats Stats
}

// RunQueue runs a queue scenario and judges it with every queue checker.
func RunQueue(sc sim.Scenario, trace io.Writer) Report {
	res := sim.NewWorld(sc, sim.NewQueueSystem(sc), trace).Run()
	violations, stats := CheckQueue(res.History)
	res.Violations = append(res.Violations, violations...)
	res.Summary = stats.String()
	return Report{Result: res, Stats: stats}
}

// RunQueueSeed draws the scenario for seed and runs it.
func RunQueueSeed(seed uint64, trace io.Writer) Report {
	return RunQueue(sim.QueueScenario(seed), trace)
}
