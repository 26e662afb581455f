package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Under steady publishing, each replica's base of the next checkpoint
// waits while a build runs, then catches up with what it missed. It must
// catch up a share a tick, not in one step twice the size of all it
// missed: that step held every replica's loop 30-58 ms at once after
// each build at 17,000 msg/s, and pipelined publishes waited up to 400 ms.
func TestABaseHeldByABuildCatchesUpAShareATick(t *testing.T) {
	const tick = 10 * time.Millisecond
	const perTick = 600
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: tick, CheckpointRecords: 6_000})
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	f := c.node(followers[0])
	next := uint64(1)
	publish := func(n, size int) {
		from := next
		for range n {
			c.request(owner, 1, &wire.Publish{ReqID: next, Queue: "orders", ID: msgID(next), Payload: make([]byte, size)})
			next++
		}
		c.settle()
		for i := from; i < next; i++ {
			c.mustReply(i, wire.StatusOK)
		}
	}
	// A backlog whose payloads a build encodes over three ticks (8 MiB a
	// tick), while the base waits and the log grows perTick a tick.
	publish(17_000, 1024)
	c.advance(200 * time.Millisecond)
	rolled := func() uint64 {
		fromTail, fromLog := node.BaseRolls(f.n, "orders")
		return fromTail + fromLog
	}
	last := rolled()
	biggest, waited := uint64(0), 0
	for range 200 {
		publish(perTick, 16)
		c.advance(tick)
		step := rolled() - last
		last += step
		if step == 0 {
			waited++
		}
		biggest = max(biggest, step)
	}
	if waited == 0 {
		t.Fatalf("%s's base never waited for a build: the story does not reach the step it is about", f.id)
	}
	// A tick's step is twice what the tick brought, or a quarter of what
	// the base lacks if that is more: here, never more than 2*perTick.
	if biggest > 2*perTick {
		t.Fatalf("%s's base rolled %d records in one tick after waiting for a build (it waited %d ticks in all), want at most %d", f.id, biggest, waited, 2*perTick)
	}
}
