package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
)

// A peer's process dies: its connections reset, and a new connection to
// its port is refused, since nothing listens there any more. The leader,
// verifying the peer since the reset, confirms it down at the refusal
// instead of waiting out the verification's ticks. A refusal with no
// verification under way confirms nothing.
func TestARefusedConnectionConfirmsAResetPeerAtOnce(t *testing.T) {
	c := newCluster(t)
	c.advance(500 * time.Millisecond)
	leader := c.leader()
	peer := leader%3 + 1
	l := c.node(leader)

	l.run(func() { l.n.OnPeerRefused(peer) })
	c.settle()
	if c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader n%d confirmed the live n%d down on a refusal alone; events:\n%v", leader, peer, c.events)
	}

	c.node(peer).crash()
	l.run(func() { l.n.OnDisconnect(peer) })
	l.run(func() { l.n.OnPeerRefused(peer) })
	if !c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader n%d did not confirm n%d down at the refusal that followed its reset; events:\n%v", leader, peer, c.events)
	}
}

// The metadata leader's process dies. A follower verifying it since the
// reset gives up on it at the refusal, and the followers elect a new
// leader without waiting out the verification.
func TestARefusedConnectionEndsAFollowersVerificationOfItsLeader(t *testing.T) {
	c := newCluster(t)
	c.advance(500 * time.Millisecond)
	leader := c.leader()
	c.killSeenByPeers(leader)
	if !c.saw(event.DetectLeaderLost) {
		t.Fatalf("no follower gave up on the dead leader n%d at the refusal; events:\n%v", leader, c.events)
	}
	began := c.now
	for c.leader() == leader || c.leader() == 0 {
		c.advance(time.Millisecond)
		if c.now.Sub(began) > time.Second {
			t.Fatalf("no new leader a second after the refusal; events:\n%v", c.events)
		}
	}
	// The verification alone would have taken three 10 ms ticks, and
	// the campaign a tick and its stagger after.
	if took := c.now.Sub(began); took > 60*time.Millisecond {
		t.Fatalf("a new leader %v after the refusal", took)
	}
}

// killSeenByPeers crashes id and tells every other node what the
// operating system would: the connection to id reset, and a new one was
// refused.
func (c *cluster) killSeenByPeers(id node.NodeID) {
	c.node(id).crash()
	for _, m := range c.nodes {
		if m.id != id {
			m.run(func() {
				m.n.OnDisconnect(id)
				m.n.OnPeerRefused(id)
			})
		}
	}
}
