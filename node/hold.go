package node

import (
	"time"

	"github.com/cairnmq/cairn/event"
)

// timerHold fires when a recovered owner's hold on the messages of the
// history it recovered runs out.
const timerHold TimerKind = 6

// holdBack is a recovered owner's restraint on the history it took over.
// Until the old owner's delivery lease has surely run out (until, on the
// lease clock), the old owner may still hand out any message that was
// ready in its epoch, so the new owner delivers none of them: nothing
// that became ready at or before through (the recovery's marker) goes
// out. Messages are delivered in the order they became ready, so what is
// published in the new epoch waits behind them; with nothing left from
// the old epoch it goes out at once.
type holdBack struct {
	until   uint64
	through uint64
}

// startHold begins the hold after a recovery activated this owner, and
// sets a timer for its end, so the held messages go out the moment they
// may rather than at the next tick.
func (o *ownerState) startHold(until, through uint64) {
	now := o.r.n.leaseClock()
	if until <= now {
		return
	}
	o.hold = holdBack{until: until, through: through}
	o.r.n.env.After(time.Duration(until-now), Timer{Kind: timerHold})
}

// nextReady returns the next message the owner may deliver, or nil.
func (o *ownerState) nextReady() *message {
	m := o.state.peekReady()
	if m == nil || m.key.at > o.commit {
		return nil // the next ready message is not confirmed yet
	}
	if o.hold.until != 0 && m.key.at <= o.hold.through {
		return nil // the old owner may still be handing it out
	}
	return m
}

// holdOver reports whether the hold is over, or there was none: the old
// owner's lease has surely run out.
func (o *ownerState) holdOver() bool {
	return o.hold.until == 0 || o.r.n.leaseClock() >= o.hold.until
}

// endHoldIfDue ends the hold once the lease clock has passed its end.
func (o *ownerState) endHoldIfDue() {
	if o.hold.until != 0 && o.r.n.leaseClock() >= o.hold.until {
		o.endHold()
	}
}

// endHold lets the held messages go: the old owner's lease has run out,
// or the old owner said it stopped.
func (o *ownerState) endHold() {
	o.r.n.emit(event.NewQueueHoldEnded(o.r.name, o.r.epoch, len(o.state.messages)))
	o.hold = holdBack{}
	o.runHeldPurges()
}

// onHoldTimer lets every owner whose hold has run out deliver.
func (n *Node) onHoldTimer() {
	for _, name := range n.names {
		if r := n.queues[name]; r.own != nil && r.own.hold.until != 0 {
			r.own.endHoldIfDue()
			r.own.pump()
		}
	}
}

// timerOutwait fires when a recovered owner the metadata activated may
// serve: no older owner can still serve on its quorum.
const timerOutwait TimerKind = 7

// outwaitGrants reports whether this candidate, which the metadata
// activated and whose own quorum is fresh, must still wait for an older
// owner's quorum to go stale before it serves (recovery.Core.ServeFrom).
// The first time it must, it reports so and sets a timer for the end of
// the wait, which reconciles the queue again.
func (o *ownerState) outwaitGrants() bool {
	from := o.recovery.ServeFrom()
	now := o.r.n.leaseClock()
	if now >= from {
		o.outwaitUntil = 0
		return false
	}
	if o.outwaitUntil != from {
		o.outwaitUntil = from
		o.r.n.emit(event.NewQueueActivationOutwaits(o.r.name, o.r.epoch, time.Duration(from-now)))
		o.r.n.env.After(time.Duration(from-now), Timer{Kind: timerOutwait})
	}
	return true
}

// onOutwaitTimer finishes the recoveries whose wait for an older owner's
// quorum is over.
func (n *Node) onOutwaitTimer() {
	for _, name := range n.names {
		if r := n.queues[name]; r.own != nil && r.own.outwaitUntil != 0 && n.leaseClock() >= r.own.outwaitUntil {
			n.reconcile(name)
		}
	}
}
