package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Eager detection verifies a peer once a ping to it has gone unanswered
// past the idle limit. If the answer to that very ping arrives while the
// verification runs, the peer was alive after the ping went out and the
// silence was the link's stall: the verification is over. Seed 133399 of
// the long sweep: the leader n4 began verifying n2 when its ping had
// waited 140 ms, heard the answers to it and to the next ping 170 ms
// after the first went out, and still confirmed n2 down 10 ms later
// because the verification's own pings were stuck behind the stall; the
// next answer brought n2 back up 50 ms after that, but the failover
// planned with the confirmation moved the queue dl off n2 in the middle
// of the recovery replacing its lost replica.
//
// The story holds the peer's answers from just after one ping, lets the
// idle monitor start its verification, then hands the leader the answers
// to the pings sent before the verification began, while the answers to
// the verification's own pings stay held past its deadline.
//
// Heartbeat detection verifies a peer it has heard nothing from past its
// grace, and the same holds for it: the late answer shows the peer alive.
func TestDetectionEndsAVerificationOnTheLateAnswerItWaitedFor(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode uint8
	}{{"eager", node.DetectEager}, {"heartbeat", node.DetectHeartbeat}} {
		t.Run(mode.name, func(t *testing.T) { lateAnswerEndsVerification(t, mode.mode) })
	}
}

func lateAnswerEndsVerification(t *testing.T, mode uint8) {
	const tick = 10 * time.Millisecond
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: tick, SegmentSize: 4096,
		Detection: node.DetectionPolicy{Mode: mode, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}})
	leader := c.leader()
	peer := leader%3 + 1

	holding := false
	var held []*wire.Pong
	sent := map[uint64]time.Time{} // each ping to the peer, by number
	var pings []time.Time
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		switch m := m.(type) {
		case *wire.Ping:
			if from == leader && to == peer {
				sent[m.Seq] = c.now
				pings = append(pings, c.now)
			}
		case *wire.Pong:
			if from == peer && to == leader && holding {
				held = append(held, m)
				return false
			}
		}
		return true
	}
	// Calm links first: the leader learns no stall, so its idle limit is
	// one interval.
	c.advance(time.Second)
	pinged := func() bool { return len(pings) > 0 && pings[len(pings)-1].Equal(c.now) }
	for start := c.now; !pinged(); {
		c.advance(tick)
		if c.now.Sub(start) > time.Second {
			t.Fatalf("the leader n%d sent n%d no ping for a second", leader, peer)
		}
	}
	holding = true

	// The verification pings each tick: two pings a tick apart mark it.
	verifying := func() (time.Time, bool) {
		if n := len(pings); n >= 2 && pings[n-1].Sub(pings[n-2]) == tick {
			return pings[n-2], true
		}
		return time.Time{}, false
	}
	var began time.Time
	for start := c.now; ; {
		c.advance(tick)
		if at, ok := verifying(); ok {
			began = at
			break
		}
		if c.now.Sub(start) > time.Second {
			t.Fatalf("the leader n%d did not verify n%d, whose answers it has not heard for a second; events:\n%v", leader, peer, c.events)
		}
	}
	if c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader n%d confirmed a node down before the story's late answers; events:\n%v", leader, c.events)
	}

	// The answers to the pings sent before the verification arrive now,
	// late; the answers to the verification's own pings stay held.
	l := c.node(leader)
	var own []*wire.Pong
	for _, p := range held {
		if sent[p.Seq].Before(began) {
			l.run(func() { l.n.OnMessage(peer, p) })
		} else {
			own = append(own, p)
		}
	}
	held = own
	c.settle()
	c.advance(5 * tick) // past the verification's deadline
	if c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader n%d confirmed n%d down after hearing the late answer to the ping it verified n%d for; events:\n%v", leader, peer, peer, c.events)
	}

	// The link heals: every held answer arrives and nothing is confirmed.
	holding = false
	for _, p := range held {
		l.run(func() { l.n.OnMessage(peer, p) })
	}
	c.settle()
	c.advance(500 * time.Millisecond)
	if c.saw(event.DetectConfirm, by(leader)) || c.saw(event.MetaNodeDown, by(leader)) {
		t.Fatalf("the leader n%d took the live n%d for dead; events:\n%v", leader, peer, c.events)
	}
}

// A leader whose only other follower it already confirmed down still
// confirms a follower that falls silent: with no live peer left to
// compare with, its own silence towards everyone says nothing about
// itself (hearsOthers), and it is not left waiting.
func TestALeaderWithNoOtherLivePeerStillConfirmsASilentOne(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	var first, second node.NodeID
	for _, m := range c.nodes {
		switch {
		case m.id == leader:
		case first == 0:
			first = m.id
		default:
			second = m.id
		}
	}
	c.node(first).crash()
	c.resetPeers(first)
	c.advance(500 * time.Millisecond)
	if !c.saw(event.DetectConfirm, by(leader), func(e emission) bool { return node.NodeID(e.Node()) == first }) {
		t.Fatalf("the leader n%d never confirmed the crashed n%d down; events:\n%v", leader, first, c.events)
	}
	c.cut[second] = true // silent, with no reset
	c.advance(time.Second)
	if !c.saw(event.DetectConfirm, by(leader), func(e emission) bool { return node.NodeID(e.Node()) == second }) {
		t.Fatalf("the leader n%d never confirmed the silent n%d down; events:\n%v", leader, second, c.events)
	}
}
