package node

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// lease is an owner-local claim on a delivered message: until it expires,
// is settled or is given back, no one else gets the message. Leases are
// not replicated; after an owner restart every unsettled message is ready
// again, which at-least-once delivery allows.
type lease struct {
	id      uint64
	msg     *message
	sub     *subscription
	granted time.Time
	expires time.Time
	// extended says a consumer asked for the lease to last longer: it is
	// working on the message, so the lease outlasts an unsubscribe.
	extended bool
}

// firstLease is where a process numbers its leases from. A nack or an
// extension names its lease by number alone, and a consumer may send one
// long after the lease was granted: its retries outlive an owner's
// restart or failover. Numbered from 1 in every process, a stale nack of
// lease 2 from the last process matched the lease 2 this one had just
// granted another consumer for the same message, and gave it back while
// that consumer held it extended (seed 139582 of the long sweep). So
// each process starts at a random point of a 63-bit space: two
// processes' ranges meet only if their starts lie closer than the number
// of deliveries between them.
func firstLease(process uint64) uint64 {
	if bugs.Active(bugs.LeaseNumbersRestart) {
		return 0 // planted: every process numbers its leases from 1
	}
	return process >> 1
}

func (o *ownerState) subscribe(conn ConnID, reqID uint64, window uint32, leaseFor time.Duration) {
	for _, s := range o.subs {
		if s.conn == conn {
			// A subscribe again on the same connection (the client
			// confirms its subscription every few seconds) is not a word
			// about the deliveries: a consumer whose handlers are stuck
			// still sends it, and stays held back. One that unsubscribed
			// while it held extended leases takes deliveries again.
			s.window, s.leaseFor, s.reqID, s.closed = window, leaseFor, reqID, false
			return
		}
	}
	now := o.r.n.env.Now()
	o.subs = append(o.subs, &subscription{conn: conn, reqID: reqID, queue: o.r.name, window: window, leaseFor: leaseFor, heard: now})
}

// pumpTurnMax bounds the deliveries one pump hands out; the rest go out
// at the end of the turn (pumpSoon), after the events that arrived
// meanwhile. A new owner whose fresh subscriber has a window of 512 used
// to hand out all 512 in the handler that activated it: its first log
// syncs and the publishes waiting for it were handled only after that
// burst (its first sync 8 ms after activation in a debug-logged trial
// with a backlog of 10,000). With the bound, the first new publish came
// 4 ms after activation at the median of 30 such trials at info level,
// against 16 ms without it.
const pumpTurnMax = 64

// pump hands ready, confirmed messages to subscribers with room, one per
// subscriber per round, starting the rounds at a rotating subscriber, at
// most pumpTurnMax of them.
func (o *ownerState) pump() {
	if o.handoff != nil {
		// A handing-off owner hands out nothing more once it drains: its
		// consumers finish what they hold, and the next owner delivers
		// the rest.
		o.advanceHandoff()
		if h := o.handoff; h != nil && !h.preparing {
			return
		}
	}
	o.pruneClosed()
	if !o.r.delivering() || len(o.subs) == 0 || !o.leaseValid() {
		return
	}
	o.endHoldIfDue()
	now := o.r.n.env.Now()
	_, limit := o.deliveryLimit()
	handed := 0
	for {
		progressed := false
		for i := range o.subs {
			s := o.subs[(o.rr+i)%len(o.subs)]
			if s.room(now) == 0 {
				continue
			}
			if handed == pumpTurnMax {
				o.pumpSoon()
				return
			}
			m := o.nextReady()
			if m == nil {
				return
			}
			o.state.popReady()
			progressed = true
			if limit > 0 && m.attempts >= limit {
				// An owner before this one sent it its last time, and its
				// count came with the recovery: it moves rather than go out
				// once more.
				o.deadLetter(m)
				continue
			}
			o.deliver(s, m)
			o.noteDelivered(m)
			handed++
		}
		o.rr++
		if !progressed {
			return
		}
	}
}

func (o *ownerState) deliver(s *subscription, m *message) {
	n := o.r.n
	n.leaseSeq++
	now := n.env.Now()
	l := &lease{id: n.leaseSeq, msg: m, sub: s, granted: now, expires: now.Add(s.leaseFor)}
	m.lease = l
	m.attempts++
	s.leases = append(s.leases, l)
	n.env.Reply(s.conn, &wire.Delivery{Queue: o.r.name, ID: m.id, Lease: l.id, Attempt: m.attempts, Payload: m.payload})
	n.emit(event.NewQueueDeliver(o.r.name, m.id.String(), l.id))
}

// release ends a lease. With requeue the message is ready again (a nack,
// an expiry, a lost subscriber); without, it is being settled.
func (o *ownerState) release(l *lease, requeue bool) {
	s := l.sub
	// Acks come mostly in delivery order, so the lease is found near the
	// front; DeleteFunc looked at every lease of the window for each ack,
	// 6% of an owner's CPU in cairn-bench drain with a window of 512.
	if i := slices.Index(s.leases, l); i >= 0 {
		s.leases = slices.Delete(s.leases, i, i+1)
	}
	m := l.msg
	m.lease = nil
	if requeue && o.state.messages[m.id] == m {
		o.state.pushReady(m)
	}
	if o.handoff != nil {
		// The last lease out may have ended the drain: the handoff moves
		// on at the end of the turn, not in the middle of whatever loop
		// released the lease.
		o.r.n.scheduleFlush()
	}
}

// giveUp ends a lease whose consumer did not settle its message: a
// nack, an expiry, a consumer gone. The message is ready again, or, if
// it has used up its queue's delivery limit, moves to the dead-letter
// queue. Leases this owner ends for reasons of its own (stepping back,
// recovering) are released instead: they say nothing of the message.
func (o *ownerState) giveUp(l *lease) {
	m := l.msg
	if o.state.messages[m.id] != m || !o.deadLetterDue(m) {
		o.release(l, true)
		return
	}
	o.release(l, false)
	o.deadLetter(m)
}

// expireLeases gives up every lease that ran out, and holds back the
// subscriptions that let one run out in silence.
func (o *ownerState) expireLeases(now time.Time) {
	for _, s := range o.subs {
		var latest time.Time
		lapsed := false
		for _, l := range slices.Clone(s.leases) {
			if !now.Before(l.expires) {
				lapsed = true
				if l.granted.After(latest) {
					latest = l.granted
				}
				o.giveUp(l)
			}
		}
		if lapsed {
			o.noteQuietLapse(s, latest, now)
		}
	}
}

// releaseLeases makes every leased message ready again; the
// subscriptions stay.
func (o *ownerState) releaseLeases() {
	for _, s := range o.subs {
		for _, l := range slices.Clone(s.leases) {
			o.release(l, true)
		}
	}
}

// dropConnection ends the connection's subscriptions and releases their
// leases. A consumer lost while it held them (lost is set) may have died
// of what it was handed, so each counts toward its message's delivery
// limit; one that unsubscribed handed them back unworked, and they go
// back as they were, except those whose lease it extended: a consumer
// (or a gateway such as the SQS endpoint, for a client of another node's)
// asked for time to work on them, and they stay leased, in a closed
// subscription, until settled, handed back or run out.
func (r *replica) dropConnection(conn ConnID, lost bool) {
	o := r.own
	for _, s := range o.subs {
		if s.conn != conn {
			continue
		}
		for _, l := range slices.Clone(s.leases) {
			switch {
			case lost:
				o.giveUp(l)
			case l.extended && !bugs.Active(bugs.UnsubscribeDropsExtended):
				s.closed = true
			default:
				l.msg.attempts-- // handed back unworked: the delivery does not count
				o.noteDelivered(l.msg)
				o.release(l, true)
			}
		}
	}
	o.subs = slices.DeleteFunc(o.subs, func(s *subscription) bool { return s.conn == conn && (lost || len(s.leases) == 0) })
	o.pump()
}

// pruneClosed drops the closed subscriptions that hold no lease any more.
func (o *ownerState) pruneClosed() {
	o.subs = slices.DeleteFunc(o.subs, func(s *subscription) bool { return s.closed && len(s.leases) == 0 })
}

// promoteDue appends a promote record when delayed messages have come due
// on the owner's clock. The record carries the clock boundary, so every
// replay releases exactly the same messages.
func (o *ownerState) promoteDue(now time.Time) {
	due, ok := o.state.nextDue()
	if ok && due <= now.UnixNano() {
		o.append(record{typ: recordPromote, until: now.UnixNano()})
	}
}
