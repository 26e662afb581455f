package sim

import (
	"math/rand/v2"
	"time"
)

// Purges. In a share of the generated scenarios the first producer also
// purges a queue now and then during the safety phase: a purge removes
// every message published before it, so the checkers must excuse those
// from delivery while still holding every later one to it. The times
// and queues are drawn from a stream of their own, so a scenario without
// purges draws exactly what it drew before purges existed, and adding
// them to one moves no other draw.

// streamPurge draws a generated scenario's purge count and, for the
// purging client, when and which queues it purges.
const streamPurge = "purge"

// purgesFrom is when purges may start: after the queues are created and
// the producers have begun.
const purgesFrom = 1500 * time.Millisecond

// maxPurges bounds the purges a scenario file may ask for.
const maxPurges = 1000

// drawPurges draws how many purges a generated scenario's workload makes
// in its safety phase: none in half the seeds.
func drawPurges(seed uint64) int {
	return pick(newStream(seed, streamPurge), 0, 0, 0, 0, 1, 2, 3, 5)
}

// schedulePurges has client c make the workload's purges, each at a time
// drawn over the safety phase, of a drawn queue.
func (c *clientProc) schedulePurges() {
	wl := c.w.sc.Workload
	c.scheduleDrawn(streamPurge, wl.Purges, purgesFrom, func(r *rand.Rand) func() {
		q := wl.Queues[r.IntN(len(wl.Queues))].Name
		return func() { c.purge(q) }
	})
}

// scheduleDrawn schedules count actions of client c, each at a time drawn
// from its own stream over the safety phase after from; draw then draws
// the action's arguments from the same stream and returns it. The draws
// of one kind of action never move another's.
func (c *clientProc) scheduleDrawn(stream string, count int, from time.Duration, draw func(r *rand.Rand) func()) {
	if count <= 0 || c.w.sc.Safety <= from {
		return
	}
	r := newStream(c.w.sc.Seed, stream, uint64(c.index))
	for range count {
		at := from + time.Duration(r.Int64N(int64(c.w.sc.Safety-from)))
		c.w.schedule(at, -1, 0, draw(r))
	}
}

// purge purges queue, unless the run has reached its calm phase: from
// then on every message published must be delivered.
func (c *clientProc) purge(queue string) {
	if c.w.Live() || c.quiet() {
		return
	}
	id := c.core.Purge(c.now(), queue)
	c.invoked(id, "purge", queue, noID, 0)
	c.flush()
}
