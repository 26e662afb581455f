package sim_test

import (
	"strings"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"pgregory.net/rapid"
)

// The swarm's membership changes admit spares in ID order, each once,
// and never ask to remove a member when fewer than a queue's three
// replicas of members would stay: the nodes would refuse it, and the run
// would test nothing.
func TestDrawnMembershipKeepsThreeMembers(t *testing.T) {
	drew := 0
	rapid.Check(t, func(t *rapid.T) {
		sc := sim.QueueScenario(rapid.Uint64().Draw(t, "seed"))
		staying, next := sc.Nodes, sc.Nodes
		gone := make(map[int]bool)
		for _, f := range sc.Faults {
			switch f.Kind {
			case sim.FaultAddNode:
				if f.Node != next || f.Node >= sc.Nodes+sc.Spares {
					t.Fatalf("add-node n%d, want spare n%d next (spares n%d..n%d)", f.Node+1, next+1, sc.Nodes+1, sc.Nodes+sc.Spares)
				}
				next++
				staying++
				drew++
			case sim.FaultRemoveNode:
				if f.Node >= next || gone[f.Node] {
					t.Fatalf("remove-node n%d names no member (admitted up to n%d, removed %v)", f.Node+1, next, gone)
				}
				gone[f.Node] = true
				if staying--; staying < 3 {
					t.Fatalf("remove-node n%d leaves %d members", f.Node+1, staying)
				}
			}
		}
	})
	if drew == 0 {
		t.Fatal("no seed drew a membership change")
	}
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
