package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// An owner cut off from its quorum. A partition that silently separates
// an owner from its replicas leaves it able to take requests it can no
// longer confirm: before this rule it appended every publish to its own
// log and answered nothing until its clients' timeouts, and its status
// page went on saying it served the queue while its peers replaced it.
//
// Now an owner that has heard from no quorum of its replicas for the
// silence limit (the delivery lease, 60 ms) steps back: it refuses requests at once, with
// a clean not-owner answer that names no owner, so its clients look for
// the queue elsewhere; it appends nothing for them; it hands its
// subscribers the same answer so they subscribe elsewhere; it tells the
// clients still waiting for a confirmation that their outcome is unknown
// (fenced: the record may yet be confirmed, here if the quorum answers
// again, or in a successor's history), so they retry elsewhere at once
// instead of waiting out their timeouts; and its view reports it as not
// serving. It keeps its role and its epoch, and keeps
// sending appends: when replies come back in the same epoch it serves
// again, and if a newer epoch sealed its replicas meanwhile, their
// refusals make it stale as before.
//
// The limit is what makes "at most one node says it serves a queue"
// true. A peer may begin replacing an owner soon after the owner's
// connection to it resets, in either detection mode, and the metadata
// leader judges an owner by its own link, which can break while the
// owner's followers still take its appends. So the limit does not lean
// on the detector: a recovered owner, once activated, waits until the
// limit and a quarter have passed since the last acceptance any of its
// sealed witnesses gave an older owner (recovery.Core.ServeFrom). The old
// owner counts its silence from the send stamp of the last appends a
// quorum accepted, no later than those acceptances, and every quorum it
// could hear from meets the sealed witnesses, which accept nothing older
// once sealed; so it has stepped back before the new owner serves. Both
// sides count on monotonic clocks, which keep counting while a process
// is stopped; the quarter covers their rates.
//
// The limit is the delivery lease (60 ms), or one detection interval if
// that is shorter, in both modes, not the grace of heartbeat detection:
// the new owner waits it out whenever a witness heard the old owner
// lately, which a clean crash detected through its connection reset
// always is, so a longer limit would slow those failovers by as much.
// At the delivery lease the wait ends with the hold a recovered owner
// keeps on the old history anyway (hold.go), so it costs the new
// messages only what it costs the old. An owner sends heartbeats often
// enough to keep its quorum's acceptances well inside it (heartbeatDue).

// ownerSilenceLimit is how long an owner may hear from no quorum of its
// replicas before it stops serving: the delivery lease, or one interval
// of the detection policy in force if that is shorter, in either mode.
func (n *Node) ownerSilenceLimit() time.Duration {
	p := n.cfg.Detection
	if n.detector != nil {
		p = n.detector.policy()
	}
	return min(p.Interval, deliveryLease)
}

// quorumSilence is how long, on the lease clock, this owner has gone
// without a quorum's acceptance: since the send stamp of the appends
// whose acceptance makes its freshest quorum, or since it began serving
// if that is later.
func (o *ownerState) quorumSilence() time.Duration {
	from := o.servingFrom
	if at, ok := o.quorumGrantAt(); ok {
		from = max(from, at)
	}
	now := o.r.n.leaseClock()
	return time.Duration(now - min(from, now))
}

// quorumHeardLately reports whether a quorum of this owner's replicas
// accepted its appends within the silence limit.
func (o *ownerState) quorumHeardLately() bool {
	at, ok := o.quorumGrantAt()
	return ok && time.Duration(o.r.n.leaseClock()-min(at, o.r.n.leaseClock())) < o.r.n.ownerSilenceLimit()
}

// waitForActivation makes this candidate wait before it serves, counting
// from now, on the lease clock, if it was not waiting already
// (activationGranted).
func (o *ownerState) waitForActivation() {
	if o.activationWaits {
		return
	}
	o.activationWaits, o.waitingFrom = true, o.r.n.leaseClock()
	o.r.n.emit(event.NewQueueActivationWaits(o.r.name, o.r.epoch, o.quorumSilence()))
}

// activationGranted reports whether this candidate's quorum lets it
// start serving: a quorum accepted its appends within the silence limit
// and, once it waits, accepted appends it sent since it began waiting.
//
// A waiting candidate found its quorum silent past the limit (or its node
// held down): by then its peers may be replacing it. The limit bounds
// only a replacement that began after its quorum fell silent, and the
// metadata leader judges it by its own link, which can go quiet while a
// follower still accepts its appends. That follower may then be sealed at
// a newer epoch, and see it activate, while its acceptances from before
// the seal are still on their way: each echoes a stamp fresh within the
// limit, and one that arrives late would start the old epoch after the
// newer one (seed 290067 of the long sweep). An acceptance of an append
// sent since the wait began was given after the candidate knew it had to
// prove its epoch current, so a seal that came before it is refused
// instead, and the refusal makes the candidate stale.
func (o *ownerState) activationGranted() bool {
	at, ok := o.quorumGrantAt()
	if !ok || !o.quorumHeardLately() {
		return false
	}
	return !o.activationWaits || at >= o.waitingFrom
}

// cutOff reports whether this serving owner has heard from no quorum of
// its replicas for the silence limit. It only reads: noteCutOff acts on
// a change.
func (o *ownerState) cutOff() bool {
	if !o.r.serving() || bugs.Active(bugs.ServeWithoutQuorum) || o.resting && bugs.Active(bugs.RestKeepsGrant) {
		return false
	}
	return o.quorumSilence() >= o.r.n.ownerSilenceLimit()
}

// noteCutOff reports whether this owner is cut off from its quorum, and
// acts when that changed since it last looked: on losing the quorum it
// says so and sends its subscribers away; on hearing from one again it
// says it serves again.
func (o *ownerState) noteCutOff() bool {
	cut := o.cutOff()
	switch {
	case cut && !o.cutOffNoted:
		o.cutOffNoted = true
		if o.resting {
			break // it let its grant lapse on purpose, with no one to send away (rest.go)
		}
		silence := o.quorumSilence()
		o.r.n.emit(event.NewQueueQuorumLost(o.r.name, o.r.epoch, silence))
		o.sendSubscribersAway(o.cutOffDetail(silence))
		o.releaseWaiters(o.cutOffDetail(silence))
	case !cut && o.cutOffNoted && o.resting:
		o.cutOffNoted = false // an answer to a resting owner's seldom heartbeat (rest.go)
	case !cut && o.cutOffNoted:
		o.cutOffNoted = false
		o.r.n.emit(event.NewQueueQuorumRegained(o.r.name, o.r.epoch, o.quorumSilence()))
		if o.activeUnsaid && o.r.serving() {
			o.r.n.emit(event.NewQueueActive(o.r.name, o.r.epoch, o.r.inc, o.r.log.LastIndex()))
		}
		// cutOff counts serving owners only, so one that stopped serving
		// meanwhile (a candidate for a newer epoch) lands here without a
		// quorum's answer: it says it serves once that epoch activates.
		o.activeUnsaid = false
		o.pump()
	}
	return cut
}

// cutOffDetail explains a refusal by an owner cut off from its quorum.
func (o *ownerState) cutOffDetail(silence time.Duration) string {
	return fmt.Sprintf("node %d owns queue %s at epoch %d but has heard from no quorum of its replicas for %v: try another node",
		o.r.n.cfg.ID, o.r.name, o.r.epoch, silence.Round(time.Millisecond))
}

// refuseCutOff answers a request for the queue of this owner cut off from
// its quorum: not-owner, naming no owner, since it does not know whether
// another node serves yet. Nothing was done, so the client may retry
// anywhere.
func (o *ownerState) refuseCutOff(conn ConnID, reqID uint64) {
	o.r.n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusNotOwner, Detail: o.cutOffDetail(o.quorumSilence())})
}

// sendSubscribersAway ends every subscription this owner serves, telling
// each subscriber, as a late answer to its subscribe request, that this
// node does not serve the queue now; their leased messages are ready
// again for whoever serves next.
func (o *ownerState) sendSubscribersAway(detail string) {
	for _, s := range o.subs {
		for _, l := range slices.Clone(s.leases) {
			o.release(l, true)
		}
		o.r.n.env.Reply(s.conn, &wire.Reply{ReqID: s.reqID, Status: wire.StatusNotOwner, Detail: detail})
	}
	o.subs = nil
}

// releaseWaiters answers every client waiting for a confirmation that
// its outcome is unknown: fenced, naming no owner.
func (o *ownerState) releaseWaiters(detail string) {
	waiters := o.waiters
	o.waiters = nil
	for _, w := range waiters {
		w.index = 0
		o.answer(w, wire.StatusFenced, 0, detail)
	}
}
