package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A delivery limit holds across a crash. Delivery counts live in the
// owner's memory, but its appends tell its followers how often it sent
// each message, so the owner recovered after it dies counts on from
// there: a message sent twice before the crash goes out a third time as
// its third delivery, and a nack of that one uses up a limit of three
// and moves it to the dead-letter queue.
func TestDeliveryCountsOutliveACrashedOwner(t *testing.T) {
	c := newCluster(t)
	owner := c.poisonSentTwiceThenOwnerCrashed(3)
	newOwner := recoveredOwner(t, c)
	if newOwner == owner {
		t.Fatalf("the crashed owner %s still owns the queue", owner)
	}
	if e, ok := c.last(event.QueueCountsCarried); !ok || e.node != newOwner || e.Raised() != 1 {
		t.Fatalf("the recovered owner reported carried counts %v (%v), want one raised by %s", e, ok, newOwner)
	}
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	if got := c.nackEach(newOwner, 7, "orders", 60); len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("after the crash the consumer got %+v, want the message as its third delivery", got)
	}
	c.advance(500 * time.Millisecond)
	if !c.saw(event.QueueDeadLetter, onQueue("orders"), by(newOwner)) {
		t.Fatalf("the message nacked at its third delivery was not dead-lettered; events:\n%v", c.events)
	}
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("the source queue sent the dead-lettered message again: %+v", got)
	}
}

// Counts outlive the owner of a queue without a delivery limit too: a
// consumer reads them as a delivery's attempt (SQS's
// ApproximateReceiveCount), and an attempt that starts again at 1 after a
// failover would tell it the message is new.
func TestAttemptsOutliveACrashedOwnerWithoutALimit(t *testing.T) {
	c := newCluster(t)
	c.sentTwiceThenOwnerCrashed(c.createQueue("orders", wire.PolicyMajority))
	newOwner := recoveredOwner(t, c)
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	if got := c.deliveries(7); len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("after the crash the consumer got %+v, want the message as its third delivery", got)
	}
}

// A message whose count, carried over from the owner before, has used up
// the limit already is moved by the recovered owner without going out
// once more: here the old owner sent it as often as the limit allows and
// died before its consumer answered the last delivery.
func TestARecoveredOwnerMovesAMessageThatUsedUpItsDeliveries(t *testing.T) {
	c := newCluster(t)
	c.poisonSentTwiceThenOwnerCrashed(2)
	newOwner := recoveredOwner(t, c)
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(50, wire.StatusOK)
	c.advance(500 * time.Millisecond)
	if got := c.deliveries(7); len(got) != 0 {
		t.Fatalf("the recovered owner sent %+v, a message that had used up its deliveries", got)
	}
	if e, ok := c.last(event.QueueDeadLetter); !ok || e.node != newOwner || e.Deliveries() != 2 {
		t.Fatalf("the recovered owner's move was %v (%v), want one by %s after 2 deliveries", e, ok, newOwner)
	}
}

// poisonSentTwiceThenOwnerCrashed makes queue orders, with a delivery
// limit and the dead-letter queue parked, and has its message sent twice
// before its owner crashes (sentTwiceThenOwnerCrashed); it returns the
// old owner.
func (c *cluster) poisonSentTwiceThenOwnerCrashed(limit uint32) node.NodeID {
	c.t.Helper()
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", limit)
	c.sentTwiceThenOwnerCrashed(owner)
	return owner
}

// sentTwiceThenOwnerCrashed publishes one message to orders, served by
// owner, has a consumer nack its first delivery and hold its second, and
// crashes the owner once its next appends have gone out; it returns four
// seconds after the crash.
func (c *cluster) sentTwiceThenOwnerCrashed(owner node.NodeID) {
	c.t.Helper()
	c.subscribeAndPublishPoison(owner)
	if got := c.nackEach(owner, 5, "orders", 20); len(got) != 1 || got[0].Attempt != 1 {
		c.t.Fatalf("the first delivery was %+v, want the message as attempt 1", got)
	}
	if got := c.deliveries(5); len(got) != 1 || got[0].Attempt != 2 {
		c.t.Fatalf("after the nack the consumer got %+v, want the message again as attempt 2", got)
	}
	c.advance(50 * time.Millisecond) // the next appends carry the count
	c.node(owner).crash()
	c.advance(4 * time.Second)
}

// subscribeAndPublishPoison subscribes connection 5 to orders at owner,
// one delivery at a time, and publishes message 1, which its consumer
// will not handle.
func (c *cluster) subscribeAndPublishPoison(owner node.NodeID) {
	c.t.Helper()
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.mustReply(1, wire.StatusOK)
	c.mustReply(10, wire.StatusOK)
}
