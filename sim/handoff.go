package sim

import (
	"math/rand/v2"
	"time"
)

// Owner moves. In a share of the generated scenarios the first producer
// also asks, now and then during the safety phase, for a queue's owner to
// hand it over to a drawn node, as an operator draining a machine does.
// The node may be the owner already (answered at once) or hold no replica
// (refused); otherwise the owner drains its consumers, parks publishes,
// and the metadata names the node, which recovers the queue. Faults go on
// meanwhile, so a crash or partition can strike any phase of a handoff.
// The draws come from a stream of their own: a scenario without moves
// draws exactly what it drew before moves existed.

// streamMoveOwner draws a generated scenario's move count and, for the
// moving client, when, which queue, to which node and with what drain
// bound.
const streamMoveOwner = "move-owner"

// movesFrom is when moves may start: after the queues are created and the
// producers have begun.
const movesFrom = 1500 * time.Millisecond

// maxMoves bounds the moves a scenario file may ask for.
const maxMoves = 1000

// drawMoves draws how many owner moves a generated scenario's workload
// asks for in its safety phase: none in three seeds of eight, 2 to 12 in
// the others.
func drawMoves(seed uint64) int {
	return pick(newStream(seed, streamMoveOwner), 0, 0, 0, 2, 4, 6, 8, 12)
}

// scheduleMoves has client c ask for the workload's moves, each at a time
// drawn over the safety phase, of a drawn queue to a drawn node, with a
// drain bound drawn from none (the node's default) to a second.
func (c *clientProc) scheduleMoves() {
	wl := c.w.sc.Workload
	c.scheduleDrawn(streamMoveOwner, wl.Moves, movesFrom, func(r *rand.Rand) func() {
		q := wl.Queues[r.IntN(len(wl.Queues))].Name
		to := uint32(1 + r.IntN(c.w.sc.Nodes))
		drain := time.Duration(pick(r, 0, 20, 100, 1000)) * time.Millisecond
		return func() { c.moveOwner(q, to, drain) }
	})
}

// moveOwner asks for queue's owner to hand it to node to, unless the run
// has reached its calm phase, which starts no new change.
func (c *clientProc) moveOwner(queue string, to uint32, drain time.Duration) {
	if c.w.Live() || c.quiet() {
		return
	}
	id := c.core.MoveOwner(c.now(), queue, to, drain)
	c.invoked(id, "move-owner", queue, noID, 0)
	c.flush()
}
