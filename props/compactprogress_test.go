package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
)

// A replica must drop a segment its checkpoint and the certificate both
// cover, once it has had compactGrace to do it since the later of them
// and its process's start.
func TestCompactionProgressWantsCoveredSegmentsDropped(t *testing.T) {
	s := time.Second
	view := func(segments int, frontLast, ckpt, certified uint64) node.QueueView {
		return node.QueueView{Name: "q0", Incarnation: 7, State: "active", Role: "follower",
			Segments: segments, FrontLast: frontLast, CheckpointIndex: ckpt, CertifiedIndex: certified}
	}
	for _, c := range []struct {
		name      string
		v         node.QueueView
		certAt    time.Duration
		startedAt time.Duration
		live      bool
		want      int
	}{
		{"a covered segment kept long after", view(3, 40, 100, 90), 2 * s, 0, true, 1},
		{"a covered segment certified just now", view(3, 40, 100, 90), 9 * s, 0, true, 0},
		{"a covered segment on a process started just now", view(3, 40, 100, 90), 2 * s, 9 * s, true, 0},
		{"a first segment reaching past the cut", view(3, 95, 100, 90), 2 * s, 0, true, 0},
		{"a first segment past its own checkpoint", view(3, 60, 50, 90), 2 * s, 0, true, 0},
		{"one segment", view(1, 0, 100, 90), 2 * s, 0, true, 0},
		{"no certificate", view(3, 40, 100, 0), 2 * s, 0, true, 0},
		{"a run that never calmed", view(3, 40, 100, 90), 2 * s, 0, false, 0},
	} {
		var r compactReadiness
		r.start(2, c.startedAt)
		r.observe(c.certAt, 2, event.NewCheckpointDurable("q0", 7, 100, "00"))
		r.observe(c.certAt, 2, event.NewCheckpointCertified("q0", 7, 90, 3, []uint32{1, 2, 3}))
		v := r.check(map[node.NodeID][]node.QueueView{2: {c.v}}, c.live, 10*s)
		if len(v) != c.want {
			t.Errorf("%s: %d violations %v, want %d", c.name, len(v), v, c.want)
		}
		for _, x := range v {
			if x.Checker != "compaction-progress" {
				t.Errorf("%s: checker %q", c.name, x.Checker)
			}
		}
	}
}
