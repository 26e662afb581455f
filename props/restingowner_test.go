package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// idleScenario is seed's drawn scenario made quiet: one subscribed
// consumer, no producer, nothing else a queue would wake for, owners that
// rest 150 ms into a lull, a majority queue, and only the faults given.
func idleScenario(seed uint64, faults ...sim.Fault) sim.Scenario {
	sc := sim.QueueScenarioOf(seed, 3)
	sc.Replicas = 3
	sc.Swarm = sim.Swarm{Profile: "clean", Net: sc.Swarm.Net, Disk: sim.DiskProfile{SyncLatency: sc.Swarm.Disk.SyncLatency}}
	sc.Swarm.Net.Loss, sc.Swarm.Net.Duplicate, sc.Swarm.Net.Reorder = 0, 0, 0
	sc.Faults = faults
	sc.RestAfter = 150 * time.Millisecond
	wl := *sc.Workload
	wl.Queues = wl.Queues[:1]
	wl.Queues[0].Policy, wl.Queues[0].DeadLetter, wl.Queues[0].MaxDeliveries = wire.PolicyMajority, "", 0
	wl.Producers, wl.Consumers = 0, 1
	wl.Purges, wl.Moves, wl.DeadLetterChanges, wl.UnsubscribeEvery = 0, 0, 0, 0
	sc.Workload = &wl
	return sc
}

// TestAnOwnerUnpluggedAsItRestsFindsItselfCutOff: the isolate-resting-
// owner fault waits for an owner to rest, then cuts its node from peers
// and clients alike. The resting owner, whose seldom heartbeats nobody
// answers, must find out that it is cut off (queue.rest-cut-off), which
// is what the fault is for; the quiet run without the fault shows rests
// and no such event, so the fault, not the workload, brings it about.
func TestAnOwnerUnpluggedAsItRestsFindsItselfCutOff(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		quiet := RunQueue(idleScenario(seed), nil)
		if quiet.History.EventCounts[event.QueueResting] == 0 {
			t.Fatalf("seed %d: no owner rested in the quiet run", seed)
		}
		if n := quiet.History.EventCounts[event.QueueRestCutOff]; n > 0 {
			t.Fatalf("seed %d: a resting owner found itself cut off %d times with nothing cut", seed, n)
		}
		cut := RunQueue(idleScenario(seed, sim.Fault{At: 2 * time.Second, Kind: sim.FaultIsolateRestingOwner, Length: 3 * time.Second}), nil)
		if len(cut.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, cut.Violations)
		}
		if n := cut.History.Coverage.Probes[sim.ProbeRestingOwnerIsolated]; n != 1 {
			t.Fatalf("seed %d: the fault cut off %d resting owners, want 1", seed, n)
		}
		if cut.History.EventCounts[event.QueueRestCutOff] == 0 {
			t.Fatalf("seed %d: the unplugged resting owner never found itself cut off", seed)
		}
	}
}

// TestAnUnpluggedRestingOwnerDisturbsWhenItStrikes: an isolate-resting-
// owner fault waits for a rest, so the redundancy check dates the
// disturbance it makes by when it struck (History.Unplugged), not by
// its scheduled time: one that never struck disturbs nothing (before,
// one scheduled at 1.9 s for 3.7 s hid seed 105's late replacement from
// the planted bug replace-never-due), and one that struck late holds the
// work up until it ends.
func TestAnUnpluggedRestingOwnerDisturbsWhenItStrikes(t *testing.T) {
	s := time.Second
	sc := sim.Scenario{Faults: []sim.Fault{{At: 2 * s, Kind: sim.FaultIsolateRestingOwner, Length: 3 * s}}}
	h := &sim.History{}
	if got := lastDisturbance(sc, h, "q", 2, 7*s); got != 0 {
		t.Fatalf("a cut that never struck disturbed until %v", got)
	}
	h.Unplugged = []sim.UnplugSpan{{Node: 3, From: 4 * s, Until: 6 * s}}
	if got := lastDisturbance(sc, h, "q", 2, 7*s); got != 6*s {
		t.Fatalf("a cut from 4s to 6s disturbed until %v, want 6s", got)
	}
	if got := lastDisturbance(sc, h, "q", 2, 5*s); got != 5*s {
		t.Fatalf("a cut still on at 5s disturbed until %v, want 5s", got)
	}
}
