package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// TestIdleQueuesHeartbeatLessThanEveryTick: a node owning many idle
// queues sends each follower one empty append a tick (which tells the
// follower's node it is alive), and the other queues' only once their
// grant ages past a quarter of the silence limits, not one per queue per
// tick: with thousands of queues, per-tick heartbeats were most of an idle
// node's work.
func TestIdleQueuesHeartbeatLessThanEveryTick(t *testing.T) {
	c := newCluster(t)
	var names []string
	var owner, follower node.NodeID
	for i := 0; len(names) < 4; i++ {
		name := fmt.Sprintf("idle-%d", i)
		o, f := roles(name)
		if len(names) == 0 {
			owner, follower = o, f[0]
		}
		if o == owner && (f[0] == follower || f[1] == follower) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		c.createQueue(name, wire.PolicyMajority)
	}
	c.advance(time.Second) // every queue settled and idle
	heartbeats := map[string]int{}
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if a, ok := msg.(*wire.Append); ok && from == owner && to == follower && len(a.Entries) == 0 {
			heartbeats[a.Queue]++
		}
		return true
	}
	const span = time.Second
	c.advance(span)
	ticks := int(span / c.cfg.Tick)
	total := 0
	for _, name := range names {
		if heartbeats[name] == 0 {
			t.Fatalf("queue %s sent no heartbeat in %v: %v", name, span, heartbeats)
		}
		total += heartbeats[name]
	}
	if total < ticks {
		t.Fatalf("the follower heard %d heartbeats in %d ticks (%v): appends are its evidence that the owner's node lives, one a tick",
			total, ticks, heartbeats)
	}
	// One a tick for the peer, and every second tick for each other queue:
	// a quarter of the 60 ms silence limit is 15 ms, which the tick rounds
	// up to 20 ms.
	if limit := ticks + (len(names)-1)*ticks/2; total > limit {
		t.Fatalf("%d idle queues sent %d heartbeats to one follower in %d ticks (%v), want at most %d",
			len(names), total, ticks, heartbeats, limit)
	}
}
