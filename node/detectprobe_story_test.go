package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// ordersApartFromLeader creates the queue orders with three confirmed
// messages and returns the metadata leader and the queue's owner, which
// the stories need to be two nodes.
func ordersApartFromLeader(t *testing.T, c *cluster) (leader, owner node.NodeID) {
	t.Helper()
	owner = c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	leader = c.leader()
	if leader == owner {
		t.Fatal("the story needs an owner that does not lead the metadata")
	}
	return leader, owner
}

// cutLeaderFromOwner has the story's cluster drop every message between
// the metadata leader and the owner of a fresh queue, both ways; the
// third node still talks to both. It returns the two.
func cutLeaderFromOwner(t *testing.T, c *cluster) (leader, owner node.NodeID) {
	t.Helper()
	leader, owner = ordersApartFromLeader(t, c)
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		return !(from == owner && to == leader || from == leader && to == owner)
	}
	return leader, owner
}

// The link between the metadata leader and a queue's owner stalls for
// 350 ms, past heartbeat detection's 300 ms grace, while the third node
// hears the owner as always. The leader asks that node to ping the owner
// for it, hears through it that the owner lives, and counts the silence
// afresh; the link comes back before a second silence ends, and the
// owner keeps its queue. Judged by its own link alone, the leader
// confirmed the live owner down and moved the queue away.
func TestALeaderWhoseLinkToTheOwnerStallsHearsItThroughAnother(t *testing.T) {
	c := newCluster(t)
	leader, owner := cutLeaderFromOwner(t, c)
	c.advance(350 * time.Millisecond)
	c.intercept = nil
	c.advance(500 * time.Millisecond)
	if !c.saw(event.DetectVouched, by(leader)) {
		t.Fatalf("no node vouched for %s to the leader %s; events:\n%v", owner, leader, c.events)
	}
	if c.saw(event.DetectConfirm, by(leader)) || c.saw(event.MetaPlanRecovery) {
		t.Fatalf("the leader confirmed the live owner %s down over its own stalled link; events:\n%v", owner, c.events)
	}
}

// The same link is cut for good. A node the leader cannot reach cannot
// follow the metadata either, so another node's word buys the owner one
// silence, not more: the leader confirms it down once its own link has
// stayed silent through a second verification, with no second vouch.
func TestAnOwnerCutFromTheLeaderAloneIsConfirmedDownOneSilenceLater(t *testing.T) {
	c := newCluster(t)
	leader, owner := cutLeaderFromOwner(t, c)
	cutAt := c.now
	c.advance(time.Second)
	confirm, ok := c.last(event.DetectConfirm)
	if !ok || confirm.node != leader || confirm.Node() != uint32(owner) {
		t.Fatalf("the leader %s never confirmed the owner %s down; events:\n%v", leader, owner, c.events)
	}
	vouches := 0
	for _, e := range c.emitted {
		if e.Name == event.DetectVouched && e.at.Before(confirm.at) {
			vouches++
		}
	}
	if vouches != 1 {
		t.Fatalf("%d vouches before the confirmation, want the one; events:\n%v", vouches, c.events)
	}
	// Heartbeat detection confirms a silent peer 310-345 ms after its
	// first unanswered ping; the vouch comes half a grace in, so the
	// confirmation lands a little over 135 ms later than that.
	if took := confirm.at.Sub(cutAt); took < 400*time.Millisecond || took > 560*time.Millisecond {
		t.Fatalf("the owner was confirmed down %v after the cut, want 400-560ms", took)
	}
}

// Every link of the metadata leader stalls for 350 ms, past heartbeat
// detection's grace. Its verifications of both peers fail, and no probe
// gets through either; but it has heard from no peer at all meanwhile,
// so it takes the silence for its own and verifies on rather than
// confirming anyone down. When the links come back, both peers answer,
// and no queue moved. Before, it confirmed the live owner down, and the
// plan committed once the links were back.
func TestALeaderThatHearsNoPeerConfirmsNoneDown(t *testing.T) {
	c := newCluster(t)
	leader, _ := ordersApartFromLeader(t, c)
	c.intercept = func(from, to node.NodeID, m wire.Message) bool { return from != leader && to != leader }
	c.advance(350 * time.Millisecond)
	c.intercept = nil
	c.advance(500 * time.Millisecond)
	if !c.saw(event.DetectSuspect, by(leader)) {
		t.Fatalf("the leader %s suspected no one while cut off; events:\n%v", leader, c.events)
	}
	if c.saw(event.DetectConfirm, by(leader)) || c.saw(event.MetaPlanRecovery) {
		t.Fatalf("the leader %s, hearing no peer, confirmed one down; events:\n%v", leader, c.events)
	}
}
