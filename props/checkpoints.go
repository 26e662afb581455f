package props

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkCheckpoints judges every checkpoint left on the disks at the end:
// each must be whole (every message it remembers published and not
// settled is live in it, and no live message is settled), its log must go
// on from its cut without a gap, and two replicas of one queue
// incarnation with a checkpoint at the same cut must hold the same state
// there. A checkpoint forgets IDs older than the deduplication window,
// but a settle is never older than its publish, so an ID remembered as
// published and not as settled is live.
func checkCheckpoints(h *sim.History) []sim.Violation {
	type key struct {
		queue string
		inc   uint64
		cut   uint64
	}
	var out []sim.Violation
	first := make(map[key]node.NodeID)
	digests := make(map[key][32]byte)
	for _, id := range sortedNodes(h.Final) {
		for _, r := range h.Final[id] {
			c := r.Checkpoint
			if c == nil || r.Err != nil {
				continue
			}
			if v, bad := checkpointWhole(id, r); bad {
				out = append(out, v)
			}
			k := key{r.Queue, r.Incarnation, c.Cut}
			if d, seen := digests[k]; seen && d != c.StateDigest {
				out = append(out, safety("checkpoint", "queue %s: %s and %s hold different states at the same cut %d", r.Queue, first[k], id, c.Cut))
				continue
			}
			digests[k], first[k] = c.StateDigest, id
		}
	}
	return out
}

// checkpointWhole checks one replica's checkpoint against itself and its
// log.
func checkpointWhole(id node.NodeID, r node.ReplicaDump) (sim.Violation, bool) {
	c := r.Checkpoint
	if len(r.Entries) > 0 && r.Entries[0].Index > c.Cut+1 {
		return safety("checkpoint", "queue %s on %s: the log starts at %d, after the checkpoint at %d", r.Queue, id, r.Entries[0].Index, c.Cut), true
	}
	var live []wire.MessageID
	for _, p := range c.Published {
		if _, settled := slices.BinarySearchFunc(c.Settled, p, compareMessageIDs); !settled {
			live = append(live, p)
		}
	}
	have := slices.SortedFunc(slices.Values(c.Live), compareMessageIDs)
	if missing := idDifference(live, have); missing != "" {
		return safety("checkpoint", "queue %s on %s: the checkpoint at %d lacks live messages it remembers published and not settled:%s",
			r.Queue, id, c.Cut, missing), true
	}
	for _, m := range have {
		if _, settled := slices.BinarySearchFunc(c.Settled, m, compareMessageIDs); settled {
			return safety("checkpoint", "queue %s on %s: the checkpoint at %d holds %s live and settled", r.Queue, id, c.Cut, m), true
		}
	}
	return sim.Violation{}, false
}

func compareMessageIDs(a, b wire.MessageID) int {
	if c := cmp.Compare(a.Producer, b.Producer); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// idDifference names up to three IDs in want but not in got.
func idDifference(want, got []wire.MessageID) string {
	s := ""
	n := 0
	for _, id := range want {
		if _, ok := slices.BinarySearchFunc(got, id, compareMessageIDs); !ok && n < 3 {
			s += fmt.Sprintf(" %s missing;", id)
			n++
		}
	}
	return s
}
