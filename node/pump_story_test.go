package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A subscriber with a wide window on a queue with a backlog is not handed
// the whole window in the handler that subscribed it: a pump hands out
// at most node.PumpTurnMax deliveries, and the rest go out at the end of
// each turn, after whatever arrived meanwhile (a new owner's first syncs,
// the publishes waiting for it). Every message is still delivered once,
// in order.
func TestAWideWindowIsFilledATurnAtATime(t *testing.T) {
	const backlog = 3*node.PumpTurnMax + 10
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	pubs := make([]wire.Message, backlog)
	for i := range pubs {
		pubs[i] = &wire.Publish{ReqID: uint64(100 + i), Queue: "orders", ID: msgID(uint64(i + 1)), Payload: []byte("job")}
	}
	c.requestTurn(owner, 1, pubs...)
	c.settle()
	for i := range pubs {
		c.mustReply(uint64(100+i), wire.StatusOK)
	}

	const consumer node.ConnID = 5
	m := c.node(owner)
	m.run(func() {
		m.n.OnClient(consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1000, Lease: time.Minute})
	})
	first := c.deliveries(consumer)
	if len(first) != node.PumpTurnMax {
		t.Fatalf("the subscribing handler handed out %d deliveries, want %d", len(first), node.PumpTurnMax)
	}
	// The ends of the turns that follow, each armed by the one before,
	// hand out the rest.
	c.settle()
	all := append(first, c.deliveries(consumer)...)
	if len(all) != backlog {
		t.Fatalf("%d of the %d messages were delivered", len(all), backlog)
	}
	for i, d := range all {
		if d.ID != msgID(uint64(i+1)) || d.Attempt != 1 {
			t.Fatalf("delivery %d is %v attempt %d, want %v attempt 1", i, d.ID, d.Attempt, msgID(uint64(i+1)))
		}
	}
}
