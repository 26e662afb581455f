package core

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// A client with many operations outstanding (a producer that publishes
// faster than its node confirms, or one that goes on publishing while its
// queue fails over) would otherwise scan every one of them on each input
// to find its next deadline, and again at each tick to find what is due:
// work that grows with the square of what is outstanding. Instead every
// change to an operation's wake time (an attempt sent or landed, a
// backoff, a hedge given up) files the new time in a heap. An entry goes
// stale when its operation changes again or finishes; stale entries are
// dropped as they reach the top, and the heap is rebuilt from the live
// operations once they are most of it.

// wakeEntry is an operation's wake time as of its gen-th change.
type wakeEntry struct {
	at  time.Time
	op  *operation
	gen uint64
}

// wakeBefore orders entries by time, then by OpID: the order Tick handles
// due work in.
func wakeBefore(a, b wakeEntry) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return cmp.Less(a.op.id, b.op.id)
}

// wakeQueue holds the entries in wakeBefore order. Most come in that
// order already: an attempt sent now waits the same timeout as the one
// sent before it, and operations are numbered as they start. Those go to
// the back of fresh, a slice in order, and come out from its head; the
// others (a backoff, a hedge, an operation filed again) wait in a heap,
// back. The earliest entry is the earlier of the two heads. A subscriber
// acking every delivery files one entry per ack, and taking each out of
// one heap of them all was a sixteenth of its CPU.
type wakeQueue struct {
	fresh []wakeEntry // fresh[head:] in wakeBefore order
	head  int
	back  wakeHeap
}

// freshSlack is how many taken entries fresh keeps ahead of its head
// before it moves the rest down.
const freshSlack = 256

func (q *wakeQueue) len() int { return len(q.fresh) - q.head + len(q.back) }

func (q *wakeQueue) push(e wakeEntry) {
	if n := len(q.fresh); n == q.head || wakeBefore(q.fresh[n-1], e) {
		q.fresh = append(q.fresh, e)
		return
	}
	heap.Push(&q.back, e)
}

// first returns the earliest entry, current or stale, and whether it sits
// in fresh.
func (q *wakeQueue) first() (e wakeEntry, inFresh, ok bool) {
	hasFresh, hasBack := q.head < len(q.fresh), len(q.back) > 0
	switch {
	case hasFresh && (!hasBack || wakeBefore(q.fresh[q.head], q.back[0])):
		return q.fresh[q.head], true, true
	case hasBack:
		return q.back[0], false, true
	}
	return wakeEntry{}, false, false
}

// pop removes the entry first returns.
func (q *wakeQueue) pop() {
	if _, inFresh, _ := q.first(); !inFresh {
		heap.Pop(&q.back)
		return
	}
	q.fresh[q.head] = wakeEntry{}
	q.head++
	if q.head == len(q.fresh) {
		q.fresh, q.head = q.fresh[:0], 0
	} else if q.head >= freshSlack && 2*q.head >= len(q.fresh) {
		n := copy(q.fresh, q.fresh[q.head:])
		clear(q.fresh[n:])
		q.fresh, q.head = q.fresh[:n], 0
	}
}

// refill replaces every entry with es, in any order.
func (q *wakeQueue) refill(es []wakeEntry) {
	slices.SortFunc(es, func(a, b wakeEntry) int {
		if wakeBefore(a, b) {
			return -1
		}
		return 1
	})
	clear(q.fresh)
	q.fresh, q.head, q.back = es, 0, q.back[:0]
}

// contains reports whether an entry match accepts is held.
func (q *wakeQueue) contains(match func(wakeEntry) bool) bool {
	return slices.ContainsFunc(q.fresh[q.head:], match) || slices.ContainsFunc(q.back, match)
}

// wakeHeap is a min-heap of entries in wakeBefore order.
type wakeHeap []wakeEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return wakeBefore(h[i], h[j]) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = wakeEntry{}
	*h = old[:len(old)-1]
	return e
}

// current reports whether e is still op's wake time.
func (e wakeEntry) current() bool {
	return e.gen == e.op.wakeGen && e.op.phase != phaseDone
}

// rewake files op's wake time after a change to it. An operation that is
// done, or resolved and about to be decided on, has none; whatever
// decides it files the next.
func (c *Client) rewake(op *operation) {
	op.wakeGen++
	if op.phase != phaseBackoff && op.phase != phaseAwaiting {
		return
	}
	if c.wakes.len() > 2*len(c.live)+64 {
		c.rebuildWakes()
	}
	c.wakes.push(wakeEntry{at: op.wake(), op: op, gen: op.wakeGen})
}

// rebuildWakes files every live operation's wake time afresh, dropping
// every stale entry.
func (c *Client) rebuildWakes() {
	var es []wakeEntry
	for _, op := range c.live {
		if op.phase == phaseBackoff || op.phase == phaseAwaiting {
			es = append(es, wakeEntry{at: op.wake(), op: op, gen: op.wakeGen})
		}
	}
	c.wakes.refill(es) // in order by their unique keys, whatever order the map gave
}

// nextWake drops stale entries from the top and returns the earliest
// current one.
func (c *Client) nextWake() (wakeEntry, bool) {
	for {
		e, _, ok := c.wakes.first()
		if !ok {
			return wakeEntry{}, false
		}
		if e.current() {
			c.checkBetweenInputs(e.op)
			return e, true
		}
		c.wakes.pop()
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
		c.wakes.pop()
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
