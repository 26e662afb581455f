package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

func TestCheckpointChecker(t *testing.T) {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: 1, Seq: seq} }
	whole := func() *node.CheckpointDump {
		return &node.CheckpointDump{Cut: 9, Published: []wire.MessageID{id(1), id(2), id(3)},
			Settled: []wire.MessageID{id(2)}, Live: []wire.MessageID{id(3), id(1)}, StateDigest: [32]byte{1}}
	}
	replica := func(c *node.CheckpointDump, first uint64) node.ReplicaDump {
		return node.ReplicaDump{Queue: "q0", Incarnation: 5, Checkpoint: c, Entries: []node.LogEntry{{Index: first, Type: "publish"}}}
	}
	cases := []struct {
		name string
		reps map[node.NodeID][]node.ReplicaDump
		want string // a fragment of the violation, or "" for none
	}{
		{"agreeing replicas", map[node.NodeID][]node.ReplicaDump{1: {replica(whole(), 8)}, 2: {replica(whole(), 10)}}, ""},
		{"a live message left out", map[node.NodeID][]node.ReplicaDump{1: {replica(func() *node.CheckpointDump {
			c := whole()
			c.Live = c.Live[:1]
			return c
		}(), 10)}}, "lacks live messages it remembers published and not settled: p1.1 missing"},
		{"a settled message live", map[node.NodeID][]node.ReplicaDump{1: {replica(func() *node.CheckpointDump {
			c := whole()
			c.Live = append(c.Live, id(2))
			return c
		}(), 10)}}, "holds p1.2 live and settled"},
		{"a live message older than the window", map[node.NodeID][]node.ReplicaDump{1: {replica(func() *node.CheckpointDump {
			c := whole()
			c.Live = append(c.Live, id(0))
			return c
		}(), 10)}}, ""},
		{"a gap after the cut", map[node.NodeID][]node.ReplicaDump{1: {replica(whole(), 11)}}, "the log starts at 11, after the checkpoint at 9"},
		{"two states at one cut", map[node.NodeID][]node.ReplicaDump{1: {replica(whole(), 10)}, 2: {replica(func() *node.CheckpointDump {
			c := whole()
			c.StateDigest = [32]byte{2}
			return c
		}(), 10)}}, "hold different states at the same cut 9"},
	}
	for _, c := range cases {
		got := checkCheckpoints(&sim.History{Final: c.reps})
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected %v", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0].Detail, c.want)):
			t.Errorf("%s: got %v, want one violation saying %q", c.name, got, c.want)
		}
	}
}

func TestDedupWindowChecker(t *testing.T) {
	id := wire.MessageID{Producer: 1, Seq: 1}
	log := func(gap time.Duration) map[node.NodeID][]node.ReplicaDump {
		return map[node.NodeID][]node.ReplicaDump{1: {{Queue: "q0", Entries: []node.LogEntry{
			{Index: 4, Type: "publish", ID: id, At: 1e9},
			{Index: 9, Type: "publish", ID: id, At: 1e9 + int64(gap)},
		}}}}
	}
	if got := checkDedupWindow(time.Second, &sim.History{Final: log(1500 * time.Millisecond)}); len(got) != 0 {
		t.Errorf("a publish stored again after the window is flagged: %v", got)
	}
	got := checkDedupWindow(time.Second, &sim.History{Final: log(300 * time.Millisecond)})
	if len(got) != 1 || !strings.Contains(got[0].Detail, "stored at index 4 and again at 9, 300ms apart") {
		t.Errorf("a retry stored twice inside the window: got %v", got)
	}
}

// Each queue is judged against the window its create asked for, or the
// default when it asked for none: the same two publishes 1.5s apart are
// fine in a queue with the 1s default and stored twice in one whose
// window is 2s; and an epoch marker must set the queue's window.
func TestDedupWindowCheckerJudgesEachQueueByItsWindow(t *testing.T) {
	id := wire.MessageID{Producer: 1, Seq: 1}
	replica := func(queue string, marker time.Duration) node.ReplicaDump {
		return node.ReplicaDump{Queue: queue, Entries: []node.LogEntry{
			{Index: 1, Type: "epoch-mark", Epoch: 1, At: 1e9, Window: marker},
			{Index: 4, Type: "publish", ID: id, At: 1e9},
			{Index: 9, Type: "publish", ID: id, At: 2.5e9},
		}}
	}
	ops := []sim.OpRecord{{Kind: "create", Queue: "q0"}, {Kind: "create", Queue: "q1", Window: 2 * time.Second},
		{Kind: "publish", Queue: "q1"}}
	h := &sim.History{Ops: ops, Final: map[node.NodeID][]node.ReplicaDump{1: {replica("q0", time.Second), replica("q1", 2*time.Second)}}}
	got := checkDedupWindow(time.Second, h)
	if len(got) != 1 || !strings.Contains(got[0].Detail, "queue q1 on n1: p1.1 was stored at index 4 and again at 9, 1.5s apart, inside the 2s window") {
		t.Errorf("two publishes 1.5s apart in q0 (1s default) and q1 (2s): got %v", got)
	}
	h.Final[1][1] = replica("q1", time.Second)
	got = checkDedupWindow(time.Second, h)
	if len(got) != 2 || !strings.Contains(got[0].Detail, "queue q1 on n1: the epoch marker at index 1 (epoch 1) sets a 1s window, the queue's is 2s") {
		t.Errorf("a marker with the default window in q1: got %v", got)
	}
	// Compaction may leave no marker: a checkpoint's window counts.
	h.Final[1][1] = node.ReplicaDump{Queue: "q1", Checkpoint: &node.CheckpointDump{Cut: 40, Window: time.Second}}
	got = checkDedupWindow(time.Second, h)
	if len(got) != 1 || !strings.Contains(got[0].Detail, "queue q1 on n1: its checkpoint at 40 holds a 1s window, the queue's is 2s") {
		t.Errorf("a checkpoint with the default window in q1: got %v", got)
	}
}
