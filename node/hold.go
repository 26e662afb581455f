package node

import (
	"time"

	"github.com/cairnmq/cairn/bugs"
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
// deliver: no older owner can still serve on its quorum.
const timerOutwait TimerKind = 7

// beginOutwait starts, for an owner its recovery has just activated, the
// wait for an older owner's quorum to go stale (recovery.Core.ServeFrom),
// if from is still ahead on the lease clock, and sets a timer for its end.
// Meanwhile the owner admits publishes, which only it can confirm now,
// and delivers and settles nothing: the older owner may still hand out
// and take back messages of the history it shares. Clients waited out
// the whole wait before: the first publish after a failover was confirmed
// only once it was over, at 100 ms at p95 of 30 SIGKILL trials with a
// backlog of 10,000, most of it this wait.
func (o *ownerState) beginOutwait(from uint64) {
	now := o.r.n.leaseClock()
	if now >= from {
		o.outwaitUntil = 0
		return
	}
	o.outwaitUntil, o.outwaitAdmitted = from, 0
	o.r.n.emit(event.NewQueueActivationOutwaits(o.r.name, o.r.epoch, time.Duration(from-now)))
	o.r.n.env.After(time.Duration(from-now), Timer{Kind: timerOutwait})
}

// outwaiting reports whether this owner still outwaits an older owner's
// quorum: it admits publishes, but delivers and settles nothing yet.
func (o *ownerState) outwaiting() bool { return o.outwaitUntil != 0 }

// delivering reports whether the replica serves its queue in full: an
// owner that no longer outwaits an older one.
func (r *replica) delivering() bool {
	return r.serving() && (!r.own.outwaiting() || bugs.Active(bugs.OutwaitServesClients))
}

// admitClients lets clients in on an owner that has just begun to serve:
// it says so, confirms what its quorum holds, delivers, and sends the
// requests parked for it through the node again. An owner that still
// outwaits an older one lets publishes in only, and says it serves
// (queue.active) once it admits every client.
//
// An owner whose outwait ends while it is cut off from its quorum says
// nothing yet: it was paused or partitioned past the silence limit, so
// its peers may have sealed a newer epoch and activated it meanwhile
// (seed 521082 of the long sweep: paused 2.4 s right after activating,
// it woke to its outwait timer and said it served epoch 4 after epoch 5
// had begun elsewhere). It says so once a quorum accepts its appends
// again (noteCutOff), which no quorum sealed at a newer epoch does.
func (o *ownerState) admitClients() {
	r := o.r
	if !o.outwaiting() {
		if o.noteCutOff() {
			o.activeUnsaid = true
		} else {
			r.n.emit(event.NewQueueActive(r.name, r.epoch, r.inc, r.log.LastIndex()))
		}
	}
	o.updateCommit()
	o.replicate()
	o.pump()
	r.n.checkParked(r.name)
}

// onOutwaitTimer admits every client of the owners whose wait for an
// older owner's quorum is over, and sets the timer again for those whose
// lease clock, which may run slower than the timers', is not there yet.
func (n *Node) onOutwaitTimer() {
	now := n.leaseClock()
	var next uint64
	for _, name := range n.names {
		r := n.queues[name]
		switch {
		case r.own == nil || !r.own.outwaiting():
		case now < r.own.outwaitUntil:
			if next == 0 || r.own.outwaitUntil < next {
				next = r.own.outwaitUntil
			}
		default:
			r.own.outwaitUntil = 0
			if r.serving() {
				n.emit(event.NewQueueOutwaited(name, r.epoch, r.own.outwaitAdmitted))
				r.own.admitClients()
			}
		}
	}
	if next != 0 {
		n.env.After(time.Duration(next-now), Timer{Kind: timerOutwait})
	}
}
