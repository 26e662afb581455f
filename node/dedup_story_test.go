package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// createQueueWindow creates a queue with its own deduplication window and
// waits for it to activate.
func (c *cluster) createQueueWindow(name string, window time.Duration) node.NodeID {
	owner, _ := roles(name)
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: name, Policy: wire.PolicyMajority, DedupWindow: window})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	return owner
}

// publishAt publishes id to queue through to and returns the index its
// confirmation names: a retry of a remembered ID gets the first one's.
func (c *cluster) publishAt(to node.NodeID, queue string, reqID uint64, id wire.MessageID) uint64 {
	c.t.Helper()
	c.request(to, 1, &wire.Publish{ReqID: reqID, Queue: queue, ID: id, Payload: []byte("x")})
	c.settle()
	return c.mustReply(reqID, wire.StatusOK).Index
}

// ackAll subscribes on conn, acks every delivery, unsubscribes, and
// returns how many it acked: a settled message is forgotten with the
// window, a live one never is.
func (c *cluster) ackAll(to node.NodeID, conn node.ConnID, queue string, reqID uint64) int {
	c.t.Helper()
	c.request(to, conn, &wire.Subscribe{ReqID: reqID, Queue: queue, Window: 10, Lease: time.Minute})
	c.settle()
	c.mustReply(reqID, wire.StatusOK)
	ds := c.deliveries(conn)
	for i, d := range ds {
		c.request(to, conn, &wire.Settle{ReqID: reqID + 1 + uint64(i), Queue: queue, ID: d.ID, Lease: d.Lease})
	}
	c.settle()
	for i := range ds {
		c.mustReply(reqID+1+uint64(i), wire.StatusOK)
	}
	c.request(to, conn, &wire.Unsubscribe{ReqID: reqID + 50, Queue: queue})
	c.settle()
	c.mustReply(reqID+50, wire.StatusOK)
	return len(ds)
}

// Two queues on the same nodes, one with a 3s window and one with 20s,
// forget the ID of a message published and acked at different times,
// and each keeps its window across a failover: a retry inside a queue's
// window is stored once, one after it is a new message. The nodes'
// default (2m) is longer than both, so an owner that wrote its default
// in place of the queue's window would remember the ID in both.
func TestEachQueueForgetsAfterItsOwnWindow(t *testing.T) {
	c := newCluster(t)
	const brief, long = "clicks", "invoices" // both owned by n1 first
	windows := map[string]time.Duration{brief: 3 * time.Second, long: 20 * time.Second}
	owner := c.createQueueWindow(brief, windows[brief])
	if c.createQueueWindow(long, windows[long]) != owner {
		t.Fatal("the two queues are placed on different owners; the story needs one")
	}
	reqID := uint64(100)
	publish := func(to node.NodeID, queue string, id wire.MessageID) uint64 {
		reqID++
		return c.publishAt(to, queue, reqID, id)
	}
	first := map[string]uint64{brief: publish(owner, brief, msgID(1)), long: publish(owner, long, msgID(1))}
	for i, q := range []string{brief, long} {
		if n := c.ackAll(owner, node.ConnID(20+i), q, 1000+100*uint64(i)); n != 1 {
			t.Fatalf("%s: %d deliveries acked, want 1", q, n)
		}
	}
	c.advance(time.Second)
	for q, index := range first {
		if got := publish(owner, q, msgID(1)); got != index {
			t.Fatalf("%s: a retry 1s later was stored again at %d, first at %d", q, got, index)
		}
	}

	c.node(owner).crash()
	c.advance(4 * time.Second)
	owners := map[string]node.NodeID{}
	for _, q := range []string{brief, long} {
		if !c.saw(event.RecoveryDone, onQueue(q)) {
			t.Fatalf("%s did not fail over; events:\n%v", q, c.events)
		}
		owners[q] = viewOf(t, c.node(owner%3+1).n, q).Owner
		if v := viewOf(t, c.node(owners[q]).n, q); v.Role != "owner" || v.DedupWindow != windows[q] || v.DedupDefault {
			t.Fatalf("%s after the failover: %+v; want an owner with the queue's %v window", q, v, windows[q])
		}
	}

	// About 5s after the first publish: a fresh publish moves each
	// queue's clock on, and then the brief queue has forgotten the ID
	// while the long one remembers it.
	for _, q := range []string{brief, long} {
		publish(owners[q], q, msgID(2))
	}
	if got := publish(owners[brief], brief, msgID(1)); got == first[brief] {
		t.Fatalf("%s: a retry 5s after the publish, past its 3s window, was deduplicated to index %d", brief, got)
	}
	if got := publish(owners[long], long, msgID(1)); got != first[long] {
		t.Fatalf("%s: a retry 5s after the publish, inside its 20s window, was stored again at %d (first at %d)", long, got, first[long])
	}
	c.advance(20 * time.Second)
	publish(owners[long], long, msgID(3))
	if got := publish(owners[long], long, msgID(1)); got == first[long] {
		t.Fatalf("%s: a retry 25s after the publish, past its 20s window, was deduplicated to index %d", long, got)
	}
}

// A create request whose window is out of bounds is refused with the
// bounds, and creates nothing.
func TestACreateWithABadWindowCreatesNothing(t *testing.T) {
	c := newCluster(t)
	owner, _ := roles("clicks")
	for i, window := range []time.Duration{-time.Second, 500 * time.Millisecond, 25 * time.Hour} {
		reqID := uint64(10 + i)
		c.request(owner, 1, &wire.CreateQueue{ReqID: reqID, Queue: "clicks", DedupWindow: window})
		c.advance(500 * time.Millisecond)
		if r := c.mustReply(reqID, wire.StatusBadRequest); !strings.Contains(r.Detail, "outside [1s, 24h0m0s]") {
			t.Fatalf("window %v refused with %q, want the bounds", window, r.Detail)
		}
	}
	for _, m := range c.nodes {
		for _, v := range m.n.Queues() {
			t.Fatalf("%s lists queue %s after refused creates", m.id, v.Name)
		}
	}
}

// A message acked late in its window is remembered for a window from the
// ack: a copy of it asked for after its publish left the window, but
// within the window of its ack, is answered with the ack's index and not
// stored again. A dead-letter queue meets this when the source that moved
// a message into it asks again after failing over for a while.
func TestAnIDIsRememberedForAWindowFromItsAck(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueueWindow("parked", 3*time.Second)
	first := c.publishAt(owner, "parked", 10, msgID(1))
	c.advance(2 * time.Second)
	if n := c.ackAll(owner, 5, "parked", 20); n != 1 {
		t.Fatalf("the consumer acked %d messages, want 1", n)
	}
	// 2 s later the publish is 4 s old (out of the window); the ack is 2 s old.
	c.advance(2 * time.Second)
	c.publishAt(owner, "parked", 90, msgID(2)) // moves the queue's clock on
	again := c.publishAt(owner, "parked", 91, msgID(1))
	if again <= first {
		t.Fatalf("the copy was answered at index %d, want the ack's, past the publish at %d", again, first)
	}
	c.request(owner, 7, &wire.Subscribe{ReqID: 92, Queue: "parked", Window: 10, Lease: time.Minute})
	c.settle()
	for _, d := range c.deliveries(7) {
		if d.ID == msgID(1) {
			t.Fatal("the acked message was stored and delivered again inside its ack's window")
		}
	}
}
