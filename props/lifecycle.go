package props

import (
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// checkQueueLifecycle holds replicas to their queue's life
// (queue-lifecycle): at the end of a run that reached its calm phase, no
// node whose process has run for lifecycleGrace holds a replica of a
// queue its metadata says is deleted, nor of an incarnation other than
// the one the metadata names. A node retires such a replica as soon as
// it applies the change, or reconciles its replicas after a start; one
// that kept it would keep answering for a queue nobody serves, and its
// files would stay for good. The simulator's churned queues (created and
// deleted again in a run) are what reach this.
func checkQueueLifecycle(views map[node.NodeID][]node.QueueView, started map[node.NodeID]time.Duration, live bool, now time.Duration) []sim.Violation {
	if !live {
		return nil
	}
	var out []sim.Violation
	for _, id := range slices.Sorted(maps.Keys(views)) {
		if now-started[id] < lifecycleGrace {
			continue
		}
		for _, v := range views[id] {
			held := v.Role != "none" && v.HeldIncarnation != 0
			switch {
			case len(out) == maxReports:
				return out
			case held && v.State == "deleted":
				out = append(out, liveness("queue-lifecycle", "queue %s: %s still holds its replica of incarnation %x at the end, though the metadata deleted the queue",
					v.Name, id, v.HeldIncarnation))
			case held && v.State != "unknown" && v.HeldIncarnation != v.Incarnation:
				out = append(out, liveness("queue-lifecycle", "queue %s: %s still holds a replica of incarnation %x at the end, the metadata's is %x",
					v.Name, id, v.HeldIncarnation, v.Incarnation))
			}
		}
	}
	return out
}

// lifecycleGrace is how long a node's process must have run for its
// replicas to match the metadata: a start reconciles every replica once
// the metadata is applied, a few ticks after it.
const lifecycleGrace = 2 * time.Second
