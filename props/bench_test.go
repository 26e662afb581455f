package props

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// BenchmarkQueueSweep measures the simulator on generated queue scenarios
// (faults and all): simulated seconds, events and confirmed publishes per
// wall second. It asserts nothing; it reports.
func BenchmarkQueueSweep(b *testing.B) {
	var simulated time.Duration
	events, confirmed := 0, 0
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		rep := RunQueueSeed(uint64(i%50)+1, nil)
		simulated += rep.SimTime
		events += rep.Events
		confirmed += rep.Stats.Confirmed
	}
	wall := time.Since(start).Seconds()
	b.ReportMetric(simulated.Seconds()/wall, "sim-s/wall-s")
	b.ReportMetric(float64(events)/wall, "events/wall-s")
	b.ReportMetric(float64(confirmed)/wall, "confirmed/wall-s")
}

// saturatedScenario is a fault-free three-node cluster with one majority
// queue and producers publishing as fast as the workload allows.
func saturatedScenario() sim.Scenario {
	fast := netsim.Latency{Min: 100 * time.Microsecond, Max: 500 * time.Microsecond}
	return sim.Scenario{
		Seed: 1, Nodes: 3, Safety: 4 * time.Second, Liveness: 4 * time.Second,
		Swarm: sim.Swarm{
			Net:  netsim.LinkProfile{Latency: fast},
			Disk: sim.DiskProfile{SyncLatency: netsim.Latency{Min: 200 * time.Microsecond, Max: time.Millisecond}},
		},
		Workload: &sim.Workload{
			Queues:    []sim.QueueSpec{{Name: "bench", Policy: wire.PolicyMajority}},
			Producers: 8, Consumers: 4,
			PublishEvery: netsim.Latency{Min: 500 * time.Microsecond, Max: time.Millisecond},
			PayloadMax:   1024, AckChance: 1, Lease: 5 * time.Second, Window: 256,
			RequestTimeout: time.Second, Quiet: time.Second,
		},
	}
}

// BenchmarkQueueSaturated reports the simulated cluster's publish
// throughput (confirmed publishes per simulated second of the publishing
// phase) and the distribution of publish latency in virtual time.
func BenchmarkQueueSaturated(b *testing.B) {
	var rep Report
	for b.Loop() {
		rep = RunQueue(saturatedScenario(), nil)
	}
	if rep.Failed() {
		b.Fatalf("the benchmark scenario failed its checks: %v", rep.Violations)
	}
	// The rate is taken between the first and the last confirmation: the
	// first second or so of a run elects a metadata leader and creates the
	// queue, and no producer can be served before that.
	var lat []time.Duration
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	for _, op := range rep.History.Ops {
		if op.Kind == "publish" && op.Outcome == sim.OutcomeOK {
			lat = append(lat, op.Done-op.Invoked)
			first, last = min(first, op.Done), max(last, op.Done)
		}
	}
	if len(lat) < 2 {
		b.Fatalf("only %d publishes were confirmed", len(lat))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(float64(len(lat)-1)/(last-first).Seconds(), "confirmed/sim-s")
	b.ReportMetric(pct(0.5), "p50-µs")
	b.ReportMetric(pct(0.95), "p95-µs")
	b.ReportMetric(pct(1), "max-µs")
	b.ReportMetric(float64(rep.Events)/b.Elapsed().Seconds()*float64(b.N), "events/wall-s")
}
