package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"pgregory.net/rapid"
)

// The swarm's membership changes admit spares in ID order, each once,
// and the removals it plans never leave fewer members than a queue has
// replicas: the nodes would refuse them, and the run would test nothing
// else. At most one removal more is unplanned, of a founder, asked for
// without counting, so that the nodes' refusals are put to the test too.
func TestDrawnMembershipKeepsAQueuesReplicas(t *testing.T) {
	drew, unplannedShort := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		sc := sim.QueueScenario(rapid.Uint64().Draw(t, "seed"))
		var removals []int
		for i, f := range sc.Faults {
			if f.Kind == sim.FaultRemoveNode {
				removals = append(removals, i)
			}
		}
		// Some choice of the unplanned removal (or none) leaves the rest
		// a plan that keeps the replica count.
		var why string
		for skip := -1; skip < len(removals); skip++ {
			if skip >= 0 && sc.Faults[removals[skip]].Node >= sc.Nodes {
				continue // an unplanned removal names a founder
			}
			if why = plannedMembership(sc, skip, &drew); why == "" {
				if skip >= 0 && plannedMembership(sc, -1, new(int)) != "" {
					unplannedShort++
				}
				return
			}
		}
		t.Fatal(why)
	})
	if drew == 0 {
		t.Fatal("no seed drew a membership change")
	}
	if unplannedShort == 0 {
		t.Fatal("no seed asked for a removal the nodes must refuse")
	}
}

// plannedMembership checks sc's membership changes with the skip-th
// removal left out (-1: none), counting the adds into drew, and says
// what breaks the plan, or "".
func plannedMembership(sc sim.Scenario, skip int, drew *int) string {
	staying, next := sc.Nodes, sc.Nodes
	gone := make(map[int]bool)
	removal := -1
	for _, f := range sc.Faults {
		switch f.Kind {
		case sim.FaultAddNode:
			if f.Node != next || f.Node >= sc.Nodes+sc.Spares {
				return fmt.Sprintf("add-node n%d, want spare n%d next (spares n%d..n%d)", f.Node+1, next+1, sc.Nodes+1, sc.Nodes+sc.Spares)
			}
			next++
			staying++
			*drew++
		case sim.FaultRemoveNode:
			if removal++; removal == skip {
				continue
			}
			if f.Node >= next || gone[f.Node] {
				return fmt.Sprintf("remove-node n%d names no member (admitted up to n%d, removed %v)", f.Node+1, next, gone)
			}
			gone[f.Node] = true
			if staying--; staying < sc.ReplicaCount() {
				return fmt.Sprintf("remove-node n%d leaves %d members, fewer than %d replicas", f.Node+1, staying, sc.ReplicaCount())
			}
		}
	}
	return ""
}

// Spares and membership changes are written out, read back, and checked:
// an add names a spare, a change needs a client, and a cluster has at
// most sim.MaxNodes processes.
func TestMembershipLinesAreChecked(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	for _, c := range []struct{ edit, want string }{
		{"spares 2\nfault at=2s add-node n6\nfault at=3s remove-node n1", ""},
		{"spares 1\nfault at=2s add-node n1", "only a spare"},
		{"fault at=2s add-node n9", "names a node outside"},
		{"spares 20", "spares=20"},
		{"spares -1", "spares=-1"},
		{"nodes 17", "nodes=17"},
		{"spares 1\nfault at=2s remove-node n1 for=1s", `unknown option "for" for remove-node`},
		{"spares 1\nfault at=2s add-node n6->n1", "add-node needs one node"},
	} {
		text := strings.Replace(string(base), "nodes ", "nodes 5\n#", 1) + c.edit + "\n"
		sc, err := sim.ParseScenario([]byte(text))
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.edit, err, c.want)
			continue
		}
		if err != nil {
			continue
		}
		again, _ := sc.MarshalText()
		if back, err := sim.ParseScenario(again); err != nil || back.Spares != sc.Spares || len(back.Faults) != len(sc.Faults) {
			t.Errorf("%q: did not round-trip: %v\n%s", c.edit, err, again)
		}
	}
}
