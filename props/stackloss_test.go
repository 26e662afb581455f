package props

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// A stack-loss fault lines up what only a prior member swapped back in
// can get out of: seed 163 draws one, and its run breaks the owner's
// replica once both followers were swapped out, the metadata swaps a
// prior member back in to lead the recovery, and every check passes. The
// same scenario without the fault swaps nobody back, so the fault, not
// the workload, brings the swap-back about.
func TestAStackLossIsRecoveredByAPriorMemberSwappedBack(t *testing.T) {
	sc := sim.QueueScenario(163)
	i := slices.IndexFunc(sc.Faults, func(f sim.Fault) bool { return f.Kind == sim.FaultStackLoss })
	if i < 0 {
		t.Fatalf("seed 163 drew no stack-loss fault: %v", sc.Faults)
	}
	res := RunQueue(sc, nil)
	if len(res.Violations) > 0 {
		t.Fatalf("seed 163: %v", res.Violations)
	}
	probes := res.History.Coverage.Probes
	if probes[sim.ProbeStackLossOwnerBroken] != 1 || probes[sim.ProbePriorSwappedBack] == 0 {
		t.Fatalf("seed 163: the owner was broken %d times and a prior member swapped back %d times, want once and at least once",
			probes[sim.ProbeStackLossOwnerBroken], probes[sim.ProbePriorSwappedBack])
	}
	sc.Faults = slices.Delete(sc.Faults, i, i+1)
	if n := RunQueue(sc, nil).History.Coverage.Probes[sim.ProbePriorSwappedBack]; n != 0 {
		t.Fatalf("seed 163 without its stack-loss fault swapped a prior member back %d times", n)
	}
}

// Only the scenarios a stack-loss can play out in draw one: five nodes,
// three replicas, an all-policy queue, no long outage and no fault that
// breaks a replica; and no other scheduled fault falls inside its span.
func TestStackLossIsDrawnOnlyWhereItCanPlayOut(t *testing.T) {
	drawn := 0
	for seed := uint64(1); seed <= 300; seed++ {
		sc := sim.QueueScenario(seed)
		i := slices.IndexFunc(sc.Faults, func(f sim.Fault) bool { return f.Kind == sim.FaultStackLoss })
		if i < 0 {
			continue
		}
		drawn++
		f := sc.Faults[i]
		all := slices.ContainsFunc(sc.Workload.Queues, func(q sim.QueueSpec) bool { return q.Policy == wire.PolicyAll })
		if sc.Nodes != 5 || sc.ReplicaCount() != 3 || !all {
			t.Errorf("seed %d drew a stack-loss with %d nodes, %d replicas, an all-policy queue %t", seed, sc.Nodes, sc.ReplicaCount(), all)
		}
		for _, g := range sc.Faults {
			switch {
			case g.Kind == sim.FaultLoseWrites || g.Kind == sim.FaultMisdirect || g.Kind == sim.FaultDamage || g.Kind == sim.FaultRot ||
				g.Kind == sim.FaultDamageState || g.Kind == sim.FaultTruncate || g.Kind == sim.FaultLoseDisk:
				t.Errorf("seed %d drew a stack-loss beside %v, which breaks a replica", seed, g)
			case g.Kind != sim.FaultStackLoss && g.At >= f.At && g.At < f.At+2*time.Second+f.Length:
				t.Errorf("seed %d schedules %v inside its stack-loss's span", seed, g)
			}
		}
	}
	if drawn == 0 {
		t.Fatal("no seed of 1-300 drew a stack-loss fault")
	}
}
