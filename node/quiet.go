package node

import (
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
)

// A consumer whose host dies without a word (power lost, kernel hung, cut
// off for good) leaves its connection open on the owner: nothing resets
// it until the client idle timeout, minutes later. Before, the owner went
// on handing that subscription a full window of messages, each held
// until its lease ran out, then handed the same messages to it again, so
// part of the queue waited lease after lease for no one.
//
// So a subscription whose leases run out while its connection has said
// nothing about them since they were handed out (no settle, nack or
// extension; a client's periodic subscribe again does not count) is held
// back: it takes one delivery at a time, and each further lease that
// runs out unanswered keeps it from taking any for a pause, one lease
// long at first and doubling each time, up to quietPauseSteps doublings.
// The first word from the connection ends it. A consumer alive but too
// slow for its lease gets the same treatment, which is what it needs: the
// messages it cannot take in time go to the others. A live consumer that
// never answers because nothing reached it waits at most one longest
// pause and a lease for its next delivery, so no subscriber is held back
// for good.

// quietPauseSteps is how many times the pause doubles from one lease.
const quietPauseSteps = 3

// quietPause is how long a subscription held back after quiet unanswered
// leases in a row takes no delivery: none after the first, so a lone
// consumer that merely let one lease run out has it again at once.
func quietPause(leaseFor time.Duration, quiet int) time.Duration {
	if quiet < 2 {
		return 0
	}
	return leaseFor << min(quiet-2, quietPauseSteps)
}

// room is how many more deliveries s may take now.
func (s *subscription) room(now time.Time) int {
	if s.closed {
		return 0
	}
	window := int(s.window)
	if s.quiet > 0 && !bugs.Active(bugs.QuietSubscriberFed) {
		window = 1 // held back: one delivery at a time, once the pause is over
		if now.Before(s.resumeAt) {
			window = 0
		}
	}
	return max(window-len(s.leases), 0)
}

// heardFrom notes that conn spoke about this queue: its subscription, if
// held back, takes deliveries again.
func (o *ownerState) heardFrom(conn ConnID) {
	now := o.r.n.env.Now()
	for _, s := range o.subs {
		if s.conn != conn {
			continue
		}
		s.heard = now
		if s.quiet > 0 {
			s.quiet, s.resumeAt = 0, time.Time{}
			o.r.n.emit(event.NewQueueSubscriberHeard(o.r.name, uint64(conn)))
			o.pumpSoon()
		}
	}
}

// noteQuietLapse holds s back after one or more of its leases ran out at
// now, the newest of them handed out at latest, if its connection said
// nothing since then. A consumer that spoke since has handled something
// and may yet settle the rest; one that did not let a whole lease pass in
// silence.
func (o *ownerState) noteQuietLapse(s *subscription, latest, now time.Time) {
	if s.heard.After(latest) {
		return
	}
	s.quiet++
	pause := quietPause(s.leaseFor, s.quiet)
	s.resumeAt = now.Add(pause)
	o.r.n.emit(event.NewQueueSubscriberQuiet(o.r.name, uint64(s.conn), s.quiet, pause))
}
