package props

import (
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkDedupWindow judges deduplication against the window: a queue
// forgets a published ID only once the clock its records carry has moved
// more than the window past the ID's stamp, and owners stamp with at
// least that clock. So two publish records of one ID in a log, both
// stamped, must lie at least the window apart; closer, a retry inside
// the window was stored twice.
func checkDedupWindow(window time.Duration, h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, id := range sortedNodes(h.Final) {
		for _, r := range h.Final[id] {
			if v, bad := storedTwice(window, id, r); bad {
				out = append(out, v)
			}
		}
	}
	return out
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
