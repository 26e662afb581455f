package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// A follower cut off from everyone times out and campaigns again and
// again. When it comes back, PreVote and the leader's lease keep it from
// deposing a leader the others still hear: no new term, no new leader.
func TestAReturningFollowerDoesNotDisruptTheLeader(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	before := c.leaderships()
	var follower = lead%3 + 1
	c.cut[follower] = true
	c.advance(3 * time.Second)
	if !c.saw(event.MetaCampaign, by(follower)) {
		t.Fatalf("the cut-off follower %s never campaigned; events:\n%v", follower, c.events)
	}
	delete(c.cut, follower)
	c.advance(2 * time.Second)
	if c.leaderships() != before || c.leader() != lead {
		t.Fatalf("the follower's return changed leadership: leader %s -> %s, %d new announcements", lead, c.leader(), c.leaderships()-before)
	}
	// And the cluster still works through it.
	owner := c.createQueue("orders", wire.PolicyAll)
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1)})
	c.settle()
	c.mustReply(1, wire.StatusOK)
}

// Losing the leader elects another, without any node ever ticking raft
// as a follower: the election timer is the node's own.
func TestALostLeaderIsReplaced(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	c.node(lead).crash()
	c.advance(3 * time.Second)
	if next := c.leader(); next == lead {
		t.Fatalf("no new leader after %s crashed; events:\n%v", lead, c.events)
	}
	c.node(lead).start()
	c.advance(2 * time.Second)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1)})
	c.settle()
	c.mustReply(1, wire.StatusOK)
}
