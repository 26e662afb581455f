package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// QueueInfo gets the queue's depth from its owner, the counts /status
// shows; a follower sends the client to the owner.
func TestQueueInfoAnswersWithTheOwnersDepth(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	for i := range 3 {
		c.request(owner, 1, &wire.Publish{ReqID: uint64(1 + i), Queue: "orders", ID: msgID(uint64(1 + i)), Payload: []byte("x")})
	}
	c.request(owner, 1, &wire.Publish{ReqID: 4, Queue: "orders", ID: msgID(4), Payload: []byte("later"), Delay: time.Hour})
	c.settle()
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.request(owner, 1, &wire.QueueInfo{ReqID: 20, Queue: "orders"})
	r := c.mustReply(20, wire.StatusOK)
	want := wire.QueueDepth{Ready: 2, Leased: 1, Delayed: 1, Consumers: 1}
	if r.Depth == nil || *r.Depth != want {
		t.Fatalf("the owner's depth: %+v, want %+v", r.Depth, want)
	}
	c.request(followers[0], 1, &wire.QueueInfo{ReqID: 21, Queue: "orders"})
	if r := c.mustReply(21, wire.StatusNotOwner); node.NodeID(r.Owner) != owner || r.Depth != nil {
		t.Fatalf("a follower answered %+v, want a redirect to %s", r, owner)
	}
}
