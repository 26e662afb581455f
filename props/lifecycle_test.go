package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
)

// A replica of a deleted queue, or of an incarnation the metadata has
// left, may not outlast a calm run's end on a node that has run long
// enough to reconcile.
func TestQueueLifecycleWantsReplicasGoneWithTheirQueue(t *testing.T) {
	s := time.Second
	view := func(state, role string, inc, held uint64) node.QueueView {
		return node.QueueView{Name: "zchurn-1", State: state, Role: role, Incarnation: inc, HeldIncarnation: held}
	}
	for _, c := range []struct {
		name    string
		v       node.QueueView
		started time.Duration
		live    bool
		want    int
	}{
		{"a deleted queue's replica kept", view("deleted", "follower", 7, 7), 0, true, 1},
		{"an old incarnation's replica kept", view("active", "follower", 8, 7), 0, true, 1},
		{"a deleted queue's replica on a node just started", view("deleted", "follower", 7, 7), 9 * s, true, 0},
		{"a deleted queue with no replica", view("deleted", "none", 7, 0), 0, true, 0},
		{"a live queue's replica", view("active", "owner", 7, 7), 0, true, 0},
		{"a replica the metadata does not name yet", view("unknown", "follower", 7, 7), 0, true, 0},
		{"a run that never calmed", view("deleted", "follower", 7, 7), 0, false, 0},
	} {
		v := checkQueueLifecycle(map[node.NodeID][]node.QueueView{2: {c.v}}, map[node.NodeID]time.Duration{2: c.started}, c.live, 10*s)
		if len(v) != c.want {
			t.Errorf("%s: %d violations %v, want %d", c.name, len(v), v, c.want)
		}
		for _, x := range v {
			if x.Checker != "queue-lifecycle" {
				t.Errorf("%s: checker %q", c.name, x.Checker)
			}
		}
	}
}
