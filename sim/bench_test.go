package sim_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/sim"
)

// BenchmarkCounterSimulation measures the simulator's speed on the trivial
// three-node counter: simulated seconds per wall second and events per
// wall second, over seeds drawn by the ordinary generator (faults and
// all). It asserts nothing; it reports.
func BenchmarkCounterSimulation(b *testing.B) {
	var simulated time.Duration
	events := 0
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		res := sim.NewWorld(sim.CounterScenario(uint64(i%50)+1), sim.NewCounterSystem(), nil).Run()
		simulated += res.SimTime
		events += res.Events
	}
	wall := time.Since(start).Seconds()
	b.ReportMetric(simulated.Seconds()/wall, "sim-s/wall-s")
	b.ReportMetric(float64(events)/wall, "events/wall-s")
}
