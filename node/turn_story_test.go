package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// leaseBacklog creates the queue "orders", subscribes consumer 5 with
// the given window and a minute's lease, publishes n messages, one
// request each, and returns the owner and what it delivered.
func (c *cluster) leaseBacklog(window uint32, n uint64) (node.NodeID, []*wire.Delivery) {
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: window, Lease: time.Minute})
	for seq := uint64(1); seq <= n; seq++ {
		c.request(owner, node.ConnID(seq), &wire.Publish{ReqID: seq, Queue: "orders", ID: msgID(seq), Payload: []byte("job")})
	}
	c.settle()
	return owner, c.deliveries(5)
}

// Acks that reach the owner in one turn, in a batch frame or as separate
// requests, are written as one settles record; every replica holds that
// record, each ack is answered at its index, and an owner that restarts
// from the log still knows every one of them settled.
func TestAcksOfOneTurnShareOneRecord(t *testing.T) {
	c := newCluster(t)
	const consumer node.ConnID = 5
	owner, d := c.leaseBacklog(8, 4)
	if len(d) != 4 {
		t.Fatalf("got %d deliveries, want 4", len(d))
	}
	batch := &wire.SettleBatch{Queue: "orders"}
	for i, dl := range d[:3] {
		batch.Items = append(batch.Items, wire.SettleItem{ReqID: uint64(20 + i), ID: dl.ID, Lease: dl.Lease})
	}
	// The same ack again, as a retry would be, in the same turn.
	again := &wire.Settle{ReqID: 23, Queue: "orders", ID: d[2].ID, Lease: d[2].Lease}
	c.requestTurn(owner, consumer, batch, again)
	c.settle()
	var index uint64
	for req := uint64(20); req <= 23; req++ {
		r := c.mustReply(req, wire.StatusOK)
		if index == 0 {
			index = r.Index
		}
		if r.Index != index {
			t.Fatalf("ack %d answered at index %d, the others at %d", req, r.Index, index)
		}
	}
	want := []wire.MessageID{d[0].ID, d[1].ID, d[2].ID}
	for _, m := range c.nodes {
		dump := node.DumpReplicas(m.fs.CrashClone(vfsCfg), "", 64, 1<<20)
		last := dump[0].Entries[len(dump[0].Entries)-1]
		if last.Index != index || last.Type != "settle" || !slices.Equal(last.IDs(), want) {
			t.Fatalf("%s's last record is %+v, want one settle of %v at %d", m.id, last, want, index)
		}
	}
	// The restarted owner rebuilds from the log: only the fourth message
	// is left, and it comes back to a new subscriber.
	c.node(owner).crash()
	c.node(owner).start()
	c.advance(2 * time.Second)
	now, _ := roles("orders")
	for _, m := range c.nodes {
		if v := viewOf(t, m.n, "orders"); v.Role == "owner" {
			now = m.id
		}
	}
	c.request(now, 6, &wire.Subscribe{ReqID: 30, Queue: "orders", Window: 8, Lease: time.Minute})
	c.settle()
	if got := c.deliveries(6); len(got) != 1 || got[0].ID != d[3].ID {
		t.Fatalf("after the restart the queue delivered %v, want only %s", got, d[3].ID)
	}
}

// An ack taken this turn is neither ready nor leased: the depth does not
// count it as waiting for a subscriber.
func TestAnAckInItsTurnIsNotReady(t *testing.T) {
	c := newCluster(t)
	const consumer node.ConnID = 5
	owner, d := c.leaseBacklog(1, 1)
	if len(d) != 1 {
		t.Fatalf("got %d deliveries, want 1", len(d))
	}
	m := c.node(owner)
	m.run(func() {
		m.n.OnClient(consumer, &wire.Settle{ReqID: 11, Queue: "orders", ID: d[0].ID, Lease: d[0].Lease})
	})
	want := node.QueueDepth{Known: true, Consumers: 1}
	if got := viewOf(t, m.n, "orders").Depth; got != want {
		t.Fatalf("depth with the ack not yet written: %+v, want %+v", got, want)
	}
	c.settle()
	c.mustReply(11, wire.StatusOK)
}

// An unsubscribe hands what the subscription leased back to the queue at
// once: another subscriber gets it without waiting out the lease.
func TestAnUnsubscribeHandsItsLeasesBack(t *testing.T) {
	c := newCluster(t)
	owner, d := c.leaseBacklog(2, 3)
	if len(d) != 2 {
		t.Fatalf("got %d deliveries, want 2", len(d))
	}
	c.request(owner, 6, &wire.Subscribe{ReqID: 11, Queue: "orders", Window: 8, Lease: time.Minute})
	c.settle()
	if got := c.deliveries(6); len(got) != 1 {
		t.Fatalf("the second subscriber got %d, want the one message not leased", len(got))
	}
	c.request(owner, 5, &wire.Unsubscribe{ReqID: 12, Queue: "orders"})
	c.settle()
	c.mustReply(12, wire.StatusOK)
	got := c.deliveries(6)
	if len(got) != 2 || got[0].ID != d[0].ID || got[1].ID != d[1].ID {
		t.Fatalf("after the unsubscribe the second subscriber got %v, want %s and %s again", got, d[0].ID, d[1].ID)
	}
	if again := c.deliveries(5); len(again) != 0 {
		t.Fatalf("the unsubscribed connection still got %v", again)
	}
}
