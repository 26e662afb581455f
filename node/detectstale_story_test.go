package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A node that answered pings just before it died can have those answers
// reach the leader after its connection reset, and even after the
// leader confirmed it down: they were slow on the way. Such an answer
// proves nothing about the node now. Seed 283854 of the long sweep: n2
// crashed, the leader confirmed it down, and a pong n2 had sent before
// the crash arrived 50 ms later; the leader took it for a recovery,
// proposed n2 up, and confirmed it down again only after a whole
// silence, so n2's replicas were replaced half a second late.
//
// The story holds the peer's answers to the leader's pings, crashes the
// peer (its connections reset), waits for the leader to confirm it down,
// and then hands the leader the answers the dead process sent.
func TestAnAnswerSentBeforeAResetDoesNotBringAConfirmedPeerBack(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	peer := leader%3 + 1

	var held []*wire.Pong
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		if p, ok := m.(*wire.Pong); ok && from == peer && to == leader {
			held = append(held, p)
			return false
		}
		return true
	}
	for start := c.now; len(held) == 0; {
		c.advance(10 * time.Millisecond)
		if c.now.Sub(start) > 2*time.Second {
			t.Fatalf("n%d answered no ping of the leader n%d for two seconds", peer, leader)
		}
	}
	c.node(peer).crash()
	for _, m := range c.nodes {
		if m.id != peer {
			m.run(func() { m.n.OnDisconnect(peer) })
		}
	}
	for start := c.now; !c.saw(event.DetectConfirm, by(leader)); {
		c.advance(10 * time.Millisecond)
		if c.now.Sub(start) > 5*time.Second {
			t.Fatalf("the leader n%d did not confirm the crashed n%d down; events:\n%v", leader, peer, c.events)
		}
	}
	c.advance(100 * time.Millisecond) // the entry that records it down applies

	l := c.node(leader)
	for _, p := range held {
		l.run(func() { l.n.OnMessage(peer, p) })
	}
	c.settle()
	c.advance(100 * time.Millisecond)
	if c.saw(event.DetectRecovered, by(leader)) || c.saw(event.MetaNodeUp, by(leader)) {
		t.Fatalf("the leader n%d took answers n%d sent before it died for a recovery; events:\n%v", leader, peer, c.events)
	}
}
