package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// A replica whose log is damaged at rest, owner or follower, on three
// nodes or five (and on five, a damaged follower followed by the owner's
// death): its node fences it and reports it lost, the queue keeps
// (or regains) an owner, and on five nodes the lost replica is replaced
// from outside the set at once. Every checker must pass: no confirmed
// message may be missing, and the healthy replicas must converge.
func TestDamagedReplicasAreFencedAndReplaced(t *testing.T) {
	seeds := uint64(5)
	if testing.Short() {
		seeds = 1
	}
	for _, nodes := range []int{3, 5} {
		for _, target := range []string{"owner", "follower", "follower-then-owner-dies"} {
			if target == "follower-then-owner-dies" && nodes == 3 {
				continue // two replicas lost on three nodes: nothing to recover from
			}
			ns := NamedScenario{Name: "damage", Nodes: nodes, Build: func(owner int, others []int) []sim.Fault {
				switch target {
				case "owner":
					return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultDamage, Node: owner, Length: 500 * time.Millisecond}}
				case "follower":
					return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultDamage, Node: others[1], Length: 500 * time.Millisecond}}
				}
				// The damaged follower is replaced; then the owner dies
				// for good and is replaced too, perhaps by the node whose
				// copy was dropped.
				return []sim.Fault{
					{At: 2 * time.Second, Kind: sim.FaultDamage, Node: others[1], Length: 500 * time.Millisecond},
					{At: 4 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 8 * time.Second},
				}
			}, Expect: []string{expect(event.QueueFenced)}}
			if nodes == 5 {
				ns.Expect = append(ns.Expect, expect(event.MetaReplicaReplaced))
			}
			if target != "follower" {
				ns.Expect = append(ns.Expect, expect(event.RecoveryDone))
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				for _, v := range RunQueue(ns.Scenario(seed), nil).Violations {
					t.Errorf("%d nodes, damaged %s, seed %d: %s", nodes, target, seed, v)
				}
			}
		}
	}
}
