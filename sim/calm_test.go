package sim

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// The freshest view wins by incarnation, then epoch, then an active
// state; a replica the metadata does not name (incarnation zero) never.
func TestFreshestView(t *testing.T) {
	views := []node.QueueView{
		{Name: "q", Incarnation: 0, Epoch: 9, State: "unknown"},
		{Name: "q", Incarnation: 1, Epoch: 3, State: "recovering"},
		{Name: "q", Incarnation: 1, Epoch: 3, State: "active", Owner: 2},
		{Name: "q", Incarnation: 1, Epoch: 2, State: "active"},
	}
	got, ok := freshestView(views)
	if !ok || got.Epoch != 3 || got.State != "active" || got.Owner != 2 {
		t.Fatalf("freshest view %+v, want epoch 3 active owned by n2", got)
	}
	if _, ok := freshestView(views[:1]); ok {
		t.Fatal("a view without an incarnation was taken for the metadata's")
	}
	fresh := node.QueueView{Incarnation: 1, Epoch: 3}
	for _, c := range []struct {
		view node.QueueView
		want bool
	}{
		{node.QueueView{Role: "owner", Incarnation: 1, ReplicaEpoch: 3}, true},
		{node.QueueView{Role: "owner", Incarnation: 1, ReplicaEpoch: 2}, false}, // a stale owner
		{node.QueueView{Role: "owner", Incarnation: 1, ReplicaEpoch: 3, NoQuorum: true}, false},
		{node.QueueView{Role: "candidate", Incarnation: 1, ReplicaEpoch: 3}, false},
		{node.QueueView{Role: "owner", Incarnation: 2, ReplicaEpoch: 3}, false},
	} {
		if got := served([]node.QueueView{c.view}, fresh); got != c.want {
			t.Errorf("served(%+v) = %v, want %v", c.view, got, c.want)
		}
	}
	down, spare := deficitOf([]node.NodeID{1, 2, 3}, NodeIDs(5), map[node.NodeID]bool{2: true, 3: true, 5: true})
	if down != 1 || !spare {
		t.Fatalf("deficitOf = %v, %v; want n1 down with a spare up", down, spare)
	}
	if _, spare := deficitOf([]node.NodeID{1, 2, 3}, NodeIDs(3), map[node.NodeID]bool{2: true, 3: true}); spare {
		t.Fatal("a three-node cluster has no node outside a three-replica set")
	}
}

// An owner down for six seconds in a five-node cluster opens a deficit on
// its queue that the replacement closes; the calm phase's start, every
// process change and the unserved spans of the calm phase are recorded.
func TestWorldRecordsProgress(t *testing.T) {
	sc := QueueScenario(3)
	if sc.Nodes != 5 {
		t.Fatalf("seed 3 draws %d nodes; the test needs a spare", sc.Nodes)
	}
	sc.Workload.Queues = sc.Workload.Queues[:1]
	sc.Workload.Queues[0].Policy = wire.PolicyMajority
	sc.Replicas = 0 // three, so two nodes stand outside the set
	sc.Faults = []Fault{{At: time.Second, Kind: FaultCrashOwner, Length: 6 * time.Second}}
	h := NewWorld(sc, NewQueueSystem(sc), nil).Run().History
	if !h.Live || h.LivenessAt != sc.Safety {
		t.Fatalf("calm phase recorded as %v at %v, want at %v", h.Live, h.LivenessAt, sc.Safety)
	}
	var crashed node.NodeID
	for _, p := range h.Processes {
		if !p.Up && p.At == time.Second {
			crashed = p.Node
		}
	}
	if crashed == 0 || len(h.Processes) != sc.Nodes+2 {
		t.Fatalf("process changes %+v: want five starts, the crash at 1s and its restart", h.Processes)
	}
	if len(h.Deficits) == 0 {
		t.Fatal("no deficit recorded for the crashed owner's queue")
	}
	d := h.Deficits[0]
	if d.Down != crashed || d.From < time.Second || d.From > 1100*time.Millisecond || d.Open || d.Until > 7*time.Second {
		t.Fatalf("deficit %+v: want one of %s from about 1s, closed by a replacement before its restart at 7s", d, crashed)
	}
	for _, u := range h.Unserved {
		if u.From < sc.Safety {
			t.Fatalf("unserved span %+v begins before the calm phase", u)
		}
	}
}
