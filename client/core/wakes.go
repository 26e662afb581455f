package core

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/fifoheap"
)

// A client with many operations outstanding (a producer that publishes
// faster than its node confirms, or one that goes on publishing while its
// queue fails over) would otherwise scan every one of them on each input
// to find its next deadline, and again at each tick to find what is due:
// work that grows with the square of what is outstanding. Instead every
// change to an operation's wake time (an attempt sent or landed, a
// backoff, a hedge given up) files the new time in a queue (fifoheap). An entry goes
// stale when its operation changes again or finishes; stale entries are
// dropped as they reach the front, and the queue is rebuilt from the live
// operations once they are most of it.

// wakeEntry is an operation's wake time as of its gen-th change.
type wakeEntry struct {
	at  time.Time
	op  *operation
	gen uint64
}

// Before orders wake entries by time, then by OpID: the order Tick
// handles due work in (fifoheap.Ordered). Most entries come in that order
// already (an attempt sent now waits the same timeout as the one sent
// before it, and operations are numbered as they start), so they wait in
// the queue's ordered slice; a subscriber acking every delivery files one
// entry per ack, and taking each out of one heap of them all was a
// sixteenth of its CPU.
func (e wakeEntry) Before(o wakeEntry) bool {
	if c := e.at.Compare(o.at); c != 0 {
		return c < 0
	}
	return cmp.Less(e.op.id, o.op.id)
}

// current reports whether e is still op's wake time.
func (e wakeEntry) current() bool {
	return e.gen == e.op.wakeGen && e.op.phase != phaseDone
}

// rewake files op's wake time after a change to it. An operation that is
// done, or resolved and about to be decided on, has none; whatever
// decides it files the next.
//
// A change that leaves the wake time where its entry already waits files
// nothing: the entry stands. Tick files every operation it handled again
// after handling it, and a reply that lands one of two attempts leaves
// the other's deadline as it was; pushing a copy of the same entry each
// time made the queue twice as long, with every copy to skip.
func (c *Client) rewake(op *operation) {
	if op.phase != phaseBackoff && op.phase != phaseAwaiting {
		op.wakeGen++
		op.filed = false
		return
	}
	at := op.wake()
	if op.filed && at.Equal(op.filedAt) {
		return
	}
	op.wakeGen++
	op.filed = false
	if c.wakes.Len() > 2*len(c.live)+64 {
		c.rebuildWakes() // files op too, if it is live
	}
	if !op.filed {
		c.wakes.Push(wakeEntry{at: at, op: op, gen: op.wakeGen})
		op.filed, op.filedAt = true, at
	}
}

// rebuildWakes files every live operation's wake time afresh, dropping
// every stale entry.
func (c *Client) rebuildWakes() {
	var es []wakeEntry
	for _, op := range c.live {
		if op.phase == phaseBackoff || op.phase == phaseAwaiting {
			es = append(es, wakeEntry{at: op.wake(), op: op, gen: op.wakeGen})
			op.filed, op.filedAt = true, es[len(es)-1].at
		}
	}
	// Sorted by their unique keys first, whatever order the map gave, so
	// they all go to the queue's ordered slice.
	slices.SortFunc(es, func(a, b wakeEntry) int {
		if a.Before(b) {
			return -1
		}
		return 1
	})
	c.wakes = fifoheap.Queue[wakeEntry]{}
	for _, e := range es {
		c.wakes.Push(e)
	}
}

// nextWake drops stale entries from the top and returns the earliest
// current one.
func (c *Client) nextWake() (wakeEntry, bool) {
	for {
		e, ok := c.wakes.First()
		if !ok {
			return wakeEntry{}, false
		}
		if e.current() {
			c.checkBetweenInputs(e.op)
			return e, true
		}
		c.wakes.Pop()
	}
}

// popDue takes out every operation due at now, in the order Tick handles
// them.
func (c *Client) popDue(now time.Time) []*operation {
	var due []*operation
	for {
		e, ok := c.nextWake()
		if !ok || e.at.After(now) {
			return due
		}
		c.wakes.Pop()
		e.op.filed = false
		due = append(due, e.op)
	}
}

// checkBetweenInputs panics if op is in a state no input leaves it in.
func (c *Client) checkBetweenInputs(op *operation) {
	switch {
	case op.phase == phaseBackoff && len(op.flights) == 0:
	case op.phase == phaseAwaiting && len(op.flights) > 0:
	default:
		panic(fmt.Sprintf("core: op %d is live in phase %s with %d attempts in flight between inputs", op.id, op.phase, len(op.flights)))
	}
}
