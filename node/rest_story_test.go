package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// restingQueues creates count majority queues that share one owner and
// one follower, and leaves them idle until every owner rests and its
// grant has lapsed.
func restingQueues(c *cluster, count int) (names []string, owner, follower node.NodeID) {
	c.t.Helper()
	for i := 0; len(names) < count; i++ {
		name := fmt.Sprintf("idle-%d", i)
		o, f := roles(name)
		if len(names) == 0 {
			owner, follower = o, f[0]
		}
		if o == owner && (f[0] == follower || f[1] == follower) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		c.createQueue(name, wire.PolicyMajority)
	}
	c.advance(node.RestAfter + 500*time.Millisecond)
	for _, name := range names {
		if !c.saw(event.QueueResting, onQueue(name), by(owner)) {
			c.t.Fatalf("the owner of idle queue %s never rested; events:\n%v", name, c.events)
		}
		if v := viewOf(c.t, c.node(owner).n, name); !v.Resting || !v.NoQuorum || v.Role != "owner" {
			c.t.Fatalf("a resting owner's view says role %s, resting %v, no quorum %v: want an owner at rest whose grant lapsed",
				v.Role, v.Resting, v.NoQuorum)
		}
	}
	return names, owner, follower
}

// TestIdleQueuesRestAndHeartbeatSeldom: an owner whose queue has been
// idle for a while stops keeping its quorum's grant fresh. It sends each
// follower one empty append every ten seconds, marked as a rest, instead
// of one every couple of ticks (one a second if a subscriber waits on
// it, TestASubscribedRestingOwnerHeartbeatsEverySecond): with thousands
// of idle queues, heartbeats were most of a node's work. Resting is
// quiet: nobody is told the quorum was lost.
func TestIdleQueuesRestAndHeartbeatSeldom(t *testing.T) {
	c := newCluster(t)
	names, owner, follower := restingQueues(c, 4)
	heartbeats, awake := countHeartbeats(c, owner, follower)
	const span = 25 * time.Second
	c.advance(span)
	for _, name := range names {
		if got, limit := heartbeats[name], int(span/node.RestHeartbeatAlone)+1; got == 0 || got > limit {
			t.Fatalf("resting queue %s sent %d heartbeats in %v, want 1 to %d: %v", name, got, span, limit, heartbeats)
		}
	}
	if *awake > 0 {
		t.Fatalf("%d appends of resting owners did not say they rest", *awake)
	}
	if c.saw(event.QueueQuorumLost, by(owner)) {
		t.Fatalf("a resting owner reported its quorum lost; events:\n%v", c.events)
	}
}

// countHeartbeats counts, per queue, the appends owner sends follower
// from now on, and how many of them did not say the owner rests.
func countHeartbeats(c *cluster, owner, follower node.NodeID) (map[string]int, *int) {
	heartbeats, awake := map[string]int{}, new(int)
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if a, ok := msg.(*wire.Append); ok && from == owner && to == follower {
			heartbeats[a.Queue]++
			if !a.Rest {
				*awake++
			}
		}
		return true
	}
	return heartbeats, awake
}

// TestASubscribedRestingOwnerHeartbeatsEverySecond: a resting owner that
// a subscriber waits on sends its followers a heartbeat a second, so that
// if it is cut off it finds out soon and sends the subscriber to look for
// the queue elsewhere.
func TestASubscribedRestingOwnerHeartbeatsEverySecond(t *testing.T) {
	c := newCluster(t)
	owner := subscribedRestingQueue(c, "orders")
	_, followers := roles("orders")
	heartbeats, awake := countHeartbeats(c, owner, followers[0])
	const span = 3 * time.Second
	c.advance(span)
	if got, limit := heartbeats["orders"], int(span/node.RestHeartbeat)+1; got < int(span/node.RestHeartbeat)-1 || got > limit {
		t.Fatalf("a subscribed resting owner sent %d heartbeats in %v, want %d to %d", got, span, int(span/node.RestHeartbeat)-1, limit)
	}
	if *awake > 0 {
		t.Fatalf("%d appends of a resting owner did not say it rests", *awake)
	}
}

// TestAPublishWakesARestingOwner: a publish to a queue whose owner rests
// is confirmed as usual. It waits on the owner for one round trip, while
// the owner's appends win its quorum's grant back, and then goes through.
func TestAPublishWakesARestingOwner(t *testing.T) {
	c := newCluster(t)
	names, owner, _ := restingQueues(c, 1)
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: names[0], ID: msgID(1), Payload: []byte("a")})
	c.noReply(1) // waiting for the quorum, not refused
	c.settle()
	if r := c.mustReply(1, wire.StatusOK); r.Index != 2 {
		t.Fatalf("the publish was confirmed at %d, want 2 (after the epoch marker)", r.Index)
	}
	if !c.saw(event.QueueWaking, onQueue(names[0]), by(owner)) || !c.saw(event.QueueQuorumRegained, onQueue(names[0]), by(owner)) {
		t.Fatalf("the owner served without waking and regaining its quorum; events:\n%v", c.events)
	}
	if v := viewOf(t, c.node(owner).n, names[0]); v.Resting || v.NoQuorum {
		t.Fatalf("a woken owner's view says resting %v, no quorum %v", v.Resting, v.NoQuorum)
	}
}

// TestARestingOwnerWhoseQuorumMovedOnConfirmsNothing: while an owner
// rests, its followers take a newer epoch (another node's, as a recovery
// that took the owner for dead would give them). A publish that wakes
// the old owner is not confirmed: its appends are refused, it learns it
// is stale, and the client hears it is fenced.
func TestARestingOwnerWhoseQuorumMovedOnConfirmsNothing(t *testing.T) {
	c := newCluster(t)
	names, owner, _ := restingQueues(c, 1)
	queue := names[0]
	_, followers := roles(queue)
	inc := currentIncarnation(t, c.node(owner), queue)
	for i, id := range followers {
		other := followers[1-i]
		f := c.node(id)
		f.run(func() { f.n.OnMessage(other, &wire.Append{Queue: queue, Incarnation: inc, Epoch: 2, PrevIndex: 0}) })
	}
	c.msgs = nil // the new epoch's replies go nowhere
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: queue, ID: msgID(1), Payload: []byte("a")})
	c.advance(50 * time.Millisecond)
	c.mustReply(1, wire.StatusFenced)
	if !c.saw(event.QueueStale, onQueue(queue), by(owner)) {
		t.Fatalf("the woken owner never learned it was superseded; events:\n%v", c.events)
	}
}

// TestAFollowerSendsRequestsOnToARestingOwner: a follower that has not
// heard from its owner lately holds requests for the queue, expecting a
// failover, unless the owner said it rests: then the client is sent to
// the owner at once, whose wake costs a round trip, not a park timeout.
func TestAFollowerSendsRequestsOnToARestingOwner(t *testing.T) {
	c := newCluster(t)
	names, owner, follower := restingQueues(c, 1)
	c.request(follower, 1, &wire.Publish{ReqID: 1, Queue: names[0], ID: msgID(1), Payload: []byte("a")})
	if r := c.mustReply(1, wire.StatusNotOwner); node.NodeID(r.Owner) != owner {
		t.Fatalf("the follower named n%d as owner, want %s", r.Owner, owner)
	}
}

// subscribedRestingQueue creates a queue with a subscriber (connection
// 7, request 1000) and leaves it idle until its owner rests.
func subscribedRestingQueue(c *cluster, queue string) node.NodeID {
	c.t.Helper()
	owner := c.createQueue(queue, wire.PolicyMajority)
	c.request(owner, 7, &wire.Subscribe{ReqID: 1000, Queue: queue, Window: 10})
	c.settle()
	c.mustReply(1000, wire.StatusOK)
	c.advance(node.RestAfter + 500*time.Millisecond)
	if !c.saw(event.QueueResting, onQueue(queue), by(owner)) {
		c.t.Fatalf("the owner of an idle queue with a subscriber never rested; events:\n%v", c.events)
	}
	return owner
}

// cutFollowers cuts queue's followers off from every node.
func cutFollowers(c *cluster, queue string) {
	_, followers := roles(queue)
	for _, f := range followers {
		c.cut[f] = true
	}
}

// TestARestingOwnerDeliversTheNextPublishToItsSubscriber: a subscriber
// waiting on an idle queue does not keep its owner awake, nor is it sent
// away when the owner rests: the next publish wakes the owner, which
// confirms it and hands it to the subscriber.
func TestARestingOwnerDeliversTheNextPublishToItsSubscriber(t *testing.T) {
	c := newCluster(t)
	owner := subscribedRestingQueue(c, "orders")
	if r := c.reply(1000); r != nil {
		t.Fatalf("the subscriber was answered %s (%q) while its owner rested", r.Status, r.Detail)
	}
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("a")})
	c.settle()
	c.mustReply(1, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("the subscriber got %v, want the one message published", got)
	}
}

// TestARestingOwnerCutOffSendsItsSubscribersAway: an owner that rests
// with a subscriber still sends each follower an append a second; when
// no quorum answers a round of them, it is cut off for real, says so, and
// sends the subscriber away to find the queue elsewhere.
func TestARestingOwnerCutOffSendsItsSubscribersAway(t *testing.T) {
	c := newCluster(t)
	owner := subscribedRestingQueue(c, "orders")
	cutFollowers(c, "orders")
	c.advance(node.RestHeartbeat + 300*time.Millisecond)
	if !c.saw(event.QueueQuorumLost, onQueue("orders"), by(owner)) {
		t.Fatalf("a resting owner whose heartbeats went unanswered never said it lost its quorum; events:\n%v", c.events)
	}
	c.mustReply(1000, wire.StatusNotOwner)
}

// TestAQuestionAboutAnIdleQueueWakesItsOwner: asking a resting owner for
// its queue's depth, as `cairn queue stats` does, wakes it; the question
// waits the round trip and is answered, not refused.
func TestAQuestionAboutAnIdleQueueWakesItsOwner(t *testing.T) {
	c := newCluster(t)
	names, owner, _ := restingQueues(c, 1)
	c.request(owner, 1, &wire.QueueInfo{ReqID: 1, Queue: names[0]})
	c.noReply(1)
	c.settle()
	if r := c.mustReply(1, wire.StatusOK); r.Depth == nil || r.Depth.Ready != 0 {
		t.Fatalf("an idle queue's depth came back as %+v", r.Depth)
	}
}

// An idle owner cut off from its quorum rests as soon as the quorum
// answers again, not RestAfter later: being cut off is not work. On a
// busy machine with thousands of queues, a stall cut owners off, each
// went on heartbeating for RestAfter after its quorum came back, and
// that traffic made the next stall, so none rested again.
func TestAnIdleOwnerCutOffRestsOnceItsQuorumAnswers(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 1)
	cut := true
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		switch m.(type) {
		case *wire.Append, *wire.AppendReply:
			return !cut || (from != owner && to != owner)
		}
		return true
	}
	c.advance(node.RestAfter + time.Second)
	if !c.saw(event.QueueQuorumLost, onQueue("orders"), by(owner)) {
		t.Fatalf("the owner cut off from its followers never lost its quorum; events:\n%v", c.events)
	}
	if c.saw(event.QueueResting, onQueue("orders"), by(owner)) {
		t.Fatalf("the owner rested while cut off from its quorum")
	}
	cut = false
	healed := c.now
	c.advance(node.RestAfter)
	e, ok := c.last(event.QueueResting)
	if !ok || e.node != owner || e.at.Sub(healed) > 500*time.Millisecond {
		t.Fatalf("the idle owner rested %v after its quorum answered again (ok %v), want within 500ms", e.at.Sub(healed), ok)
	}
}

// TestAnOwnerHoldingOnlyADelayedMessageStaysAwake: a message published
// with a delay is work the owner must do at its time, even when nothing
// else is pending (no subscriber waits), so an owner holding one does not
// rest, and a subscriber that comes gets the message within a tick or
// two of its delay rather than at a resting owner's seldom visit.
func TestAnOwnerHoldingOnlyADelayedMessageStaysAwake(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	delay := node.RestAfter + time.Second
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("later"), Delay: delay})
	c.settle()
	c.mustReply(1, wire.StatusOK)
	c.advance(delay - 50*time.Millisecond)
	if c.saw(event.QueueResting, onQueue("orders"), by(owner)) {
		t.Fatalf("the owner rested while it held a message due in %v", 50*time.Millisecond)
	}
	c.request(owner, 7, &wire.Subscribe{ReqID: 1000, Queue: "orders", Window: 10})
	c.settle()
	c.mustReply(1000, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("the delayed message was delivered early: %v", got)
	}
	c.advance(50*time.Millisecond + 2*c.cfg.Tick)
	if got := c.deliveries(7); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("two ticks past its delay the subscriber got %v, want the delayed message", got)
	}
}

// TestARestingOwnerWokenWhileCutOffSendsItsSubscribersAway: a resting
// owner that wakes for work (here a publish) while no quorum can hear it
// is cut off for real once its wake goes unanswered for a silence limit.
// It then does what any owner cut off from its quorum does: refuses what
// waited and sends its subscribers away to find the queue elsewhere.
// Before, a resting owner noted the lapse of its grant silently, and a
// wake left the note standing, so nothing ever said the quorum was lost:
// the subscriber stayed with an owner that could not deliver for as long
// as the cut lasted, while the queue was failed over elsewhere.
func TestARestingOwnerWokenWhileCutOffSendsItsSubscribersAway(t *testing.T) {
	c := newCluster(t)
	owner := subscribedRestingQueue(c, "orders")
	cutFollowers(c, "orders")
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("a")})
	c.advance(300 * time.Millisecond)
	if r := c.reply(1); r == nil || r.Status == wire.StatusOK {
		t.Fatalf("a publish to an owner cut off from its quorum was answered %v, want a refusal", r)
	}
	if !c.saw(event.QueueQuorumLost, onQueue("orders"), by(owner)) {
		t.Fatalf("a woken owner whose quorum never answered never said it lost it; events:\n%v", c.events)
	}
	c.mustReply(1000, wire.StatusNotOwner)
}
