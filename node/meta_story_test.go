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

// A leader that falls silent without a reset (a stopped process, a cut
// it does not notice) is verified by its followers once the detection
// policy's interval and grace have passed, and replaced in node-ID order:
// well before raft's own election timeout (0.5-1 s with the default
// metadata tick) would fire.
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
	// Interval 100ms + grace 300ms of silence, counted in 50ms metadata
	// ticks, then three 10ms ticks of verification.
	if wait := lost.at.Sub(cutAt); wait < 400*time.Millisecond || wait > 520*time.Millisecond {
		t.Fatalf("the silent leader was found lost %v after it fell silent, want 400-520ms", wait)
	}
	if wait := c.now.Sub(cutAt); wait > 600*time.Millisecond {
		t.Fatalf("the new leader took %v after the silence began", wait)
	}
}
