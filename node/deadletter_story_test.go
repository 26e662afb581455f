package node_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// createWithDeadLetter creates queue name, whose messages move to dead
// after limit deliveries, and returns its owner.
func (c *cluster) createWithDeadLetter(name, dead string, limit uint32) node.NodeID {
	c.t.Helper()
	owner, _ := roles(name)
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: name, Policy: wire.PolicyMajority, DeadLetter: dead, MaxDeliveries: limit})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	return owner
}

// movesAcrossLosingAnswers creates "orders", whose messages move to
// "parked" (owned by deadOwner) after one delivery, and returns its
// owner, which must be another node: the story wants the move to cross
// nodes. The dead-letter queue's answers to that owner are lost from now
// on, so it keeps asking and never settles a moved message.
func (c *cluster) movesAcrossLosingAnswers(deadOwner node.NodeID) node.NodeID {
	c.t.Helper()
	owner := c.createWithDeadLetter("orders", "parked", 1)
	if owner == deadOwner {
		c.t.Fatalf("both queues are owned by %s: the story wants the move to cross nodes", owner)
	}
	c.intercept = func(_, to node.NodeID, m wire.Message) bool {
		_, answer := m.(*wire.DeadLetterReply)
		return !answer || to != owner
	}
	return owner
}

// nackEach nacks every delivery conn holds and returns how many it
// nacked.
func (c *cluster) nackEach(to node.NodeID, conn node.ConnID, queue string, reqID uint64) []*wire.Delivery {
	c.t.Helper()
	ds := c.deliveries(conn)
	for i, d := range ds {
		c.request(to, conn, &wire.Settle{ReqID: reqID + uint64(i), Queue: queue, ID: d.ID, Lease: d.Lease, Nack: true})
		c.mustReply(reqID+uint64(i), wire.StatusOK)
	}
	c.settle()
	return ds
}

// A message nacked as often as its queue's delivery limit allows moves to
// the dead-letter queue: a subscriber there gets it once, with its ID and
// payload; the source queue never offers it again and refuses an ack of
// its last lease; a message delivered fewer times stays. The dead-letter
// queue's owner is another node ("parked") or the same one
// ("orders-dead").
func TestAPoisonMessageMovesToItsDeadLetterQueue(t *testing.T) {
	for _, dead := range []string{"parked", "orders-dead"} {
		t.Run(dead, func(t *testing.T) { poisonMoves(t, dead) })
	}
}

func poisonMoves(t *testing.T, dead string) {
	c := newCluster(t)
	deadOwner := c.createQueue(dead, wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", dead, 2)
	if same, _ := roles("orders"); (owner == deadOwner) != (same == deadOwner) {
		t.Fatalf("owners %s and %s are not where the placement puts them", owner, deadOwner)
	}
	const consumer, deadConsumer node.ConnID = 5, 6
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()

	first := c.nackEach(owner, consumer, "orders", 20)
	if len(first) != 1 || first[0].Attempt != 1 {
		t.Fatalf("first delivery: %+v", first)
	}
	// Across nodes, the first asks to store the message are lost, so the
	// move is under way for a while.
	crossing := owner != deadOwner
	c.intercept = func(_, _ node.NodeID, m wire.Message) bool {
		_, ask := m.(*wire.DeadLetter)
		return !ask
	}
	second := c.nackEach(owner, consumer, "orders", 30)
	if len(second) != 1 || second[0].Attempt != 2 {
		t.Fatalf("second delivery: %+v", second)
	}
	if crossing {
		if d := viewOf(t, c.node(owner).n, "orders").Depth; d.DeadLettering != 1 || d.Ready != 0 {
			t.Fatalf("the depth of a queue moving its one message: %+v", d)
		}
		c.request(owner, consumer, &wire.Settle{ReqID: 40, Queue: "orders", ID: msgID(1), Lease: second[0].Lease})
		c.settle()
		c.mustReply(40, wire.StatusNotLeased)
	}
	c.intercept = nil
	c.advance(time.Second)
	if again := c.deliveries(consumer); len(again) != 0 {
		t.Fatalf("the source queue offered the message a third time: %+v", again)
	}

	c.request(deadOwner, deadConsumer, &wire.Subscribe{ReqID: 50, Queue: dead, Window: 10, Lease: time.Minute})
	c.settle()
	got := c.deliveries(deadConsumer)
	if len(got) != 1 || got[0].ID != msgID(1) || !bytes.Equal(got[0].Payload, []byte("poison")) {
		t.Fatalf("the dead-letter queue delivered %+v, want the poison message once", got)
	}
	v := viewOf(t, c.node(owner).n, "orders")
	if d := v.Depth; d.Ready+d.Leased+d.Delayed+d.DeadLettering != 0 {
		t.Fatalf("the source queue still holds the moved message: %+v", d)
	}

	// A message below the limit is offered again, as before.
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("fine")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 60)
	if ds := c.deliveries(consumer); len(ds) != 1 || ds[0].ID != msgID(2) || ds[0].Attempt != 2 {
		t.Fatalf("a message nacked once was not offered again: %+v", ds)
	}
}

// A move cut short by the loss of the source queue's owner is finished by
// the next owner: the dead-letter record is confirmed before the move is
// asked for, so the new owner knows the message left delivery. The
// dead-letter queue holds the message once however often it was asked,
// and the source queue never delivers it again.
func TestANewOwnerFinishesAMoveItsPredecessorBegan(t *testing.T) {
	c := newCluster(t)
	deadOwner := c.createQueue("parked", wire.PolicyMajority)
	owner := c.movesAcrossLosingAnswers(deadOwner)
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	c.advance(time.Second) // asked several times, every answer lost
	asks := 0
	for _, e := range c.emitted {
		if e.Name == event.QueueDeadLetterSent && e.node == owner {
			asks++
		}
	}
	if asks < 2 {
		t.Fatalf("the first owner asked %d times; the story needs a repeated ask", asks)
	}

	c.node(owner).crash()
	c.intercept = nil
	c.advance(4 * time.Second)
	newOwner := recoveredOwner(t, c)
	if newOwner == owner {
		t.Fatalf("the dead owner %s is still the owner", owner)
	}
	if !c.saw(event.QueueDeadLetterSent, by(newOwner)) {
		t.Fatal("the new owner did not resume the move")
	}
	// Nothing is left to deliver in the source queue, and the new
	// owner's depth shows the move done.
	c.request(newOwner, 7, &wire.Subscribe{ReqID: 70, Queue: "orders", Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(70, wire.StatusOK)
	if ds := c.deliveries(7); len(ds) != 0 {
		t.Fatalf("the new owner delivered a dead-lettered message: %+v", ds)
	}
	if d := viewOf(t, c.node(newOwner).n, "orders").Depth; d.DeadLettering != 0 || d.Ready != 0 {
		t.Fatalf("the move did not complete: %+v", d)
	}
	c.request(deadOwner, 8, &wire.Subscribe{ReqID: 80, Queue: "parked", Window: 10, Lease: time.Minute})
	c.settle()
	if ds := c.deliveries(8); len(ds) != 1 || ds[0].ID != msgID(1) {
		t.Fatalf("the dead-letter queue delivered %+v, want the message once", ds)
	}
}

// A delivery limit without a dead-letter queue, a queue that is its own,
// or a limit out of range, is refused at creation.
func TestABadDeliveryLimitIsRefused(t *testing.T) {
	c := newCluster(t)
	owner, _ := roles("orders")
	for i, m := range []*wire.CreateQueue{
		{Queue: "orders", MaxDeliveries: 3},
		{Queue: "orders", DeadLetter: "orders", MaxDeliveries: 3},
		{Queue: "orders", DeadLetter: "orders-dead"},
		{Queue: "orders", DeadLetter: "orders-dead", MaxDeliveries: wire.MaxDeliveriesLimit + 1},
		{Queue: "orders", DeadLetter: ".hidden", MaxDeliveries: 3},
	} {
		m.ReqID = uint64(100 + i)
		c.request(owner, 1, m)
		c.mustReply(m.ReqID, wire.StatusBadRequest)
	}
}

// Deliveries a consumer hands back by unsubscribing do not count toward
// the delivery limit; those of a consumer lost while it held them do.
func TestUnsubscribingDoesNotUseUpDeliveries(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 1)
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	for i, conn := range []node.ConnID{5, 6, 7} {
		req := uint64(10 + 2*i)
		c.request(owner, conn, &wire.Subscribe{ReqID: req, Queue: "orders", Window: 1, Lease: time.Minute})
		c.settle()
		if ds := c.deliveries(conn); len(ds) != 1 || ds[0].Attempt != 1 {
			t.Fatalf("consumer %d after %d unsubscribes got %+v, want the message at attempt 1", conn, i, ds)
		}
		c.request(owner, conn, &wire.Unsubscribe{ReqID: req + 1, Queue: "orders"})
		c.settle()
	}
	if c.saw(event.QueueDeadLetter) {
		t.Fatal("unsubscribing moved the message to the dead-letter queue")
	}
	c.request(owner, 8, &wire.Subscribe{ReqID: 30, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	if ds := c.deliveries(8); len(ds) != 1 {
		t.Fatalf("the last consumer got %+v", ds)
	}
	c.node(owner).run(func() { c.node(owner).n.OnClientGone(8) })
	c.settle()
	if !c.saw(event.QueueDeadLetter, onQueue("orders")) {
		t.Fatal("a consumer lost while holding the message did not use up its one delivery")
	}
}

// A purge of the source queue ends a move under way: the message is gone
// from the queue, its depth counts nothing moving, and the owner stops
// asking the dead-letter queue to store it.
func TestAPurgeEndsAMoveUnderWay(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 1)
	c.intercept = func(_, _ node.NodeID, m wire.Message) bool {
		_, ask := m.(*wire.DeadLetter)
		return !ask
	}
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	if d := viewOf(t, c.node(owner).n, "orders").Depth; d.DeadLettering != 1 {
		t.Fatalf("before the purge: %+v, want one message moving", d)
	}
	c.request(owner, 1, &wire.Purge{ReqID: 30, Queue: "orders"})
	c.settle()
	c.mustReply(30, wire.StatusOK)
	if d := viewOf(t, c.node(owner).n, "orders").Depth; d.DeadLettering != 0 || d.Ready != 0 {
		t.Fatalf("after the purge: %+v, want nothing left", d)
	}
	asked := func() int {
		n := 0
		for _, e := range c.emitted {
			if e.Name == event.QueueDeadLetterSent {
				n++
			}
		}
		return n
	}
	before := asked()
	c.advance(time.Second)
	if after := asked(); after != before {
		t.Fatalf("the owner asked %d more times to move a purged message", after-before)
	}
}

// A move asked for again long after the dead-letter queue's
// deduplication window, by a source owner that never heard the first
// answer, is not stored again, though the message was delivered and acked
// from the dead-letter queue meanwhile: the dead-letter queue remembers
// the move until its source says it settled it (seeds 29034 and 48676 of
// the long sweep, where the acked message came back). Once a later move
// carries the source's mark, the first is forgotten.
func TestADeadLetterQueueRemembersAMovePastItsWindow(t *testing.T) {
	c := newCluster(t)
	deadOwner := c.createQueueWindow("parked", 2*time.Second)
	owner := c.movesAcrossLosingAnswers(deadOwner)
	const consumer, deadConsumer node.ConnID = 5, 6
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("poison")})
	c.settle()
	c.nackEach(owner, consumer, "orders", 20)
	c.advance(300 * time.Millisecond)

	c.request(deadOwner, deadConsumer, &wire.Subscribe{ReqID: 30, Queue: "parked", Window: 10, Lease: time.Minute})
	c.settle()
	got := c.deliveries(deadConsumer)
	if len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("the dead-letter queue delivered %+v, want the moved message", got)
	}
	c.request(deadOwner, deadConsumer, &wire.Settle{ReqID: 31, Queue: "parked", ID: got[0].ID, Lease: got[0].Lease})
	c.settle()
	c.mustReply(31, wire.StatusOK)

	// Well past the window, a publish moves the dead-letter queue's clock
	// on, so it forgets the IDs of the window. The source's owner dies
	// still asking; its successor asks again.
	c.advance(3 * time.Second)
	c.request(deadOwner, 2, &wire.Publish{ReqID: 32, Queue: "parked", ID: msgID(100), Payload: []byte("later")})
	c.settle()
	c.mustReply(32, wire.StatusOK)
	if ds := c.deliveries(deadConsumer); len(ds) != 1 || ds[0].ID != msgID(100) {
		t.Fatalf("the dead-letter queue delivered %+v, want the later publish", ds)
	}
	c.node(owner).crash()
	c.intercept = nil
	c.advance(4 * time.Second)
	newOwner := recoveredOwner(t, c)
	if newOwner == owner || !c.saw(event.QueueDeadLetterSent, by(newOwner)) {
		t.Fatalf("the new owner %s did not resume the move", newOwner)
	}
	if d := viewOf(t, c.node(newOwner).n, "orders").Depth; d.DeadLettering != 0 {
		t.Fatalf("the move did not complete: %+v", d)
	}
	if again := c.deliveries(deadConsumer); len(again) != 0 {
		t.Fatalf("the dead-letter queue stored the acked message again and delivered %+v", again)
	}
	if !c.saw(event.QueueMoveRemembered, by(deadOwner)) {
		t.Fatalf("the dead-letter queue's owner %s did not say it answered from its ledger", deadOwner)
	}
	if n := node.MovedInRemembered(c.node(deadOwner).n, "parked"); n != 1 {
		t.Fatalf("the dead-letter queue remembers %d moves, want the one its source has not yet said it settled", n)
	}

	// The next move carries the source's mark, which covers the first.
	c.request(newOwner, consumer, &wire.Subscribe{ReqID: 40, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(newOwner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("poison too")})
	c.settle()
	c.nackEach(newOwner, consumer, "orders", 50)
	c.advance(time.Second)
	if ds := c.deliveries(deadConsumer); len(ds) != 1 || ds[0].ID != msgID(2) {
		t.Fatalf("the dead-letter queue delivered %+v, want the second message", ds)
	}
	if n := node.MovedInRemembered(c.node(deadOwner).n, "parked"); n != 1 {
		t.Fatalf("the dead-letter queue remembers %d moves, want only the second", n)
	}
}
