package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// Hedged requests. An owner that is paused, or cut off without its
// connections resetting, answers nothing, and an attempt sent to it would
// hold its operation for a whole RequestTimeout although the cluster may
// have a new owner serving within half a second. So once an attempt has
// waited HedgeAfter with no reply, the client sends the same request,
// under a new ReqID, to another node as well, and keeps waiting for the
// first: whichever attempt is confirmed first completes the operation.
// The other node either serves the queue, or holds the request while the
// queue fails over and sends it on, or names the owner; a name the
// client is not already waiting on is followed at once.
//
// Only publishes and subscribes are hedged. A publish is idempotent by
// its MessageID: the owner confirms a resent publish as the first one,
// so two attempts store it once and both may be answered OK. A subscribe
// is accepted only by an owner, and on a node that already holds the
// subscription it only updates it; the client keeps the subscription
// that was confirmed first. Settles are never hedged: a lease
// belongs to one owner process, and no other node can settle it. Nor are
// queue creation, deletion and the detection policy: they are answered
// only once the metadata commits them, so a silence there is the
// metadata's, which another node would wait on too; and a second attempt
// of them is not harmless, since a create or delete that raced its own
// twin is answered queue-exists or no-queue, turning a success the
// client could have reported into an unknown outcome.

// hedges reports whether op is an operation the client hedges.
func (c *Client) hedges(op *operation) bool {
	return c.hedgeAfter > 0 && op.settle == 0 && (op.kind == OpPublish || op.kind == OpSubscribe)
}

// hedge sends another attempt of op beside the one attempt in flight,
// whose reply is HedgeAfter late, to a node that holds none of op's
// attempts. An operation that may hedge no more (see mayHedge) waits for
// the attempt it has.
func (c *Client) hedge(now time.Time, op *operation) {
	if !c.hedges(op) || !op.hedgeDue(now) || op.phase != phaseAwaiting {
		panic(fmt.Sprintf("core: hedging %s op %d in phase %s with %d attempts in flight, hedge at %v (now %v)",
			op.kind, op.id, op.phase, len(op.flights), op.hedgeAt, now))
	}
	if !c.mayHedge(now, op) {
		op.hedgeAt = time.Time{}
		c.rewake(op)
		return
	}
	// A hedge starts a fresh run of quick redirects: it is paced by
	// HedgeAfter itself, so a run that starts from it cannot loop faster
	// than one per HedgeAfter either.
	op.quick = 0
	op.hedged++
	c.launch(now, op, c.hedgeRoute(op))
}

// mayHedge reports whether op may send another request beside the one in
// flight. Hedges are attempts: they stop once RetryFor has passed since
// the first, and they count towards MaxAttempts, which bounds the
// requests an operation sends (a caller that allows one attempt wants
// its request to reach one node only). But a hedge never takes the last
// attempt MaxAttempts allows: that one is kept for the retry after a
// timeout, which by then is likely to find the new owner, whereas hedges
// sent before the cluster has noticed a silent owner are refused.
func (c *Client) mayHedge(now time.Time, op *operation) bool {
	if op.silent {
		return true
	}
	if c.cfg.MaxAttempts > 0 && op.attempts+1 >= c.cfg.MaxAttempts {
		return false
	}
	return c.cfg.RetryFor == 0 || now.Before(op.began.Add(c.cfg.RetryFor))
}

// hedgeRoute picks the node for a hedge of op: as for any attempt, a node
// named by a redirect first, then the cached owner, then discovery; but
// never a node already holding an attempt of op, which is the node whose
// silence the hedge is for.
func (c *Client) hedgeRoute(op *operation) uint32 {
	hint := op.hint
	op.hint = 0
	if hint != 0 && op.flightTo(hint) < 0 {
		return hint
	}
	if owner, ok := c.owners[op.queue]; ok && op.flightTo(owner) < 0 {
		return owner
	}
	// Hedging is off with one node, and a hedge goes out only beside a
	// single attempt in flight, so some node always holds none.
	return c.discover(func(node uint32) bool { return op.flightTo(node) >= 0 })
}

// onSideRefusal handles a refusal of one attempt of op while another is
// still in flight. That attempt is over, but the operation is not: the
// one in flight may yet be confirmed, and may have been acted on, so no
// refusal can end the operation now (not even a definite one: that is
// for the last attempt in flight to say). A redirect to a node holding
// none of op's attempts is followed at once, since it may name the new
// owner the hedge was looking for. A redirect to the silent node, or a
// clean refusal, only leaves the other attempt to be waited for and the
// next hedge to its time.
func (c *Client) onSideRefusal(now time.Time, op *operation, from uint32, r *wire.Reply) {
	if op.phase != phaseAwaiting || op.settle != 0 {
		panic(fmt.Sprintf("core: %s op %d refused beside another attempt, in phase %s", op.kind, op.id, op.phase))
	}
	switch r.Status {
	case wire.StatusFenced:
		// As for a single attempt: a stale owner may have acted.
		op.ambiguous = true
	case wire.StatusNotOwner:
	default:
		return
	}
	owner := r.Owner
	if owner == 0 || owner == from || op.flightTo(owner) >= 0 {
		return
	}
	if op.quick >= maxQuickRedirects || !c.mayHedge(now, op) {
		// Try it at the next hedge, if there is one, or at the retry.
		op.hint = owner
		return
	}
	op.quick++
	c.launch(now, op, owner)
}

// onAwaitingDue handles an awaiting op whose wake time came: attempts
// past their reply deadline time out, oldest first; then, if one attempt
// is still in flight and the hedge is due, a hedge goes out.
func (c *Client) onAwaitingDue(now time.Time, op *operation) {
	for op.phase == phaseAwaiting {
		i := slices.IndexFunc(op.flights, func(f flight) bool { return !f.due.After(now) })
		if i < 0 {
			break
		}
		c.onNoReply(now, op, i, false)
	}
	if op.phase == phaseAwaiting && op.hedgeDue(now) {
		c.hedge(now, op)
	}
}

// hedgeDue reports whether op may send a hedge at now: one attempt alone
// is in flight and the hedge's time has come.
func (op *operation) hedgeDue(now time.Time) bool {
	return len(op.flights) == 1 && !op.hedgeAt.IsZero() && !op.hedgeAt.After(now)
}

// wake returns when Tick next has work for op: its retry time while it
// backs off; while it awaits, the earliest reply deadline of its
// attempts in flight, or its hedge time if that is sooner and a hedge
// could go out then.
func (op *operation) wake() time.Time {
	switch op.phase {
	case phaseBackoff:
		return op.retryAt
	case phaseAwaiting:
		var at time.Time
		if len(op.flights) == 1 {
			at = op.hedgeAt
		}
		for _, f := range op.flights {
			if at.IsZero() || f.due.Before(at) {
				at = f.due
			}
		}
		return at
	}
	panic(fmt.Sprintf("core: op %d has no wake time in phase %s", op.id, op.phase))
}

// flightOf returns the index of op's attempt in flight with reqID, or -1
// if none is.
func (op *operation) flightOf(reqID uint64) int {
	return slices.IndexFunc(op.flights, func(f flight) bool { return f.reqID == reqID })
}

// flightTo returns the index of op's attempt in flight at node, or -1 if
// none is.
func (op *operation) flightTo(node uint32) int {
	return slices.IndexFunc(op.flights, func(f flight) bool { return f.to == node })
}

// land takes attempt i out of flight, because it was answered or given
// up on, and returns it. If it was the last, op is resolved: the handler
// running now decides what comes next.
func (op *operation) land(i int) flight {
	if op.phase != phaseAwaiting || i < 0 || i >= len(op.flights) {
		panic(fmt.Sprintf("core: op %d landing attempt %d of %d in flight, in phase %s", op.id, i, len(op.flights), op.phase))
	}
	f := op.flights[i]
	op.flights = slices.Delete(op.flights, i, i+1)
	if len(op.flights) == 0 {
		op.phase, op.to = phaseResolved, f.to
	}
	return f
}
