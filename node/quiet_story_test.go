package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A consumer that lets its leases run out without a word is held back:
// one delivery at a time, then pauses that grow, and its first word
// (here an ack) gives it its whole window again. Before, a consumer whose
// host had died took a full window of messages every lease until the
// client idle timeout closed its connection, minutes later.
func TestAQuietSubscriberIsHeldBackUntilItSpeaks(t *testing.T) {
	const consumer node.ConnID = 5
	const lease = 100 * time.Millisecond
	c, owner := windowFilled(t, consumer, 4, lease)

	c.advance(lease + 20*time.Millisecond)
	if d := c.deliveries(consumer); len(d) != 1 {
		t.Fatalf("after its whole window ran out unanswered, the consumer took %d deliveries, want 1: %+v", len(d), d)
	}
	c.advance(lease + 20*time.Millisecond)
	if d := c.deliveries(consumer); len(d) != 0 {
		t.Fatalf("a consumer quiet twice in a row took deliveries during its pause: %+v", d)
	}
	c.advance(lease)
	d := c.deliveries(consumer)
	if len(d) != 1 {
		t.Fatalf("after its pause the consumer took %d deliveries, want 1: %+v", len(d), d)
	}
	quiet := func(n int) func(emission) bool {
		return func(e emission) bool { return e.Conn() == uint64(consumer) && e.Quiet() == n }
	}
	if !c.saw(event.QueueSubscriberQuiet, onQueue("orders"), quiet(1)) || !c.saw(event.QueueSubscriberQuiet, onQueue("orders"), quiet(2)) {
		t.Fatalf("the owner did not report holding the subscription back")
	}

	c.request(owner, consumer, &wire.Settle{ReqID: 20, Queue: "orders", ID: d[0].ID, Lease: d[0].Lease})
	c.settle()
	c.mustReply(20, wire.StatusOK)
	if d := c.deliveries(consumer); len(d) != 3 {
		t.Fatalf("an ack did not give the consumer its window back: %d deliveries, want the 3 left", len(d))
	}
	if !c.saw(event.QueueSubscriberHeard, onQueue("orders")) {
		t.Fatalf("the owner did not report the subscription heard from")
	}
}

// A consumer held back does not hold the queue back: the messages its
// leases let go reach a consumer that answers, while the quiet one waits
// out its pauses.
func TestMessagesAQuietSubscriberLetGoReachALiveOne(t *testing.T) {
	const quiet, live node.ConnID = 5, 6
	const lease = 100 * time.Millisecond
	c, owner := windowFilled(t, quiet, 8, lease)
	c.request(owner, live, &wire.Subscribe{ReqID: 11, Queue: "orders", Window: 8, Lease: lease})
	c.settle()
	acked := map[wire.MessageID]bool{}
	took := 0
	for range 12 {
		c.advance(lease / 2)
		took += len(c.deliveries(quiet))
		for i, d := range c.deliveries(live) {
			acked[d.ID] = true
			c.request(owner, live, &wire.Settle{ReqID: uint64(100 + len(acked)*10 + i), Queue: "orders", ID: d.ID, Lease: d.Lease})
		}
		c.settle()
	}
	if len(acked) != 8 {
		t.Fatalf("the live consumer settled %d of the 8 messages in six leases", len(acked))
	}
	if took > 2 {
		t.Fatalf("the quiet consumer took %d deliveries after its window ran out, want at most 2", took)
	}
}

// windowFilled makes queue "orders", subscribes consumer with window and
// lease, publishes window messages, and checks that they all went out to
// it.
func windowFilled(t *testing.T, consumer node.ConnID, window int, lease time.Duration) (*cluster, node.NodeID) {
	t.Helper()
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: uint32(window), Lease: lease})
	for i := range window {
		c.request(owner, 1, &wire.Publish{ReqID: uint64(1 + i), Queue: "orders", ID: msgID(uint64(1 + i))})
	}
	c.settle()
	if d := c.deliveries(consumer); len(d) != window {
		t.Fatalf("the consumer's window of %d: %d deliveries", window, len(d))
	}
	return c, owner
}
