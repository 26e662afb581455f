package props

import (
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkDedupWindow judges deduplication against each queue's window: the
// one its create operations asked for, or def, the nodes' default, when
// they asked for none. A queue forgets a published ID only once the
// clock its records carry has moved more than the window past the ID's
// stamp, and owners stamp with at least that clock. So two publish
// records of one ID in a log, both stamped, must lie at least the window
// apart; closer, a retry inside the window was stored twice. And every
// owner must write the queue's window into its epoch markers, which is
// what the replicas forget by: a marker with another window means an
// owner lost the queue's choice, which no retry in a run may happen to
// show.
func checkDedupWindow(def time.Duration, h *sim.History) []sim.Violation {
	windows := createdWindows(h.Ops)
	window := func(queue string) time.Duration {
		if w := windows[queue]; w != 0 {
			return w
		}
		return def
	}
	var out []sim.Violation
	for _, id := range sortedNodes(h.Final) {
		for _, r := range h.Final[id] {
			if v, bad := markerWindow(window(r.Queue), id, r); bad {
				out = append(out, v)
			}
			if v, bad := storedTwice(window(r.Queue), id, r); bad {
				out = append(out, v)
			}
		}
	}
	return out
}

// createdWindows maps each queue to the window its first create
// operation asked for (zero: the default). Every create of one queue in
// a run asks for the same window, the scenario's.
func createdWindows(ops []sim.OpRecord) map[string]time.Duration {
	out := make(map[string]time.Duration)
	for _, op := range ops {
		if _, seen := out[op.Queue]; op.Kind == "create" && !seen {
			out[op.Queue] = op.Window
		}
	}
	return out
}

// markerWindow finds the first stamped epoch marker in one replica's log
// that sets a window other than the queue's; compaction may have dropped
// every marker, so the window its checkpoint holds counts as one.
func markerWindow(window time.Duration, nid node.NodeID, r node.ReplicaDump) (sim.Violation, bool) {
	if c := r.Checkpoint; c != nil && c.Window != 0 && c.Window != window {
		return safety("dedup-window", "queue %s on %s: its checkpoint at %d holds a %v window, the queue's is %v",
			r.Queue, nid, c.Cut, c.Window, window), true
	}
	for _, e := range r.Entries {
		if e.Type == "epoch-mark" && e.At != 0 && e.Window != window {
			return safety("dedup-window", "queue %s on %s: the epoch marker at index %d (epoch %d) sets a %v window, the queue's is %v",
				r.Queue, nid, e.Index, e.Epoch, e.Window, window), true
		}
	}
	return sim.Violation{}, false
}

// storedTwice finds the first ID one replica's log holds two publishes
// of, closer than the window.
func storedTwice(window time.Duration, nid node.NodeID, r node.ReplicaDump) (sim.Violation, bool) {
	first := make(map[wire.MessageID]node.LogEntry)
	for _, e := range r.Entries {
		if e.Type != "publish" || e.At == 0 {
			continue
		}
		prev, seen := first[e.ID]
		if !seen {
			first[e.ID] = e
			continue
		}
		if gap := time.Duration(e.At - prev.At); gap < window {
			return safety("dedup-window", "queue %s on %s: %s was stored at index %d and again at %d, %v apart, inside the %v window",
				r.Queue, nid, e.ID, prev.Index, e.Index, gap, window), true
		}
		first[e.ID] = e
	}
	return sim.Violation{}, false
}
