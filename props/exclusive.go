package props

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// Delivery exclusivity across owners. An owner hands a message out only
// while its delivery lease holds, and the lease is renewed only by a
// quorum's acceptance of its appends. A recovery seals a set of replicas
// that meets every such quorum and learns from each how recently it last
// renewed an owner's lease; the new owner then holds back the history it
// took over until every lease those renewals could have kept alive has
// run out. So the delivery windows of two owners over the same history
// never overlap: once the new owner has handed out a message it took
// over, no owner of an older epoch hands out anything more.
//
// The check reads the simulator's ground truth, the moment each delivery
// was sent. It needs no allowance for clock skew: the lease and the hold
// are both counted on the nodes' monotonic clocks, which the simulator
// runs at the true rate (skew and jumps move only the wall clock), so the
// hold's margin for clock rates is pure slack here, and an old owner's
// lease must have lapsed strictly before the hold ends.
//
// The consumer's lease on one message is not what is judged: leases are
// not replicated, and an owner that steps back or is replaced gives its
// leased messages back to whoever serves next, which at-least-once
// delivery allows. Owner-only queues are left out: their owner needs no
// quorum to renew its lease, so nothing bounds an old owner's window but
// its own crash or its learning that it is stale.

// epochSend is one delivery with the epoch its sender served in.
type epochSend struct {
	d     *sim.DeliveryRecord
	epoch uint64
}

// checkExclusiveDelivery: no owner of an older epoch sends a delivery at
// or after the moment an owner of a newer epoch sent a message it took
// over. A message was taken over if an owner of an older epoch sent it
// before, or if its publish was confirmed before the new owner activated
// (so it was confirmed in an older epoch). Sends are in send order.
func checkExclusiveDelivery(ix *index, ownerOnly map[string]bool) []sim.Violation {
	sends := epochSends(ix.h, ownerOnly)
	activeAt := activations(ix.h)
	// oldestAfter[i] is the send of the oldest epoch of sends[i]'s queue
	// from sends[i+1] on: the one a taken-over sends[i] must not outrank.
	oldestAfter := make([]*epochSend, len(sends))
	oldest := make(map[string]*epochSend)
	for i := len(sends) - 1; i >= 0; i-- {
		s := &sends[i]
		oldestAfter[i] = oldest[s.d.Queue]
		if o := oldest[s.d.Queue]; o == nil || s.epoch <= o.epoch {
			oldest[s.d.Queue] = s
		}
	}
	// A message moved to a dead-letter queue keeps its ID there: what
	// counts is its sends from one queue.
	type queueID struct {
		queue string
		id    wire.MessageID
	}
	firstEpoch := make(map[queueID]uint64)
	for i, s := range sends {
		k := queueID{s.d.Queue, s.d.ID}
		first, sent := firstEpoch[k]
		if !sent || s.epoch < first {
			firstEpoch[k] = s.epoch
		}
		late := oldestAfter[i]
		if late == nil || late.epoch >= s.epoch {
			continue
		}
		older := sent && first < s.epoch
		if !older && !ix.confirmedBefore(s.d.Queue, s.d.ID, activeAt[ownerKey{s.d.From, s.d.Queue}][s.epoch]) {
			continue
		}
		// One overlap is one finding: every later send of the newer
		// owner would report it again.
		return []sim.Violation{safety("exclusive-delivery",
			"%s: %s (epoch %d) sent %s, which it took over from an older epoch, at %v; yet %s (epoch %d) sent %s at %v: "+
				"the two owners' delivery windows overlap%s",
			s.d.Queue, s.d.From, s.epoch, s.d.ID, s.d.Sent, late.d.From, late.epoch, late.d.ID, late.d.Sent, ix.life(s.d.ID))}
	}
	return nil
}

// epochSends pairs every send of a queue that is not owner-only with the
// epoch its sender served in.
func epochSends(h *sim.History, ownerOnly map[string]bool) []epochSend {
	oe := newOwnerEpochs(h)
	var out []epochSend
	for i := range h.Sends {
		d := &h.Sends[i]
		// A sender that was never activated is the activation checker's
		// finding, not an overlap.
		if epoch := oe.epochOf(d); epoch > 0 && !ownerOnly[d.Queue] {
			out = append(out, epochSend{d, epoch})
		}
	}
	return out
}

// activations maps each owner and queue to when it activated each epoch.
func activations(h *sim.History) map[ownerKey]map[uint64]time.Duration {
	out := make(map[ownerKey]map[uint64]time.Duration)
	for _, e := range h.NodeEvents {
		if e.Name != event.QueueActive {
			continue
		}
		k := ownerKey{e.Node, e.Queue}
		if out[k] == nil {
			out[k] = make(map[uint64]time.Duration)
		}
		if _, ok := out[k][e.Epoch]; !ok {
			out[k][e.Epoch] = e.At
		}
	}
	return out
}

// confirmedBefore reports whether id's publish was confirmed to its
// client before at.
func (ix *index) confirmedBefore(queue string, id wire.MessageID, at time.Duration) bool {
	op := ix.publishes[id]
	return op != nil && op.Queue == queue && op.Outcome == sim.OutcomeOK && op.Done < at
}

// ownerOnlyQueues names the queues of a scenario that confirm on their
// owner alone.
func ownerOnlyQueues(sc sim.Scenario) map[string]bool {
	out := make(map[string]bool)
	if sc.Workload == nil {
		return out
	}
	for _, q := range sc.Workload.Queues {
		if q.Policy == wire.PolicyOwnerOnly {
			out[q.Name] = true
		}
	}
	return out
}
