package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower that has accepted nothing from its owner for longer than an
// owner ever stays quiet (the park window, 200ms) holds a client's
// publish rather than sending the client to that owner: the owner is
// most likely stopped, and a plan naming the next one will come. Once the
// owner is heard again the publish goes on to it.
func TestAFollowerHoldsRequestsForASilentOwner(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 2)
	_, followers := roles("orders")
	lagging := followers[1]
	if lagging == c.leader() {
		lagging = followers[0]
	}
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		return !(from == owner && to == lagging || from == lagging && to == owner)
	}
	c.advance(250 * time.Millisecond)
	c.request(lagging, 7, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(10)})
	c.advance(50 * time.Millisecond)
	c.noReply(1)
	c.intercept = nil
	c.advance(100 * time.Millisecond)
	if r := c.mustReply(1, wire.StatusNotOwner); node.NodeID(r.Owner) != owner {
		t.Fatalf("the held publish was sent to %d, the owner is %s", r.Owner, owner)
	}

}
