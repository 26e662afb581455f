package props

import (
	"fmt"
	"slices"
	"time"

	"testing"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
	"pgregory.net/rapid"
)

// Rapid draws scenarios structurally (a fault list, a workload, noise
// levels) so that when a property fails, its shrinking can delete faults
// one by one and turn noise down, and report a handful of faults that
// still break the property. Runs are shorter than a sweep's so the
// default 100 checks stay well inside a minute.
const (
	rapidSafety   = 4 * time.Second
	rapidLiveness = 8 * time.Second
	rapidFaultMax = 12
)

// drawScenario draws one whole scenario.
func drawScenario(t *rapid.T) sim.Scenario {
	sc := sim.Scenario{
		Seed:      rapid.Uint64().Draw(t, "noise-seed"),
		Nodes:     rapid.SampledFrom([]int{3, 5}).Draw(t, "nodes"),
		Safety:    rapidSafety,
		Liveness:  rapidLiveness,
		Detection: rapid.SampledFrom([]uint8{1, 2}).Draw(t, "detection"),
	}
	sc.Swarm = drawSwarm(t)
	sc.Workload = drawWorkload(t)
	sc.Faults = rapid.SliceOfN(faultGenerator(sc.Nodes), 0, rapidFaultMax).Draw(t, "faults")
	slices.SortStableFunc(sc.Faults, func(a, b sim.Fault) int { return int(a.At - b.At) })
	for _, f := range sc.Faults {
		if !slices.Contains(sc.Swarm.Classes, f.Kind) {
			sc.Swarm.Classes = append(sc.Swarm.Classes, f.Kind)
		}
	}
	if sc.Nodes == 5 {
		// Drawn last, so the cases drawn before it still decode alike.
		sc.Replicas = rapid.SampledFrom([]int{0, 5}).Draw(t, "replicas")
	}
	return sc
}

// drawSwarm draws noise levels; each list starts with its calmest value,
// which is where shrinking heads.
func drawSwarm(t *rapid.T) sim.Swarm {
	var s sim.Swarm
	s.Net = netsim.LinkProfile{
		Latency: netsim.Latency{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond,
			TailChance: rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(t, "net-tail"), TailMax: 100 * time.Millisecond},
		Loss:      rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(t, "net-loss"),
		Duplicate: rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(t, "net-dup"),
		Reorder:   rapid.SampledFrom([]float64{0, 0.02, 0.1}).Draw(t, "net-reorder"),
	}
	s.Disk = sim.DiskProfile{
		SyncLatency:    netsim.Latency{Min: 100 * time.Microsecond, Max: 2 * time.Millisecond},
		SyncErrorRate:  rapid.SampledFrom([]float64{0, 0.002, 0.02}).Draw(t, "disk-eio-sync"),
		WriteErrorRate: rapid.SampledFrom([]float64{0, 0.0005}).Draw(t, "disk-eio-write"),
		ReadErrorRate:  rapid.SampledFrom([]float64{0, 0.0005}).Draw(t, "disk-eio-read"),
		TornChance:     rapid.SampledFrom([]float64{0, 0.5, 0.9}).Draw(t, "disk-torn"),
		ReorderChance:  rapid.SampledFrom([]float64{0, 0.3}).Draw(t, "disk-reorder"),
	}
	s.ClockMax = rapid.SampledFrom([]time.Duration{0, 250 * time.Millisecond}).Draw(t, "clock-skew")
	return s
}

// drawWorkload draws the clients and queues.
func drawWorkload(t *rapid.T) *sim.Workload {
	wl := &sim.Workload{
		Producers:      rapid.IntRange(1, 3).Draw(t, "producers"),
		Consumers:      rapid.IntRange(1, 3).Draw(t, "consumers"),
		PublishEvery:   netsim.Latency{Min: 5 * time.Millisecond, Max: 40 * time.Millisecond},
		PayloadMax:     rapid.SampledFrom([]int{64, 512, 4096}).Draw(t, "payload-max"),
		DelayChance:    rapid.SampledFrom([]float64{0, 0.1}).Draw(t, "delay-chance"),
		DelayMax:       500 * time.Millisecond,
		AckChance:      rapid.SampledFrom([]float64{1, 0.9, 0.7}).Draw(t, "ack-chance"),
		Lease:          rapid.SampledFrom([]time.Duration{time.Second, 200 * time.Millisecond}).Draw(t, "lease"),
		Window:         16,
		Think:          netsim.Latency{Max: 5 * time.Millisecond},
		RequestTimeout: 500 * time.Millisecond,
		Quiet:          2 * time.Second,
	}
	wl.NackChance = min(rapid.SampledFrom([]float64{0, 0.1}).Draw(t, "nack-chance"), 1-wl.AckChance)
	policies := []wire.Policy{wire.PolicyMajority, wire.PolicyAll, wire.PolicyOwnerOnly}
	for i := range rapid.IntRange(1, 3).Draw(t, "queues") {
		wl.Queues = append(wl.Queues, sim.QueueSpec{Name: fmt.Sprintf("q%d", i),
			Policy: rapid.SampledFrom(policies).Draw(t, "policy")})
	}
	return wl
}

// faultGenerator draws one fault of any kind on a cluster of n nodes.
func faultGenerator(n int) *rapid.Generator[sim.Fault] {
	return rapid.Custom(func(t *rapid.T) sim.Fault {
		f := sim.Fault{
			Kind:   sim.FaultKind(rapid.IntRange(0, int(sim.FaultCrashOwner)).Draw(t, "kind")),
			At:     time.Duration(rapid.Int64Range(0, int64(rapidSafety)).Draw(t, "at")),
			Node:   rapid.IntRange(0, n-1).Draw(t, "node"),
			Length: time.Duration(rapid.IntRange(10, 2000).Draw(t, "length-ms")) * time.Millisecond,
		}
		f.Peer = (f.Node + rapid.IntRange(1, n-1).Draw(t, "peer-offset")) % n
		switch f.Kind {
		case sim.FaultCrashAt:
			f.Boundary = rapid.SampledFrom(sim.QueueBoundaries).Draw(t, "boundary")
			f.Hit = rapid.IntRange(1, 3).Draw(t, "hit")
		case sim.FaultSplit:
			for i := range n {
				if rapid.Bool().Draw(t, "in-group") {
					f.Group = append(f.Group, i)
				}
			}
		case sim.FaultSpike:
			f.Extra = time.Duration(rapid.IntRange(5, 300).Draw(t, "spike-ms")) * time.Millisecond
		case sim.FaultClockJump:
			f.Extra = time.Duration(rapid.IntRange(-2000, 2000).Draw(t, "jump-ms")) * time.Millisecond
		case sim.FaultSetDetection:
			f.Hit = rapid.IntRange(1, 2).Draw(t, "mode")
		}
		return f.Normalized()
	})
}

// queueProperty is every promise the queue makes, as one property: the
// checkers of total-queue, settled-stays-settled, fencing (epochs,
// activation, installed quorums), convergence, and liveness after heal.
// A failure prints the scenario in the text format, ready for a file.
func queueProperty(t *rapid.T) {
	sc := drawScenario(t)
	rep := RunQueue(sc, nil)
	if rep.Failed() {
		text, _ := sc.MarshalText()
		t.Fatalf("%d faults; first violation: %s\nscenario:\n%s", len(sc.Faults), rep.Violations[0], text)
	}
}

// TestQueueProperties checks the queue's promises on scenarios rapid
// draws. Reproduce a failure with the -rapid.seed or -rapid.failfile it
// prints; failing cases are kept under testdata/rapid/ and replayed
// before new ones are drawn. More checks: go test ./props -run
// QueueProperties -rapid.checks=1000.
func TestQueueProperties(t *testing.T) {
	rapid.Check(t, queueProperty)
}
