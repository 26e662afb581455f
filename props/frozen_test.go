package props

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// A replica fenced while the queue had confirmed through index 4, and
// never restarted, keeps the unconfirmed records 5 and 6 of epoch 1 that
// the next epoch replaced (seed 17818 of the long sweep): convergence
// compares it only through 4. A difference at or below 4 still fails, and
// so does the same log on a replica that was not fenced, or whose node
// started again after the fence.
func TestConvergenceComparesAFencedReplicaThroughItsFenceCommit(t *testing.T) {
	pub := func(i, epoch uint64) node.LogEntry {
		return node.LogEntry{Index: i, Type: "publish", Epoch: epoch, ID: wire.MessageID{Producer: 1, Seq: i}}
	}
	owner := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{pub(1, 1), pub(2, 1), pub(3, 1), pub(4, 1), {Index: 5, Type: "epoch-mark", Epoch: 3}, pub(6, 3)}}
	stale := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{pub(1, 1), pub(2, 1), pub(3, 1), pub(4, 1), pub(5, 1), pub(6, 1)}}
	wrong := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{pub(1, 1), pub(2, 1), pub(3, 1), {Index: 4, Type: "settle", Epoch: 1}, pub(5, 1)}}
	history := func(fence, restarted bool) *sim.History {
		h := &sim.History{NodeEvents: []sim.NodeEvent{
			{At: time.Second, Node: 1, Name: event.QueueCommit, Queue: "q", Value: 4, Epoch: 1},
			{At: 3 * time.Second, Node: 3, Name: event.QueueCommit, Queue: "q", Value: 6, Epoch: 3},
		}}
		if fence {
			h.NodeEvents = slices.Insert(h.NodeEvents, 1, sim.NodeEvent{At: 2 * time.Second, Node: 2, Name: event.QueueFenced, Queue: "q"})
		}
		h.Processes = []sim.ProcessChange{{At: 0, Node: 2, Up: true}}
		if restarted {
			h.Processes = append(h.Processes, sim.ProcessChange{At: 4 * time.Second, Node: 2, Up: true})
		}
		return h
	}
	fenced := map[node.NodeID]bool{2: true}
	judge := func(h *sim.History, rep node.ReplicaDump, fenced map[node.NodeID]bool) []sim.Violation {
		reps := map[node.NodeID]node.ReplicaDump{3: owner, 2: rep}
		return compareReplicas("q", 3, reps, fenced, nil, frozenCommits(h)["q"])
	}
	if v := judge(history(true, false), stale, fenced); len(v) != 0 {
		t.Fatalf("a fenced replica's unconfirmed suffix was judged: %v", v)
	}
	for _, c := range []struct {
		name   string
		h      *sim.History
		rep    node.ReplicaDump
		fenced map[node.NodeID]bool
	}{
		{"confirmed record differs", history(true, false), wrong, fenced},
		{"not fenced", history(false, false), stale, nil},
		{"restarted after fence", history(true, true), stale, fenced},
	} {
		v := judge(c.h, c.rep, c.fenced)
		if len(v) == 0 || v[0].Kind != sim.Safety {
			t.Errorf("%s: want a safety violation, got %v", c.name, v)
		}
	}
}

// A rot that decays a replica's only log record makes its log read back
// empty, as a torn tail does: the replica then ends, by its checkpoint's
// cut, at the owner's last index with the digest of an empty log (seed
// 142627 of the long sweep). That is not a disagreement; the same dump
// on a replica no rot touched is one, and a rotted replica whose records
// read back and differ still fails.
func TestConvergenceForgivesTheDigestOfALogARotEmptied(t *testing.T) {
	mark := node.LogEntry{Index: 1, Type: "epoch-mark", Epoch: 1}
	ckpt := &node.CheckpointDump{Cut: 1, CutEpoch: 1}
	owner := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{mark}, Checkpoint: ckpt, Digest: storage.Digest{1}}
	emptied := node.ReplicaDump{Queue: "q", Checkpoint: ckpt}
	differs := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{{Index: 1, Type: "epoch-mark", Epoch: 2}}, Checkpoint: ckpt}
	judge := func(rep node.ReplicaDump, rotted bool) []sim.Violation {
		reps := map[node.NodeID]node.ReplicaDump{3: owner, 2: rep}
		return compareReplicas("q", 3, reps, nil, map[node.NodeID]bool{2: rotted}, nil)
	}
	if v := judge(emptied, true); len(v) != 0 {
		t.Fatalf("a log a rot emptied was judged by its digest: %v", v)
	}
	for _, c := range []struct {
		name   string
		rep    node.ReplicaDump
		rotted bool
	}{
		{"not rotted", emptied, false},
		{"rotted, records differ", differs, true},
	} {
		if v := judge(c.rep, c.rotted); len(v) == 0 || v[0].Kind != sim.Safety {
			t.Errorf("%s: want a safety violation, got %v", c.name, v)
		}
	}
}

// The final owner of an idle queue lost its only record to a rot no read
// met, so its log reads back empty (seed 634238 of the long sweep): the
// queue's history is then a replica no rot struck, and the rotted owner
// is judged against it, as a rotted replica is. With no rot the owner's
// log stands, even beside a replica that reaches further, and a node the
// cluster removed is never taken.
func TestFinalLogsPassOverARottedOwner(t *testing.T) {
	mark := node.LogEntry{Index: 1, Type: "epoch-mark", Epoch: 1}
	ckpt := &node.CheckpointDump{Cut: 1, CutEpoch: 1}
	full := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{mark}, Checkpoint: ckpt, Digest: storage.Digest{1}}
	longer := node.ReplicaDump{Queue: "q", Entries: []node.LogEntry{mark, {Index: 2, Type: "publish", Epoch: 1}}, Digest: storage.Digest{2}}
	emptied := node.ReplicaDump{Queue: "q", Checkpoint: ckpt}
	history := func(rot bool, removed ...node.NodeID) *sim.History {
		h := &sim.History{
			NodeEvents: []sim.NodeEvent{{Node: 5, Name: event.QueueActive, Queue: "q", Epoch: 1}},
			Final: map[node.NodeID][]node.ReplicaDump{
				1: {full}, 2: {full}, 3: {longer}, 5: {emptied},
			},
			Removed: make(map[node.NodeID]time.Duration),
		}
		if rot {
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: time.Second, Node: 5, Name: sim.EventRot, Queue: "q"})
		}
		for _, id := range removed {
			h.Removed[id] = time.Second
		}
		return h
	}
	for _, c := range []struct {
		name string
		h    *sim.History
		want node.NodeID
	}{
		{"no rot", history(false), 5},
		{"owner rotted", history(true), 3},
		{"owner rotted, furthest removed", history(true, 3), 1},
	} {
		if got := finalLogs(c.h)["q"]; got != c.want {
			t.Errorf("%s: finalLogs took %s, want %s", c.name, got, c.want)
		}
	}
	reps := map[node.NodeID]node.ReplicaDump{1: full, 2: full, 5: emptied}
	if v := compareReplicas("q", 1, reps, nil, map[node.NodeID]bool{5: true}, nil); len(v) != 0 {
		t.Errorf("the rotted owner's emptied log was judged against the history: %v", v)
	}
	if v := compareReplicas("q", 5, reps, nil, map[node.NodeID]bool{5: true}, nil); len(v) == 0 {
		t.Errorf("taking the emptied log as the history should fail convergence, as seed 634238 did")
	}
}
