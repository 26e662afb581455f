package props

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// BoundaryBaseline is the scenario a boundary sweep starts from: the
// seed's workload and noise, no disk errors, the first queue majority
// confirmed, and exactly one scripted fault, the loss of the first queue's owner for three seconds, so the
// run walks through a whole failover.
func BoundaryBaseline(seed uint64) sim.Scenario {
	sc := sim.QueueScenario(seed)
	sc.Nodes, sc.Replicas = 3, 0
	d := &sc.Swarm.Disk
	d.SyncErrorRate, d.WriteErrorRate, d.ReadErrorRate = 0, 0, 0
	sc.Workload.Queues[0].Policy = 0 // majority: an owner-only queue waits for its owner
	owner := node.Placement{Nodes: []node.NodeID{1, 2, 3}, Replicas: 3}.Owner(sc.Workload.Queues[0].Name)
	sc.Faults = []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultCrash, Node: int(owner) - 1, Length: 3 * time.Second}}
	return sc
}

// ReplaceBaseline is the other boundary-sweep baseline: five nodes, and
// the first queue's owner lost for seven seconds, so the run walks through
// a failover and then the replacement of the dead owner by a node outside
// the replica set (the simulator replaces after three seconds).
func ReplaceBaseline(seed uint64) sim.Scenario {
	sc := BoundaryBaseline(seed)
	sc.Nodes = 5
	owner := node.Placement{Nodes: []node.NodeID{1, 2, 3, 4, 5}, Replicas: 3}.Owner(sc.Workload.Queues[0].Name)
	sc.Faults = []sim.Fault{{At: 1500 * time.Millisecond, Kind: sim.FaultCrash, Node: int(owner) - 1, Length: 7 * time.Second}}
	sc.Expect = []string{sim.Expectation(event.MetaReplicaReplaced)}
	return sc
}

// HandoffBaseline is the third boundary-sweep baseline: three nodes, and
// the first queue's owner stopped gracefully for three seconds, so the
// run walks through a handoff (drain, close, plan) and the next owner's
// recovery while its old owner is alive and answers the seal.
func HandoffBaseline(seed uint64) sim.Scenario {
	sc := BoundaryBaseline(seed)
	sc.Faults[0].Kind = sim.FaultStop
	sc.Expect = []string{sim.Expectation(event.QueueHandoffProposed)}
	return sc
}

// BoundaryCase is one run of a sweep: the baseline with a crash of Node at
// its Hit-th arrival at Boundary.
type BoundaryCase struct {
	Node     int
	Boundary string
	Hit      int
}

// BoundaryCases lists the sweep's runs: every (node, boundary) the
// baseline hit, at each of its first k hits, in a stable order.
func BoundaryCases(baseline sim.Result, k int) []BoundaryCase {
	var out []BoundaryCase
	keys := slices.SortedFunc(maps.Keys(baseline.NodeBoundaries), func(a, b sim.BoundaryHit) int {
		if c := cmp.Compare(a.Boundary, b.Boundary); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	for _, key := range keys {
		for hit := 1; hit <= min(k, baseline.NodeBoundaries[key]); hit++ {
			out = append(out, BoundaryCase{Node: key.Node, Boundary: key.Boundary, Hit: hit})
		}
	}
	return out
}

// CaseScenario adds the case's crash to the baseline. The crash is armed
// from the start, so hit counts match the baseline's up to the crash. The
// baseline's expectations are dropped: they hold for the baseline run, but
// a case's crash may rightly change its course (a node already down when
// the scripted crash comes is not crashed again).
func CaseScenario(baseline sim.Scenario, c BoundaryCase) sim.Scenario {
	sc := baseline
	sc.Expect = nil
	sc.Faults = append(slices.Clone(baseline.Faults), sim.Fault{
		At: 0, Kind: sim.FaultCrashAt, Node: c.Node, Boundary: c.Boundary, Hit: c.Hit, Length: 400 * time.Millisecond,
	})
	slices.SortStableFunc(sc.Faults, func(a, b sim.Fault) int { return cmp.Compare(a.At, b.At) })
	return sc
}
