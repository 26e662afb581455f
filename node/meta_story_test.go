package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
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

// A leader that falls silent without a reset (a stopped process, a cut
// it does not notice) is verified by its followers so that it is found
// lost when the detection policy's grace has passed since they last heard
// it, and replaced in node-ID order: well before raft's own election
// timeout (0.5-1 s with the default metadata tick) would fire.
func TestASilentLeaderIsVerifiedAndReplaced(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	cutAt := c.now
	c.cut[lead] = true
	for step := 0; c.leader() == lead || c.leader() == 0; step++ {
		if step > 200 {
			t.Fatalf("no new leader 1s after %s fell silent; events:\n%v", lead, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	lost, ok := c.last(event.DetectLeaderLost)
	if !ok {
		t.Fatalf("a new leader was elected, but no follower verified the silent leader first")
	}
	// The grace, 300ms, from the last heartbeat (sent each 50ms metadata
	// tick), the verification's three 10ms ticks included, and a tick of
	// the detector's clock.
	if wait := lost.at.Sub(cutAt); wait < 250*time.Millisecond || wait > 320*time.Millisecond {
		t.Fatalf("the silent leader was found lost %v after it fell silent, want 250-320ms", wait)
	}
	if wait := c.now.Sub(cutAt); wait > 400*time.Millisecond {
		t.Fatalf("the new leader took %v after the silence began", wait)
	}
	t.Logf("found lost after %v, replaced after %v", lost.at.Sub(cutAt), c.now.Sub(cutAt))
}

// A node the metadata recorded down while it was stopped restarts and
// wins the next election before any leader heard from it. A leader
// watches only its peers, so it must clear its own entry itself: left
// standing, it would plan every queue it owns away from itself and never
// count its own replicas as recovery candidates (seed 10466 of the long
// sweep: the only complete live replica of a queue sat on such a leader,
// and the queue was never served again).
func TestALeaderTheMetadataHoldsDownMarksItselfUp(t *testing.T) {
	c := newCluster(t)
	first := c.leader()
	c.node(first).crash()
	downed := func(e emission) bool { return e.Node() == uint32(first) }
	for step := 0; !c.saw(event.MetaNodeDown, downed); step++ {
		if step > 600 {
			t.Fatalf("%s was not marked down in 3s; events:\n%v", first, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	// The restarted node's answers to pings are lost, so the leader that
	// marked it down never learns it is back.
	c.intercept = func(from, _ node.NodeID, m wire.Message) bool {
		_, pong := m.(*wire.Pong)
		return from != first || !pong
	}
	c.node(first).start()
	c.advance(time.Second)
	second := c.leader()
	if second == first {
		t.Fatalf("%s took the leadership back while %s still led", first, second)
	}
	c.node(second).crash()
	for step := 0; c.leader() != first; step++ {
		if step > 600 {
			t.Fatalf("%s did not win the election after %s crashed; events:\n%v", first, second, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	c.intercept = nil
	c.advance(500 * time.Millisecond)
	for _, m := range c.node(first).n.Members() {
		if node.NodeID(m.ID) == first && m.Down {
			t.Fatalf("%s leads, but its metadata still holds it down; events:\n%v", first, c.events)
		}
	}
}

// A leader whose raft messages stop for longer than the detection
// policy's grace, while it still answers pings, is verified by its
// followers and keeps its place. The first ping of each verification is
// lost (a ping can find no connection to travel on): the follower pings
// again each tick until its verification runs out, the leader answers
// one of those, and nobody campaigns.
func TestASilentLeaderThatAnswersItsVerificationKeepsItsPlace(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	quietFrom := c.now
	quiet := true
	lostPing := map[node.NodeID]bool{}
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if _, isRaft := msg.(*wire.Raft); isRaft && quiet && from == lead {
			return false
		}
		if _, isPing := msg.(*wire.Ping); isPing && to == lead && !lostPing[from] && c.now.Sub(quietFrom) >= 250*time.Millisecond {
			lostPing[from] = true
			return false
		}
		return true
	}
	// Past the grace (300ms) and the verification's three ticks, within
	// raft's check-quorum window (500ms), which would depose the leader
	// on its own.
	c.advance(400 * time.Millisecond)
	quiet = false
	c.advance(500 * time.Millisecond)
	if len(lostPing) == 0 {
		t.Fatal("no follower pinged the silent leader: nothing was verified")
	}
	if _, lost := c.last(event.DetectLeaderLost); lost {
		t.Fatalf("a follower found the leader lost though it answered its pings; events:\n%v", c.events)
	}
	if now := c.leader(); now != lead || c.leaderships() != 1 {
		t.Fatalf("the leadership moved to n%d (%d announcements) though n%d answered", now, c.leaderships(), lead)
	}
}

// A follower that finds its leader lost campaigns; when that campaign
// wins nothing (here its only peer is down too), it campaigns again a
// few detector ticks later rather than waiting out raft's own election
// timer, so a peer that comes back just after the first campaign is a
// leader's quorum again within a tenth of a second.
func TestACampaignThatFindsNoWinnerIsRetried(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	others := othersThan(lead)
	lonely, away := others[0], others[1]
	c.cut[lead] = true
	c.node(away).crash()
	campaigns := func() int { return c.count(event.MetaCampaign, by(lonely)) }
	for step := 0; campaigns() == 0; step++ {
		if step > 200 {
			t.Fatalf("%s never campaigned in the 1s after its leader %s fell silent; events:\n%v", lonely, lead, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	c.node(away).start()
	back := c.now
	for step := 0; c.leader() == lead; step++ {
		if step > 60 {
			t.Fatalf("no new leader 300ms after %s restarted beside %s, whose first campaign had found no winner (%d campaigns by it); events:\n%v", away, lonely, campaigns(), c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	if campaigns() < 2 && c.leader() == lonely {
		t.Fatalf("%s leads after one campaign, which could not have won", lonely)
	}
	t.Logf("%s leads %v after %s restarted; %s campaigned %d times", c.leader(), c.now.Sub(back), away, lonely, campaigns())
}
