package sim

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Sampling who says it serves. An operator, a load balancer or a test
// suite that polls every node's status page must never find a stale owner
// claiming a queue long after a newer owner took it: a stale owner that
// still says it serves draws clients it cannot serve. The world polls, on
// a fixed virtual-time schedule, every process that is up and not paused
// (a paused process answers no poll) for the queues it says it serves,
// and records every poll that found two nodes serving one queue.
//
// What the protocol promises is exactly that, once the newer owner
// serves: a recovered owner serves only after the silence limit and a
// quarter have passed since its sealed witnesses last accepted anything
// from an older owner, and an older owner steps back once it has gone
// that limit without a quorum's acceptance (node/quorum.go). So no poll
// may find an older owner serving once a newer one activated, nor, so,
// two nodes serving at once. The record keeps when the newer owner
// announced its activation (zero before it did, which only the planted
// bugs make happen), so a report shows how far into its service the
// overlap reached.

// servingSampleEvery is how often the world polls its nodes.
const servingSampleEvery = 25 * time.Millisecond

// queueViewer is a handler that can list its queues; *node.Node is one.
type queueViewer interface {
	Queues() []node.QueueView
}

// ServingOverlap is a run of polls that found the same two owners of one
// queue both serving: from At to Until.
type ServingOverlap struct {
	At, Until time.Duration
	Queue     string
	Inc       uint64
	// Old and New are the two nodes, at epochs OldEpoch <= NewEpoch, and
	// NewActiveAt is when New announced its activation (zero if it did
	// not, which no node should do).
	Old, New           node.NodeID
	OldEpoch, NewEpoch uint64
	NewActiveAt        time.Duration
	// OwnerOnly says the queue confirms on its owner alone, so that its
	// owner needs no quorum and never steps back for want of one.
	OwnerOnly bool
}

// String describes the overlap for a violation report.
func (o ServingOverlap) String() string {
	return fmt.Sprintf("from %v to %v %s (incarnation %d) was served by %s at epoch %d and by %s at epoch %d, activated at %v (%v before the last poll)",
		o.At, o.Until, o.Queue, o.Inc, o.Old, o.OldEpoch, o.New, o.NewEpoch, o.NewActiveAt, o.Until-o.NewActiveAt)
}

// servingKey names one owner's epoch of one queue incarnation.
type servingKey struct {
	queue      string
	inc, epoch uint64
}

// servingWatch keeps what the polls need between them: when each epoch
// activated (from the nodes' events), and where in the history each pair
// of overlapping epochs is recorded.
type servingWatch struct {
	activeAt map[servingKey]time.Duration
	seen     map[[2]servingKey]int
}

// observe notes activations.
func (s *servingWatch) observe(now time.Duration, e event.Event) {
	if e.Name != event.QueueActive {
		return
	}
	if s.activeAt == nil {
		s.activeAt = make(map[servingKey]time.Duration)
	}
	k := servingKey{e.Queue(), e.Inc(), e.Epoch()}
	if _, ok := s.activeAt[k]; !ok {
		s.activeAt[k] = now
	}
}

// sampleServing polls every running process and records each pair of
// nodes serving one queue at once, one record per pair of epochs.
func (w *World) sampleServing() {
	type server struct {
		id  node.NodeID
		key servingKey
	}
	views := w.upViews()
	var servers []server
	for _, v := range views {
		for _, q := range v.queues {
			if q.Role == "owner" && !q.NoQuorum {
				// An owner serves in its replica's epoch. The metadata's
				// may be newer while a plan it has applied waits to start
				// (a replacement's recovery of the next epoch): keyed by
				// that one, an owner activated in time would look as if it
				// served an epoch nobody activated (seed 137242).
				servers = append(servers, server{v.id, servingKey{q.Name, q.Incarnation, q.ReplicaEpoch}})
			}
		}
	}
	for i, a := range servers {
		for _, b := range servers[i+1:] {
			if a.key.queue != b.key.queue || a.key.inc != b.key.inc {
				continue
			}
			if a.key.epoch > b.key.epoch {
				a, b = b, a
			}
			w.noteOverlap(a.id, b.id, a.key, b.key)
		}
	}
	w.watchProgress(views)
	w.schedule(w.now+servingSampleEvery, -1, 0, w.sampleServing)
}

// nodeViews is what one node that is up says of its queues.
type nodeViews struct {
	id     node.NodeID
	queues []node.QueueView
}

// upViews asks every node that is up for its queue views, once per
// sample: both the overlap sampler and the progress watch read them.
func (w *World) upViews() []nodeViews {
	var out []nodeViews
	for _, p := range w.procs {
		v, ok := p.handler.(queueViewer)
		if !ok || p.state != stateUp {
			continue
		}
		out = append(out, nodeViews{p.id, v.Queues()})
	}
	return out
}

// noteOverlap records that old and new both serve now: a new record for
// a new pair of epochs, a longer one for a pair seen before.
func (w *World) noteOverlap(old, cur node.NodeID, oldKey, newKey servingKey) {
	pair := [2]servingKey{oldKey, newKey}
	if i, ok := w.serving.seen[pair]; ok {
		w.hist.ServingOverlaps[i].Until = w.now
		return
	}
	if w.serving.seen == nil {
		w.serving.seen = make(map[[2]servingKey]int)
	}
	w.serving.seen[pair] = len(w.hist.ServingOverlaps)
	w.hist.ServingOverlaps = append(w.hist.ServingOverlaps, ServingOverlap{
		At: w.now, Until: w.now, Queue: newKey.queue, Inc: newKey.inc, Old: old, New: cur,
		OldEpoch: oldKey.epoch, NewEpoch: newKey.epoch, NewActiveAt: w.serving.activeAt[newKey],
		OwnerOnly: w.ownerOnly(newKey.queue),
	})
}

// ownerOnly reports whether the workload made queue owner-only.
func (w *World) ownerOnly(queue string) bool {
	if w.sc.Workload == nil {
		return false
	}
	for _, q := range w.sc.Workload.Queues {
		if q.Name == queue {
			return q.Policy == wire.PolicyOwnerOnly
		}
	}
	return false
}
