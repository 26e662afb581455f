package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// setDeadLetter asks node to of the cluster to change queue's delivery
// limit and requires the answer want.
func (c *cluster) setDeadLetter(to node.NodeID, reqID uint64, queue, dead string, limit uint32, want wire.Status) {
	c.t.Helper()
	c.request(to, 98, &wire.SetQueueOptions{ReqID: reqID, Queue: queue, DeadLetter: dead, MaxDeliveries: limit})
	c.advance(500 * time.Millisecond)
	c.mustReply(reqID, want)
}

// dropAsks loses every request to store a message in a dead-letter
// queue that crosses the network, so a move stays under way.
func (c *cluster) dropAsks() {
	c.intercept = func(_, _ node.NodeID, m wire.Message) bool {
		_, ask := m.(*wire.DeadLetter)
		return !ask
	}
}

// dead-letter queue deliveries: subscribe conn to queue on its owner and
// return what it is given.
func (c *cluster) drain(queue string, conn node.ConnID, reqID uint64) []*wire.Delivery {
	c.t.Helper()
	owner, _ := roles(queue)
	c.request(owner, conn, &wire.Subscribe{ReqID: reqID, Queue: queue, Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(reqID, wire.StatusOK)
	return c.deliveries(conn)
}

// A queue created without a delivery limit gets one through a node that
// does not own it: every node's metadata shows it, and the owner moves
// the message it has delivered three times as soon as that delivery is
// nacked, where before the message went round freely.
func TestADeliveryLimitSetLaterMovesAPoisonMessage(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	c.nackEach(owner, consumer, "orders", 30)
	if c.saw(event.QueueDeadLetter) {
		t.Fatal("a queue without a limit dead-lettered a message")
	}

	c.setDeadLetter(followers[0], 40, "orders", "parked", 2, wire.StatusOK)
	for _, id := range []node.NodeID{1, 2, 3} {
		if v := viewOf(t, c.node(id).n, "orders"); v.DeadLetter != "parked" || v.MaxDeliveries != 2 {
			t.Fatalf("%s's metadata shows dead-letter %q after %d, want parked after 2", id, v.DeadLetter, v.MaxDeliveries)
		}
	}
	if third := c.nackEach(owner, consumer, "orders", 50); len(third) != 1 || third[0].Attempt != 3 {
		t.Fatalf("the delivery nacked after the change: %+v, want the third", third)
	}
	c.advance(time.Second)
	if ds := c.deliveries(consumer); len(ds) != 0 {
		t.Fatalf("the source queue offered the message past its new limit: %+v", ds)
	}
	if got := c.drain("parked", 6, 60); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("the dead-letter queue delivered %+v, want the poison message once", got)
	}
	if d := viewOf(t, c.node(owner).n, "orders").Depth; d.Ready+d.Leased+d.DeadLettering != 0 {
		t.Fatalf("the source queue still holds the moved message: %+v", d)
	}
}

// Removing the limit stops new moves, but a move already under way
// finishes: a message nacked past the old limit while its move was
// stalled reaches the dead-letter queue once, and one nacked after the
// removal is offered again.
func TestRemovingTheLimitStopsNewMovesAndFinishesOnesUnderWay(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 1)
	const consumer node.ConnID = 5
	c.dropAsks()
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	if d := viewOf(t, c.node(owner).n, "orders").Depth; d.DeadLettering != 1 {
		t.Fatalf("before the removal: %+v, want one message moving", d)
	}

	c.setDeadLetter(owner, 30, "orders", "", 0, wire.StatusOK)
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("fine")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 40)
	if ds := c.deliveries(consumer); len(ds) != 1 || ds[0].ID != msgID(2) || ds[0].Attempt != 2 {
		t.Fatalf("after the removal, a nacked message was not offered again: %+v", ds)
	}
	if c.saw(event.QueueDeadLetter, onQueue("orders"), func(e emission) bool { return e.ID() == msgID(2).String() }) {
		t.Fatal("a message was dead-lettered after the limit was removed")
	}

	c.intercept = nil
	c.advance(time.Second)
	if got := c.drain("parked", 6, 50); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("the dead-letter queue delivered %+v, want the message whose move was under way, once", got)
	}
	if d := viewOf(t, c.node(owner).n, "orders").Depth; d.DeadLettering != 0 {
		t.Fatalf("the move under way did not finish: %+v", d)
	}
}

// A move under way when the queue is given another dead-letter queue
// goes where its record said, even when a new owner finishes it after
// a failover; later moves go to the new queue.
func TestAMoveUnderWayKeepsItsDeadLetterQueue(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	c.createQueue("other", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 1)
	const consumer node.ConnID = 5
	c.dropAsks()
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	c.setDeadLetter(owner, 30, "orders", "other", 1, wire.StatusOK)

	c.node(owner).crash()
	c.intercept = nil
	c.advance(4 * time.Second)
	newOwner := recoveredOwner(t, c)
	if newOwner == owner {
		t.Fatalf("the dead owner %s is still the owner", owner)
	}
	if c.saw(event.QueueDeadLetterSent, func(e emission) bool { return e.To() == "other" }) {
		t.Fatal("a move begun for parked was asked of other")
	}
	if got := c.drain("parked", 6, 40); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("parked delivered %+v, want the message whose move began there, once", got)
	}
	if d := viewOf(t, c.node(newOwner).n, "orders").Depth; d.DeadLettering != 0 {
		t.Fatalf("the new owner did not finish the move: %+v", d)
	}

	c.request(newOwner, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(newOwner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("later")})
	c.settle()
	c.nackEach(newOwner, 7, "orders", 60)
	c.advance(time.Second)
	if got := c.drain("other", 8, 70); len(got) != 1 || got[0].ID != msgID(2) {
		t.Fatalf("other delivered %+v, want the message that used up its delivery after the change", got)
	}
}

// A change that breaks the rules of a delivery limit is refused, and so
// are one for a queue that does not exist and one that would close a
// ring of dead-letter queues; the queue keeps its setting.
func TestABadDeliveryLimitChangeIsRefused(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 3)
	for i, m := range []*wire.SetQueueOptions{
		{Queue: "orders", MaxDeliveries: 3},
		{Queue: "orders", DeadLetter: "orders", MaxDeliveries: 3},
		{Queue: "orders", DeadLetter: "parked"},
		{Queue: "orders", DeadLetter: "parked", MaxDeliveries: wire.MaxDeliveriesLimit + 1},
		{Queue: "orders", DeadLetter: ".hidden", MaxDeliveries: 3},
		{Queue: ".hidden", DeadLetter: "parked", MaxDeliveries: 3},
	} {
		m.ReqID = uint64(100 + i)
		c.request(owner, 1, m)
		c.mustReply(m.ReqID, wire.StatusBadRequest)
	}
	c.setDeadLetter(owner, 110, "nothing", "parked", 2, wire.StatusNoQueue)
	// parked sending its messages back to orders would close a ring.
	c.setDeadLetter(owner, 111, "parked", "orders", 2, wire.StatusBadRequest)
	c.request(owner, 1, &wire.CreateQueue{ReqID: 112, Queue: "loop", DeadLetter: "orders", MaxDeliveries: 2})
	c.advance(500 * time.Millisecond)
	c.mustReply(112, wire.StatusOK)
	c.setDeadLetter(owner, 113, "parked", "loop", 2, wire.StatusBadRequest)
	// So is a create that would close one: parked may name a queue that
	// does not exist yet, but that queue cannot then send to orders.
	c.setDeadLetter(owner, 114, "parked", "later", 2, wire.StatusOK)
	c.request(owner, 1, &wire.CreateQueue{ReqID: 115, Queue: "later", DeadLetter: "orders", MaxDeliveries: 2})
	c.mustReply(115, wire.StatusBadRequest)
	if v := viewOf(t, c.node(owner).n, "orders"); v.DeadLetter != "parked" || v.MaxDeliveries != 3 {
		t.Fatalf("after refused changes the queue has dead-letter %q after %d, want parked after 3", v.DeadLetter, v.MaxDeliveries)
	}
}
