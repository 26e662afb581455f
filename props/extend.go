package props

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// leaseEndingEvents are the node events after which an owner may hand a
// leased message out again before the lease would have run out: it
// stopped serving, was superseded or fenced, sent its subscribers away
// for want of a quorum, or started a recovery (which gives every lease
// back) or a new activation.
var leaseEndingEvents = map[event.Name]bool{
	event.QueueOwnerStopped: true, event.QueueStale: true, event.QueueFenced: true,
	event.QueueQuorumLost: true, event.RecoveryStart: true, event.QueueActive: true,
}

// checkExtendedLeases: once an extension of a lease is confirmed, the
// owner that holds the lease (the same node, in the same epoch) does not
// send the message again before the extension runs out, counted from
// when the consumer asked for it (the owner counts from when it took the
// request, which is later). The history must show any reason the lease
// ended sooner: a nack of the message, a restart of the consumer (its
// connections closed), a crash of the owner, a forward jump of its clock,
// the owner stopping, stepping back or recovering, or another extension
// of the same lease, whenever it was sent (an extension sets the lease's
// end, so a later one for less time shortens it: a consumer handed the
// delivery twice by the network extends it twice). An unsubscribe is no
// reason: the owner keeps an extended lease past it. Sends are the
// simulator's ground truth.
func checkExtendedLeases(ix *index) []sim.Violation {
	oe := newOwnerEpochs(ix.h)
	var out []sim.Violation
	for i := range ix.h.Ops {
		op := &ix.h.Ops[i]
		if op.Kind != "extend" || op.Outcome != sim.OutcomeOK {
			continue
		}
		held := ix.leaseSend(op)
		if held == nil {
			continue // no send of the lease before the extension: nothing to judge it against
		}
		epoch, until := oe.epochOf(held), op.Invoked+op.For
		for _, s := range ix.sends[op.ID] {
			early := s.Queue == op.Queue && s.From == op.From && s.Lease != op.Lease && held.Sent.Before(s.Sent) && s.Sent.At < until
			if !early || oe.epochOf(s) != epoch || ix.leaseEnded(op, held.Sent.At, s.Sent.At) {
				continue
			}
			if len(out) < maxReports {
				out = append(out, safety("extended-lease",
					"%s: %s extended lease %d (sent at %v, epoch %d) at %v by %v, to %v at the earliest, yet sent the message again at %v under lease %d%s",
					op.ID, op.From, op.Lease, held.Sent, epoch, op.Invoked, op.For, until, s.Sent, s.Lease, ix.life(op.ID)))
			}
			break
		}
	}
	return out
}

// leaseSend finds the send of the lease an extension names: the latest
// send of the message by the lease's node under that lease number before
// the extension was asked for (a restarted node numbers leases afresh).
func (ix *index) leaseSend(op *sim.OpRecord) *sim.DeliveryRecord {
	var held *sim.DeliveryRecord
	for _, s := range ix.sends[op.ID] {
		if s.Queue == op.Queue && s.From == op.From && s.Lease == op.Lease && s.Sent.At <= op.Invoked {
			held = s
		}
	}
	return held
}

// leaseEnded reports whether the history shows a reason for the lease an
// extension op names to have ended between from and to, inclusive.
func (ix *index) leaseEnded(op *sim.OpRecord, from, to time.Duration) bool {
	within := func(at time.Duration) bool { return at >= from && at <= to }
	for i := range ix.h.Ops {
		o := &ix.h.Ops[i]
		if o.Kind == "nack" && o.ID == op.ID && within(o.Invoked) {
			return true
		}
		// Whatever its outcome: an extension never confirmed may still
		// have reached the owner and set the lease's end.
		if o.Kind == "extend" && o != op && o.ID == op.ID && o.From == op.From && o.Lease == op.Lease && within(o.Invoked) {
			return true
		}
	}
	for _, r := range ix.h.ClientRestarts {
		if r.Client == op.Client && within(r.At) {
			return true
		}
	}
	for _, c := range ix.h.Crashed {
		if c.Node == op.From && within(c.At) {
			return true
		}
	}
	for _, j := range ix.h.ClockJumps {
		if j.Node == op.From && j.By > 0 && within(j.At) {
			return true
		}
	}
	return ix.ownerEventBetween(op.From, op.Queue, from, to)
}

// ownerEventBetween reports whether node id reported, for queue, an
// event that ends its leases between from and to, inclusive.
func (ix *index) ownerEventBetween(id node.NodeID, queue string, from, to time.Duration) bool {
	for _, e := range ix.h.NodeEvents {
		if e.Node == id && e.Queue == queue && e.At >= from && e.At <= to && leaseEndingEvents[e.Name] {
			return true
		}
	}
	return false
}
