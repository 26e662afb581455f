package props

import (
	"fmt"
	"slices"
	"time"

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

// checkMetaAgreement: raft promises that every member applies the same
// entry at each index of the metadata log (state machine safety), and an
// index and a term name one entry. So no two members may apply entries of
// different terms at one index. A member that forgot acknowledged entries,
// or counted votes by a configuration older than its log's, could elect a
// leader that writes a second entry at an index already committed; the
// metadata would then disagree for good, though each member's history
// looks consistent on its own (seed 123899 failed only on liveness).
func checkMetaAgreement(h *sim.History) []sim.Violation {
	type applied struct {
		term uint64
		node node.NodeID
		at   time.Duration
	}
	first := make(map[uint64]applied)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		if e.Name != event.MetaApplied {
			continue
		}
		a, seen := first[e.Value]
		switch {
		case !seen:
			first[e.Value] = applied{e.Term, e.Node, e.At}
		case a.term != e.Term && len(out) < maxReports:
			out = append(out, safety("meta-agreement", "metadata entry %d was applied by %s at %v from term %d, and by %s at %v from term %d",
				e.Value, a.node, a.at, a.term, e.Node, e.At, e.Term))
		}
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
// before any node has applied the metadata command activating it, and no
// create is answered ok before its queue is activated: a client told its
// queue exists publishes to it at once, and a node answers a create only
// once it has applied the activation (answerCreates), never when the
// create itself commits, while the queue is still being prepared. The
// activation must come after the create was asked for, since an ok
// answers only the request whose proposal made the queue, which also
// keeps a later incarnation of a deleted queue's name from passing on
// the earlier one's activation.
func checkNoServiceBeforeActivation(ix *index) []sim.Violation {
	activated := make(map[string][]time.Duration)
	for _, e := range ix.h.NodeEvents {
		if e.Name == event.MetaActivated {
			activated[e.Queue] = append(activated[e.Queue], e.At)
		}
	}
	var out []sim.Violation
	for _, op := range ix.h.Ops {
		if op.Outcome != sim.OutcomeOK || op.Replied.IsZero() || len(out) >= maxReports {
			continue
		}
		times := activated[op.Queue]
		switch op.Kind {
		case "publish":
			if len(times) == 0 || op.Replied.At < times[0] {
				out = append(out, safety("activation", "publish of %s to %s was confirmed at %v, before the queue was activated (%v)%s",
					op.ID, op.Queue, op.Replied, firstOf(times), ix.life(op.ID)))
			}
		case "create":
			i, _ := slices.BinarySearch(times, op.Invoked)
			if i == len(times) || times[i] > op.Replied.At {
				out = append(out, safety("activation", "create of %s asked at %v was answered ok at %v, before the queue was activated (activations at %v)%s",
					op.Queue, op.Invoked, op.Replied, times, queueStory(ix.h, op.Queue, 0, op.Replied.At)))
			}
		}
	}
	return out
}

// firstOf is the first of times, or zero.
func firstOf(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	return times[0]
}

// checkRecoveredActivation: an owner that won its epoch by a recovery
// serves only once the metadata has activated that epoch, which it does
// only when an exact quorum holds the recovered history. Serving earlier
// acts on a history that no quorum may hold yet, in an epoch the metadata
// may still take back by planning another recovery.
//
// A queue.active is a recovered owner's when the same node started a
// recovery into the same queue and epoch since it last opened its replica.
// The bound matters because recovery.start names no incarnation: a
// deleted queue's replica is retired before the next incarnation's is
// prepared and opened, and a restarted process reopens its replicas, so an
// opening separates every replica life (and every process) from the next.
// Within one, an epoch the node recovered into is activated no other way:
// the metadata hands each epoch to one process, which either recovers it
// or, for a new queue's first epoch or a restarted owner-only owner,
// activates it directly (activate and finishOpening in node/owner.go).
func checkRecoveredActivation(h *sim.History) []sim.Violation {
	type replicaKey struct {
		node  node.NodeID
		queue string
	}
	// recovering holds, per replica, when it started recovering into
	// each epoch; activated the (queue, incarnation, epoch) activations
	// some node has applied so far.
	recovering := make(map[replicaKey]map[uint64]time.Duration)
	activated := make(map[activation]bool)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		k := replicaKey{e.Node, e.Queue}
		switch e.Name {
		case event.QueueOpen:
			delete(recovering, k)
		case event.RecoveryStart:
			if recovering[k] == nil {
				recovering[k] = make(map[uint64]time.Duration)
			}
			if _, ok := recovering[k][e.Epoch]; !ok {
				recovering[k][e.Epoch] = e.At
			}
		case event.MetaRecoveryActivated:
			activated[activation{e.Queue, e.Inc, e.Epoch}] = true
		case event.QueueActive:
			start, recovered := recovering[k][e.Epoch]
			if !recovered || activated[activation{e.Queue, e.Inc, e.Epoch}] || len(out) >= maxReports {
				continue
			}
			out = append(out, safety("recovery-activation",
				"%s served queue %s (incarnation %x) as owner of epoch %d at %v, having recovered into that epoch since %v, "+
					"before any node applied the metadata's activation of it%s",
				e.Node, e.Queue, e.Inc, e.Epoch, e.At, start, queueStory(h, e.Queue, start, e.At)))
		}
	}
	return out
}

// checkOneServingOwner: no poll of the nodes finds an owner still saying
// it serves a queue once a newer owner of the queue activated, nor two
// owners serving one epoch. The newer owner serves only after the older
// one's quorum has surely gone stale (recovery.Core.ServeFrom), and the
// older one steps back when it does (node/quorum.go). An owner-only
// queue's owner needs no quorum and never steps back, so only the second
// rule applies to it.
func checkOneServingOwner(h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, o := range h.ServingOverlaps {
		if (o.OldEpoch == o.NewEpoch || !o.OwnerOnly) && len(out) < maxReports {
			out = append(out, safety("one-serving-owner", "%s%s", o, queueStory(h, o.Queue, 0, o.At)))
		}
	}
	return out
}
