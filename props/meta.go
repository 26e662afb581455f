package props

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// checkOneLeaderPerTerm: raft promises at most one metadata leader per
// term; the check holds the integration (persistence before sending) to
// that promise.
func checkOneLeaderPerTerm(h *sim.History) []sim.Violation {
	leaders := make(map[uint64]node.NodeID)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		if e.Name != event.MetaLeader {
			continue
		}
		id := node.NodeID(e.Value)
		if prev, ok := leaders[e.Term]; ok && prev != id && len(out) < maxReports {
			out = append(out, safety("one-leader-per-term", "term %d has two metadata leaders: %s and %s (the second at %v)", e.Term, prev, id, e.At))
		}
		leaders[e.Term] = id
	}
	return out
}

// checkEpochs: each activation of a queue incarnation's owner uses an epoch
// higher than every earlier one, across restarts of any node: an epoch
// handed out twice would let two writers share a fencing token.
func checkEpochs(h *sim.History) []sim.Violation {
	type key struct {
		queue string
		inc   uint64
	}
	last := make(map[key]uint64)
	at := make(map[key]string)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		if e.Name != event.QueueActive {
			continue
		}
		k := key{e.Queue, e.Inc}
		if e.Epoch <= last[k] && len(out) < maxReports {
			out = append(out, safety("epochs", "queue %s (incarnation %x) activated epoch %d on %s at %v after epoch %d (%s)%s",
				e.Queue, e.Inc, e.Epoch, e.Node, e.At, last[k], at[k], queueStory(h, e.Queue, 0, e.At)))
		}
		last[k] = max(last[k], e.Epoch)
		at[k] = fmt.Sprintf("on %s at %v", e.Node, e.At)
	}
	return out
}

// checkNoServiceBeforeActivation: no publish is confirmed for a queue
// before any node has applied the metadata command activating it.
func checkNoServiceBeforeActivation(ix *index) []sim.Violation {
	activated := make(map[string]sim.Stamp)
	for _, e := range ix.h.NodeEvents {
		if e.Name != event.MetaActivated {
			continue
		}
		if _, ok := activated[e.Queue]; !ok {
			activated[e.Queue] = sim.Stamp{At: e.At}
		}
	}
	var out []sim.Violation
	for _, op := range ix.h.Ops {
		if op.Kind != "publish" || op.Outcome != sim.OutcomeOK || op.Replied.IsZero() {
			continue
		}
		first, ok := activated[op.Queue]
		if (!ok || op.Replied.At < first.At) && len(out) < maxReports {
			out = append(out, safety("activation", "publish of %s to %s was confirmed at %v, before the queue was activated (%v)%s",
				op.ID, op.Queue, op.Replied, first.At, ix.life(op.ID)))
		}
	}
	return out
}
