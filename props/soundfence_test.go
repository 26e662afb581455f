package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// TestOnlyABrokenDiskExcusesAFence: a replica may fence itself only on
// a node whose disk a fault broke before the fence. A fence on a sound
// disk, or one that came before the fault, is reported once per replica.
func TestOnlyABrokenDiskExcusesAFence(t *testing.T) {
	s := time.Second
	fence := func(at time.Duration, n node.NodeID, q string) sim.NodeEvent {
		return sim.NodeEvent{At: at, Node: n, Name: event.QueueFenced, Queue: q}
	}
	for _, c := range []struct {
		name   string
		broken map[node.NodeID]time.Duration
		fences []sim.NodeEvent
		want   []string
	}{
		{"broken before", map[node.NodeID]time.Duration{2: 1 * s}, []sim.NodeEvent{fence(2*s, 2, "q")}, nil},
		{"broken at the same instant", map[node.NodeID]time.Duration{2: 2 * s}, []sim.NodeEvent{fence(2*s, 2, "q")}, nil},
		{"sound disk", nil, []sim.NodeEvent{fence(2*s, 2, "q")}, []string{"n2 fenced its replica of q at 2s"}},
		{"another node broken", map[node.NodeID]time.Duration{3: 1 * s}, []sim.NodeEvent{fence(2*s, 2, "q")},
			[]string{"n2 fenced its replica of q"}},
		{"broken after", map[node.NodeID]time.Duration{2: 3 * s}, []sim.NodeEvent{fence(2*s, 2, "q")},
			[]string{"n2 fenced its replica of q"}},
		{"each replica once", nil, []sim.NodeEvent{fence(2*s, 2, "q"), fence(3*s, 2, "q"), fence(3*s, 2, "r")},
			[]string{"of q at 2s", "of r at 3s"}},
	} {
		vs := checkSoundReplicasStay(&sim.History{NodeEvents: c.fences, Broken: c.broken})
		if len(vs) != len(c.want) {
			t.Fatalf("%s: %d violations, want %d: %v", c.name, len(vs), len(c.want), vs)
		}
		for i, v := range vs {
			if v.Kind != sim.Safety || v.Checker != "sound-replica-fenced" || !strings.Contains(v.Detail, c.want[i]) {
				t.Errorf("%s: got %v %s %q, want a safety violation saying %q", c.name, v.Kind, v.Checker, v.Detail, c.want[i])
			}
		}
	}
}
