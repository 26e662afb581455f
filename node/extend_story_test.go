package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// An extended lease holds its message past the subscription's lease and
// lets it go at the extended expiry; a lease that ended (by expiry, nack
// or ack) cannot be extended.
func TestExtendedLeaseOutlastsItsSubscriptionLease(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: 100 * time.Millisecond})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	d := c.deliveries(consumer)
	if len(d) != 1 {
		t.Fatalf("first delivery: %+v", d)
	}
	first := d[0].Lease

	c.advance(50 * time.Millisecond)
	c.request(owner, consumer, &wire.Extend{ReqID: 11, Queue: "orders", ID: msgID(1), Lease: first, For: 300 * time.Millisecond})
	c.mustReply(11, wire.StatusOK)
	c.advance(200 * time.Millisecond) // past the subscription's lease, inside the extension
	if d = c.deliveries(consumer); len(d) != 0 {
		t.Fatalf("an extended lease was let go at its original expiry: %+v", d)
	}
	c.advance(150 * time.Millisecond) // past the extension
	if d = c.deliveries(consumer); len(d) != 1 || d[0].Attempt != 2 {
		t.Fatalf("the extended lease did not run out at its new expiry: %+v", d)
	}
	second := d[0].Lease

	c.request(owner, consumer, &wire.Extend{ReqID: 12, Queue: "orders", ID: msgID(1), Lease: first, For: time.Second})
	c.mustReply(12, wire.StatusNotLeased) // expired

	c.request(owner, consumer, &wire.Settle{ReqID: 13, Queue: "orders", ID: msgID(1), Lease: second, Nack: true})
	c.mustReply(13, wire.StatusOK)
	c.request(owner, consumer, &wire.Extend{ReqID: 14, Queue: "orders", ID: msgID(1), Lease: second, For: time.Second})
	c.mustReply(14, wire.StatusNotLeased) // nacked
	if d = c.deliveries(consumer); len(d) != 1 || d[0].Attempt != 3 {
		t.Fatalf("the nack did not redeliver: %+v", d)
	}

	third := d[0].Lease
	c.request(owner, consumer, &wire.Settle{ReqID: 15, Queue: "orders", ID: msgID(1), Lease: third})
	c.settle()
	c.mustReply(15, wire.StatusOK)
	c.request(owner, consumer, &wire.Extend{ReqID: 16, Queue: "orders", ID: msgID(1), Lease: third, For: time.Second})
	c.mustReply(16, wire.StatusNotLeased) // acked
}

// An extension must be positive and at most wire.MaxExtend; anything
// else is a bad request that leaves the lease as it was.
func TestExtendOutOfRangeIsABadRequest(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: 100 * time.Millisecond})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	d := c.deliveries(consumer)
	if len(d) != 1 {
		t.Fatalf("first delivery: %+v", d)
	}
	for i, f := range []time.Duration{0, -time.Second, wire.MaxExtend + 1} {
		req := uint64(20 + i)
		c.request(owner, consumer, &wire.Extend{ReqID: req, Queue: "orders", ID: msgID(1), Lease: d[0].Lease, For: f})
		c.mustReply(req, wire.StatusBadRequest)
	}
	c.advance(150 * time.Millisecond)
	if d = c.deliveries(consumer); len(d) != 1 || d[0].Attempt != 2 {
		t.Fatalf("a refused extension changed the lease: %+v", d)
	}
}

// A lease that has run out is not brought back by an extension that
// arrives before the owner's tick hands its message back.
func TestExtendOfARunOutLeaseIsRefusedBeforeItIsReaped(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Nanosecond})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	d := c.deliveries(consumer)
	if len(d) != 1 {
		t.Fatalf("first delivery: %+v", d)
	}
	c.advance(time.Microsecond) // too short for a tick
	if again := c.deliveries(consumer); len(again) != 0 {
		t.Fatalf("a tick reaped the lease already, so this tests nothing: %+v", again)
	}
	c.request(owner, consumer, &wire.Extend{ReqID: 11, Queue: "orders", ID: msgID(1), Lease: d[0].Lease, For: time.Second})
	c.mustReply(11, wire.StatusNotLeased)
}

// A nack or an extension names its lease by number, and a consumer may
// send one after the process that granted the lease is gone. The next
// owner process numbers its leases elsewhere, so such a stale request
// finds its lease no longer held and leaves alone the lease that process
// granted for the same message (seed 139582 of the long sweep: numbered
// from 1 in every process, a stale nack of lease 2 ended another
// consumer's extended lease 2).
func TestAStaleNackFromAnEarlierOwnerProcessLeavesANewLeaseAlone(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const before, after node.ConnID = 5, 6
	c.request(owner, before, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("job")})
	c.settle()
	c.mustReply(1, wire.StatusOK)
	d := c.deliveries(before)
	if len(d) != 1 {
		t.Fatalf("delivery before the restart: %+v", d)
	}
	stale := d[0].Lease

	c.node(owner).crash()
	c.node(owner).start()
	c.advance(time.Second)
	c.request(owner, after, &wire.Subscribe{ReqID: 20, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(20, wire.StatusOK)
	if d = c.deliveries(after); len(d) != 1 {
		t.Fatalf("delivery after the restart: %+v", d)
	}
	held := d[0].Lease
	if held == stale {
		t.Fatalf("the restarted owner granted lease %d again", held)
	}

	c.request(owner, before, &wire.Settle{ReqID: 21, Queue: "orders", ID: msgID(1), Lease: stale, Nack: true})
	c.mustReply(21, wire.StatusNotLeased)
	c.request(owner, before, &wire.Extend{ReqID: 22, Queue: "orders", ID: msgID(1), Lease: stale, For: time.Second})
	c.mustReply(22, wire.StatusNotLeased)
	c.request(owner, after, &wire.Extend{ReqID: 23, Queue: "orders", ID: msgID(1), Lease: held, For: time.Second})
	c.mustReply(23, wire.StatusOK)
}

// A consumer that unsubscribes while it works on an extended delivery
// keeps that lease: the message goes to no one else until the extension
// runs out (or the consumer settles it), while the delivery it never
// extended goes back at once. The closed subscription takes nothing new,
// and a consumer on another connection gets the message only after the
// extension.
func TestAnExtendedLeaseOutlastsAnUnsubscribe(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	const leaving, staying node.ConnID = 5, 6
	c.request(owner, leaving, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 2, Lease: 200 * time.Millisecond})
	c.request(owner, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1), Payload: []byte("long job")})
	c.request(owner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2), Payload: []byte("short job")})
	c.settle()
	d := c.deliveries(leaving)
	if len(d) != 2 {
		t.Fatalf("deliveries before the unsubscribe: %+v", d)
	}
	long := d[0]
	if long.ID != msgID(1) {
		long = d[1]
	}
	c.request(owner, leaving, &wire.Extend{ReqID: 11, Queue: "orders", ID: msgID(1), Lease: long.Lease, For: time.Second})
	c.mustReply(11, wire.StatusOK)
	c.request(owner, leaving, &wire.Unsubscribe{ReqID: 12, Queue: "orders"})
	c.mustReply(12, wire.StatusOK)
	c.request(owner, staying, &wire.Subscribe{ReqID: 13, Queue: "orders", Window: 2, Lease: time.Minute})
	c.settle()
	if got := c.deliveries(staying); len(got) != 1 || got[0].ID != msgID(2) {
		t.Fatalf("after the unsubscribe the other consumer got %+v; want the unextended message alone", got)
	}
	c.advance(500 * time.Millisecond) // past the subscription's lease, inside the extension
	if got := c.deliveries(staying); len(got) != 0 {
		t.Fatalf("the extended lease was let go before its end: %+v", got)
	}
	if got := c.deliveries(leaving); len(got) != 0 {
		t.Fatalf("the closed subscription was handed %+v", got)
	}
	c.advance(600 * time.Millisecond) // past the extension
	if got := c.deliveries(staying); len(got) != 1 || got[0].ID != msgID(1) || got[0].Attempt != 2 {
		t.Fatalf("after the extension ran out the other consumer got %+v; want the long job's second delivery", got)
	}
}
