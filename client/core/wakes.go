package core

import (
	"cmp"
	"container/heap"
	"fmt"
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

// wakeHeap orders entries by time, then by OpID: the order Tick handles
// due work in.
type wakeHeap []wakeEntry

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return cmp.Less(h[i].op.id, h[j].op.id)
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(wakeEntry)) }
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
	if len(c.wakes) > 2*len(c.live)+64 {
		c.rebuildWakes()
	}
	heap.Push(&c.wakes, wakeEntry{at: op.wake(), op: op, gen: op.wakeGen})
}

// rebuildWakes files every live operation's wake time afresh, dropping
// every stale entry.
func (c *Client) rebuildWakes() {
	c.wakes = c.wakes[:0]
	for _, op := range c.live {
		if op.phase == phaseBackoff || op.phase == phaseAwaiting {
			c.wakes = append(c.wakes, wakeEntry{at: op.wake(), op: op, gen: op.wakeGen})
		}
	}
	heap.Init(&c.wakes)
}

// nextWake drops stale entries from the top and returns the earliest
// current one.
func (c *Client) nextWake() (wakeEntry, bool) {
	for len(c.wakes) > 0 {
		e := c.wakes[0]
		if e.current() {
			c.checkBetweenInputs(e.op)
			return e, true
		}
		heap.Pop(&c.wakes)
	}
	return wakeEntry{}, false
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
		heap.Pop(&c.wakes)
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
