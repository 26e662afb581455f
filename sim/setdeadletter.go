package sim

import (
	"math/rand/v2"
	"time"
)

// Dead-letter setting changes. In the seeds with a dead-letter queue the
// first producer also changes, now and then during the safety phase, a
// drawn source queue's delivery limit: it removes the dead-letter queue
// or sets it again with a drawn limit. A move that has begun must finish
// at the queue its record names whatever the setting says by then, and
// the dead-letter checker holds every move to that. The draws come from a
// stream of their own, so seeds without changes draw what they drew
// before changes existed.

// streamDeadLetterChange draws a generated scenario's setting changes
// and, for the changing client, when, which queue and to what.
const streamDeadLetterChange = "dead-letter-change"

// deadLetterChangesFrom is when changes may start: after the queues are
// created and the producers have begun.
const deadLetterChangesFrom = 1500 * time.Millisecond

// maxDeadLetterChanges bounds the changes a scenario file may ask for.
const maxDeadLetterChanges = 1000

// drawDeadLetterChanges draws how many setting changes a generated
// workload with a dead-letter queue makes: none in two of five.
func drawDeadLetterChanges(seed uint64, wl *Workload) {
	if !wl.hasDeadLetterQueue() {
		return
	}
	wl.DeadLetterChanges = pick(newStream(seed, streamDeadLetterChange), 0, 0, 1, 2, 4)
}

// hasDeadLetterQueue reports whether the workload has the dead-letter
// queue the generator adds.
func (wl *Workload) hasDeadLetterQueue() bool {
	for _, q := range wl.Queues {
		if q.Name == deadLetterQueue {
			return true
		}
	}
	return false
}

// scheduleDeadLetterChanges has client c make the workload's changes,
// each at a time drawn over the safety phase, of a drawn source queue: in
// one of three the dead-letter queue is removed, otherwise set with a
// limit of 1 to 3.
func (c *clientProc) scheduleDeadLetterChanges() {
	wl := c.w.sc.Workload
	if !wl.hasDeadLetterQueue() {
		return
	}
	var sources []string
	for _, q := range wl.Queues {
		if q.Name != deadLetterQueue {
			sources = append(sources, q.Name)
		}
	}
	c.scheduleDrawn(streamDeadLetterChange, wl.DeadLetterChanges, deadLetterChangesFrom, func(r *rand.Rand) func() {
		q := sources[r.IntN(len(sources))]
		target, limit := deadLetterQueue, uint32(1+r.IntN(3))
		if r.IntN(3) == 0 {
			target, limit = "", 0
		}
		return func() { c.setDeadLetter(q, target, limit) }
	})
}

// setDeadLetter changes queue's dead-letter setting, unless the run has
// reached its calm phase.
func (c *clientProc) setDeadLetter(queue, target string, limit uint32) {
	if c.w.Live() || c.quiet() {
		return
	}
	id := c.core.SetDeadLetter(c.now(), queue, target, limit)
	c.invoked(id, "set-dead-letter", queue, noID, 0)
	c.flush()
}
