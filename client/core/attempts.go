package core

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// maxQuickRedirects bounds how many redirects in a row an operation follows
// at once. Two nodes that each name the other as owner (possible for a
// moment during failover) would otherwise bounce a request between them as
// fast as the network allows; after this many it backs off instead.
const maxQuickRedirects = 3

// send transmits a fresh attempt of op, under a new ReqID, to the node
// routing picks. No attempt of op is in flight; a hedge, which goes out
// beside one, is sent by hedge instead.
func (c *Client) send(now time.Time, op *operation) {
	if op.phase != phaseNew && op.phase != phaseBackoff && op.phase != phaseResolved {
		panic(fmt.Sprintf("core: sending op %d while in phase %s", op.id, op.phase))
	}
	if op.began.IsZero() {
		op.began = now
	}
	if op.kind == OpSubscribe {
		// A subscription is bound to the connection that made it, so an
		// earlier subscribe attempt's reply says nothing useful once a new
		// one is sent; unregistering it also keeps a subscription that
		// retries forever from growing the attempt map.
		c.unregister(op)
	}
	c.launch(now, op, c.route(op))
}

// launch registers one attempt of op to node to, under a new ReqID, puts
// it in flight and queues the request. Every attempt, first, retry,
// redirect or hedge, goes out through here.
func (c *Client) launch(now time.Time, op *operation, to uint32) {
	if op.phase == phaseDone {
		panic(fmt.Sprintf("core: launching an attempt of finished op %d", op.id))
	}
	if op.flightTo(to) >= 0 {
		panic(fmt.Sprintf("core: op %d sent a second attempt to n%d while one is in flight there", op.id, to))
	}
	if len(op.flights) >= 2 {
		panic(fmt.Sprintf("core: op %d sent a third attempt while two are in flight", op.id))
	}
	c.lastReq++
	reqID := c.lastReq
	op.attempts++
	op.to, op.phase = to, phaseAwaiting
	op.flights = append(op.flights, flight{reqID: reqID, to: to, sent: now, due: now.Add(c.cfg.RequestTimeout)})
	op.hedgeAt = time.Time{}
	if c.hedges(op) {
		// Counted from the latest attempt, whatever kind it was, so an
		// operation sends at most one new hedge per hedge delay.
		op.hedgeAt = now.Add(c.hedgeDelayOf(op))
	}
	op.sent = append(op.sent, reqID)
	c.attempts[reqID] = attempt{op: op, to: to}
	if op.kind == OpSubscribe {
		// A stale delivery from to after this attempt comes from a
		// subscription made since the last Unsubscribe went there.
		delete(c.staleLeft, staleSource{node: to, queue: op.queue})
	}
	c.outbox = append(c.outbox, Outgoing{To: to, Msg: op.request(reqID)})
	c.rewake(op)
}

// onReply routes a reply to the attempt it answers. Replies to unknown
// ReqIDs may still concern a standing subscription; anything else unknown
// is a duplicate or a straggler and is dropped.
func (c *Client) onReply(now time.Time, from uint32, r *wire.Reply) {
	a, ok := c.attempts[r.ReqID]
	if !ok {
		c.onStandingReply(now, from, r)
		return
	}
	if a.to != from {
		// Only the node a request went to can answer it.
		return
	}
	op := a.op
	if op.phase == phaseDone {
		panic(fmt.Sprintf("core: finished op %d still has attempt %d registered", op.id, r.ReqID))
	}
	i := op.flightOf(r.ReqID)
	if i < 0 {
		c.onLateReply(now, op, from, r)
		return
	}
	f := op.land(i)
	defer c.rewake(op) // one attempt fewer in flight, or a decision
	c.learnOwner(now, op, from, r)
	op.status, op.detail = r.Status, r.Detail
	switch {
	case r.Status == wire.StatusOK:
		c.observeConfirmation(now, op, f)
		c.succeed(now, op, from, r)
		return
	case op.phase == phaseAwaiting:
		// Another attempt is still in flight, and it decides.
		c.onSideRefusal(now, op, from, r)
		return
	}
	switch r.Status {
	case wire.StatusNotOwner:
		// The node refused without acting: a clean redirect.
		c.redirect(now, op, from, r.Owner)
	case wire.StatusFenced:
		// A stale owner may have written the record locally and shipped
		// it to a replica before learning it was stale; recovery may keep
		// it. So the attempt may have been acted on.
		op.ambiguous = true
		c.redirect(now, op, from, r.Owner)
	case wire.StatusUnavailable:
		// The protocol promises that a node answering unavailable did not
		// act on the request (it was starting, recovering, or fenced by
		// damage); a node that may have acted sends nothing instead. So
		// this is a clean refusal, worth retrying later.
		c.doubtUnavailableOwner(op, from)
		c.retryLater(now, op)
	default:
		c.failDefinitely(now, op)
	}
}

// onLateReply handles a reply to an earlier attempt of a live operation.
// Only OK matters: the operation happened, whatever the current attempt
// says later. Any other late status describes a past state and is dropped.
func (c *Client) onLateReply(now time.Time, op *operation, from uint32, r *wire.Reply) {
	if r.Status != wire.StatusOK || op.kind == OpSubscribe {
		return
	}
	op.status = r.Status
	c.succeed(now, op, from, r)
}

// onNoReply handles attempt i of op in flight, which will get no reply we
// can count on: it timed out, or its connection broke. Either way the
// node may have acted. If another attempt is still in flight, that one
// decides what comes next.
func (c *Client) onNoReply(now time.Time, op *operation, i int, disconnected bool) {
	if op.phase != phaseAwaiting || i < 0 || i >= len(op.flights) {
		panic(fmt.Sprintf("core: op %d lost the reply to attempt %d of %d in flight, in phase %s", op.id, i, len(op.flights), op.phase))
	}
	f := op.land(i)
	defer c.rewake(op) // one attempt fewer in flight, or a decision
	op.ambiguous = true
	op.status, op.detail = wire.StatusUnavailable, ""
	if c.owners[op.queue] == f.to {
		delete(c.owners, op.queue)
	}
	if op.phase == phaseAwaiting {
		return
	}
	if op.settle != 0 && disconnected {
		// The lease died with the connection to its owner, and a settle
		// or extension may not be redirected; nothing more can be learned.
		c.giveUp(now, op)
		return
	}
	c.retryLater(now, op)
}

// redirect resends op at once to owner, the node a refusal named. With no
// usable name, or after too many redirects in a row, it backs off instead,
// still trying the named node next if there is one.
func (c *Client) redirect(now time.Time, op *operation, from, owner uint32) {
	if op.settle != 0 {
		// A lease belongs to one owner process: a settle or extension
		// cannot follow the queue to another node. The message will be
		// redelivered.
		c.failDefinitely(now, op)
		return
	}
	if owner == from {
		owner = 0
	}
	op.hint = owner
	if owner == 0 || op.quick >= maxQuickRedirects {
		c.retryLater(now, op)
		return
	}
	if c.exhausted(now, op) {
		c.giveUp(now, op)
		return
	}
	op.quick++
	c.send(now, op)
}

// retryLater schedules another attempt after a backoff, unless op has used
// all its attempts.
func (c *Client) retryLater(now time.Time, op *operation) {
	if len(op.flights) != 0 {
		panic(fmt.Sprintf("core: op %d backing off with %d attempts in flight", op.id, len(op.flights)))
	}
	if c.exhausted(now, op) {
		c.giveUp(now, op)
		return
	}
	op.phase = phaseBackoff
	op.retryAt = now.Add(c.backoff(op.backoffs))
	op.backoffs++
	op.quick = 0
	c.rewake(op)
}

// exhausted reports whether op may not be tried again: it used
// MaxAttempts attempts (hedges count), or RetryFor has passed since its
// first attempt. A silent operation (the client's own re-subscription)
// is never exhausted.
func (c *Client) exhausted(now time.Time, op *operation) bool {
	if op.silent {
		return false
	}
	if c.cfg.MaxAttempts > 0 && op.attempts >= c.cfg.MaxAttempts {
		return true
	}
	return c.cfg.RetryFor > 0 && !now.Before(op.began.Add(c.cfg.RetryFor))
}

// doubtUnavailableOwner forgets that node from owns op's queue when from,
// the owner the cache names, answered unavailable and op's next backoff
// is already the longest one, so the retry goes through discovery
// instead of to from again. An owner that is starting or recovering
// answers unavailable for a moment and is still the owner, so the cache
// keeps it through the backoff's ramp. But a node that was removed from
// the cluster while it was down keeps running on the metadata it had,
// which may name it the owner; it never hears from the metadata again,
// so it answers unavailable for good, and a client that only ever asked
// it again would never reach the queue's real owner. Another node that
// still names from as the owner costs one redirect.
func (c *Client) doubtUnavailableOwner(op *operation, from uint32) {
	if c.owners[op.queue] == from && c.nominalBackoff(op.backoffs) >= c.maxBackoff {
		delete(c.owners, op.queue)
	}
}

// backoff returns the wait before retry number k (from zero): the
// nominal wait, jittered down by up to half so clients that failed
// together do not retry together.
func (c *Client) backoff(k int) time.Duration {
	d := c.nominalBackoff(k)
	half := d / 2
	return half + time.Duration(c.rng.Int64N(int64(d-half)+1))
}

// nominalBackoff is the wait before retry number k before its jitter:
// the base doubled k times, capped.
func (c *Client) nominalBackoff(k int) time.Duration {
	d := c.cfg.RetryBackoff
	for i := 0; i < k && d < c.maxBackoff; i++ {
		d *= 2
	}
	return min(d, c.maxBackoff)
}

// succeed finishes op as OK; the reply came from node from.
func (c *Client) succeed(now time.Time, op *operation, from uint32, r *wire.Reply) {
	op.index, op.depth = r.Index, r.Depth
	switch op.kind {
	case OpSubscribe:
		op.sub.establish(from, r.ReqID, now.Add(c.subscriptionRefresh))
	case OpDelete:
		delete(c.owners, op.queue)
	}
	c.finish(op, OutcomeOK)
}

// failDefinitely handles a status that says the server will not do the
// operation. It is Failed only if no attempt could have been acted on; a
// standing subscription does not give up at all, since a node still
// catching up on the catalogue can refuse a queue that exists.
func (c *Client) failDefinitely(now time.Time, op *operation) {
	switch {
	case op.silent:
		c.retryLater(now, op)
	case op.ambiguous:
		c.giveUp(now, op)
	default:
		if op.sub != nil {
			c.dropSubscription(op.sub)
		}
		c.finish(op, OutcomeFailed)
	}
}

// giveUp reports op as Unknown. A subscription is reported once and then
// keeps trying silently: the application asked for it to stand, and it may
// even be standing already.
func (c *Client) giveUp(now time.Time, op *operation) {
	if op.kind == OpSubscribe {
		if !op.silent {
			c.events = append(c.events, op.event(OutcomeUnknown))
			op.silent = true
		}
		c.retryLater(now, op)
		return
	}
	c.finish(op, OutcomeUnknown)
}

// finish retires op and, unless it is silent, reports it.
func (c *Client) finish(op *operation, outcome Outcome) {
	if op.phase == phaseDone {
		panic(fmt.Sprintf("core: op %d finished twice", op.id))
	}
	c.unregister(op)
	op.flights, op.hedgeAt = nil, time.Time{}
	op.phase = phaseDone
	c.doneLive++
	if !op.silent {
		c.events = append(c.events, op.event(outcome))
	}
}

// unregister forgets every attempt of op, so replies to them are ignored.
func (c *Client) unregister(op *operation) {
	for _, id := range op.sent {
		delete(c.attempts, id)
	}
	op.sent = op.sent[:0]
}
