package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// The window arithmetic on a hand-fed run: two crash windows that overlap
// count a hit they share once, window ends are exclusive, and every hit
// near no fault lands in NoFault.
func TestCoverageWindowsCountEachHitOnce(t *testing.T) {
	ms := time.Millisecond
	c := newCoverage(Scenario{Safety: 10 * time.Second, Faults: []Fault{
		{At: 1000 * ms, Kind: FaultCrash},
		{At: 1200 * ms, Kind: FaultCrash},        // crash windows: [1.0s, 1.7s)
		{At: 3000 * ms, Kind: FaultPause},        // [3.0s, 3.5s)
		{At: 12 * time.Second, Kind: FaultPause}, // after the safety phase: never applied
	}})
	hits := map[string]int{}
	for _, at := range []time.Duration{500, 1000, 1300, 1699, 1700, 2000, 3100, 3500, 12100} {
		c.advance(at*ms, hits)
		hits["b"]++
	}
	cov := c.finish(hits, &History{}, DiskStats{})
	want := map[string]int{"crash": 3, "pause": 1, NoFault: 5}
	if !reflect.DeepEqual(cov.Near["b"], want) || cov.Hits["b"] != 9 {
		t.Fatalf("near = %v (hits %d), want %v (hits 9)", cov.Near["b"], cov.Hits["b"], want)
	}
}

// ownerCrashScenario is seed 3's queue workload with one fault: the first
// queue's owner crashes at 2s and stays down for 3s, so a failover must
// happen while it is down. The queue confirms on a majority, whatever the
// seed drew: an owner-only queue has no replica to fail over to.
func ownerCrashScenario() Scenario {
	sc := QueueScenario(3)
	sc.Workload.Queues[0].Policy = wire.PolicyMajority
	sc.Faults = []Fault{{At: 2 * time.Second, Kind: FaultCrashOwner, Length: 3 * time.Second}}
	return sc
}

func TestCoverageOfAnOwnerCrash(t *testing.T) {
	sc := ownerCrashScenario()
	res := NewWorld(sc, NewQueueSystem(sc), nil).Run()
	cov := res.History.Coverage
	if !reflect.DeepEqual(cov.Hits, res.Boundaries) {
		t.Fatalf("coverage hits %v differ from the result's boundaries %v", cov.Hits, res.Boundaries)
	}
	if cov.Hits["recovery.before.install"] == 0 {
		t.Fatalf("no recovery after the owner crash; hits: %v", cov.Hits)
	}
	// The survivors keep persisting metadata right after the crash, so the
	// crash's column must show up on a metadata boundary.
	if cov.Near["meta.before.persist-hardstate"]["crash-owner"] == 0 {
		t.Errorf("no metadata persist near the owner crash: %v", cov.Near["meta.before.persist-hardstate"])
	}
	for b, near := range cov.Near {
		sum := 0
		for _, n := range near {
			sum += n
		}
		if sum != cov.Hits[b] {
			t.Errorf("%s: near columns add to %d, hits %d (one fault kind: they must be equal)", b, sum, cov.Hits[b])
		}
	}
	again := NewWorld(sc, NewQueueSystem(sc), nil).Run()
	if !reflect.DeepEqual(again.History.Coverage, cov) || again.TraceHash != res.TraceHash {
		t.Fatal("the same scenario recorded different coverage")
	}
}

// probeSeeds is how many generated seeds must reach each common probe.
// The rarest of them, replica-truncated, is reached in about a quarter of
// seeds over a sweep (134 of seeds 1-500), but unevenly: when consumer
// restarts and quick process restarts joined the swarm, its first hit
// moved to seed 21 (5 of seeds 1-40 reach it).
const probeSeeds = 30

// Over a handful of generated seeds, the common probes are reached and
// the counts are plausible: a probe is never counted more often than what
// it counts could have happened.
func TestProbesReachedAcrossSeeds(t *testing.T) {
	seeds := map[string]int{}
	for seed := uint64(1); seed <= probeSeeds; seed++ {
		sc := QueueScenario(seed)
		res := NewWorld(sc, NewQueueSystem(sc), nil).Run()
		h := res.History
		for name, n := range h.Coverage.Probes {
			seeds[name]++
			if n <= 0 {
				t.Errorf("seed %d: probe %s recorded with count %d", seed, name, n)
			}
		}
		if n, done := h.Coverage.Probes[ProbeRecoveryTransferred], h.EventCounts[event.RecoveryDone]; n > done {
			t.Errorf("seed %d: %d transferring recoveries but %d recoveries", seed, n, done)
		}
		if n := h.Coverage.Probes[ProbeCrashAtBoundary] + h.Coverage.Probes[ProbeCrashAtStep] + h.Coverage.Probes[ProbeHaltedItself]; n > len(h.Crashed) {
			t.Errorf("seed %d: %d boundary crashes and halts but %d crashes", seed, n, len(h.Crashed))
		}
	}
	for _, name := range []string{ProbeRecoveryTransferred, ProbeReplicaTruncated, ProbeUnknownDelivered,
		ProbeRedeliveredNoNack, ProbeSuspectedRunning, ProbeVouchedRunning, ProbeHaltedItself, ProbeSyncFailed} {
		if seeds[name] == 0 {
			t.Errorf("probe %s reached in none of seeds 1-%d (reached: %v)", name, probeSeeds, seeds)
		}
	}
	for name := range seeds {
		known := false
		for _, p := range Probes {
			known = known || p.Name == name
		}
		if !known {
			t.Errorf("probe %s is not in Probes", name)
		}
	}
}
