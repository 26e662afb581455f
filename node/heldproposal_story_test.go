package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower forwards a proposal to a leader that is handing its
// leadership away: raft drops proposals until the transfer ends, so the
// leader holds the forwarded entry and, once the new leader is known,
// passes it on. The create it carried commits once the transfer ends,
// not after its proposer's timeout.
func TestAProposalForwardedDuringALeadershipTransferCommitsOnceItEnds(t *testing.T) {
	c, leader, followers := warmCluster(t)
	follower := followers[0]
	// The leader's raft messages stop reaching its peers, so the transfer
	// a drain starts stays under way while the follower forwards.
	holding := true
	c.intercept = func(from, _ node.NodeID, msg wire.Message) bool {
		_, isRaft := msg.(*wire.Raft)
		return !(holding && from == leader && isRaft)
	}
	m := c.node(leader)
	m.run(func() { m.n.DrainOwned(time.Second) })
	c.settle()
	c.request(follower, 7, &wire.CreateQueue{ReqID: 7, Queue: "orders", Policy: wire.PolicyMajority})
	c.settle()
	c.noReply(7)

	holding = false
	// The transfer ends within raft's election window (500 ms here), by
	// the new leader's election or by the old leader giving it up; the
	// proposer's own timeout is 2 s away.
	c.advance(time.Second)
	c.mustReply(7, wire.StatusOK)
}

// A draining leader hands its leadership to a voter it can reach. The
// voter just lost (its connection reset, the metadata not yet told) is as
// caught up as the live one, and the leader would pick it on a tie; a
// transfer to it would fail, and a draining leader tries only once.
func TestADrainingLeaderHandsItsLeadershipToAVoterItCanReach(t *testing.T) {
	c, leader, followers := warmCluster(t)
	lost := followers[len(followers)-1] // the later voter wins a tie
	c.node(lost).crash()
	c.resetPeers(lost)
	m := c.node(leader)
	m.run(func() { m.n.DrainOwned(time.Second) })
	c.advance(300 * time.Millisecond)
	if now := c.leader(); now == leader || now == lost {
		t.Fatalf("the leadership is with n%d, not with the voter the draining n%d can reach", now, leader)
	}
}

// warmCluster starts a three-node cluster with one queue made, and
// returns its metadata leader and the other members in ID order.
func warmCluster(t *testing.T) (*cluster, node.NodeID, []node.NodeID) {
	c := newCluster(t)
	c.createQueue("warm", wire.PolicyMajority)
	leader := c.leader()
	return c, leader, othersThan(leader)
}
