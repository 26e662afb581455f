package core

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// subscribeOn establishes a subscription to queue on owner and returns the
// op and the subscribe request that succeeded.
func (h *harness) subscribeOn(queue string, owner uint32) (OpID, *wire.Subscribe) {
	h.t.Helper()
	op := h.c.Subscribe(h.now, queue, 16, 30*time.Second)
	to, s := expectSend[*wire.Subscribe](h)
	if to != owner {
		h.reply(to, s.ReqID, wire.StatusNotOwner, owner, 0)
		to, s = expectSend[*wire.Subscribe](h)
	}
	if to != owner || s.Queue != queue || s.Window != 16 || s.Lease != 30*time.Second {
		h.t.Fatalf("subscribe went to n%d as %+v, want n%d", to, s, owner)
	}
	h.reply(owner, s.ReqID, wire.StatusOK, 0, 0)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	return op, s
}

// deliver hands the client a delivery from node from.
func (h *harness) deliver(from uint32, queue string, seq uint64, lease uint64) {
	h.c.OnMessage(h.now, from, &wire.Delivery{
		Queue: queue, ID: wire.MessageID{Producer: 9, Seq: seq}, Lease: lease, Attempt: 1, Payload: []byte("m"),
	})
	h.collect()
}

// When the node holding a subscription disconnects, the client backs off,
// rediscovers the owner and subscribes again by itself, telling the
// application nothing but the deliveries that follow.
func TestSubscriptionReestablishedAfterDisconnect(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)

	h.disconnect(1)
	h.expectNothingSent()
	if wait := h.runToDeadline(); wait > 100*time.Millisecond {
		t.Fatalf("re-subscription waited %v, want the first backoff", wait)
	}
	to, s := expectSend[*wire.Subscribe](h)
	if to == 1 {
		t.Fatal("re-subscription went straight back to the node that disconnected")
	}
	h.reply(to, s.ReqID, wire.StatusNotOwner, 3, 0)
	to, s = expectSend[*wire.Subscribe](h)
	if to != 3 || s.Window != 16 || s.Lease != 30*time.Second {
		t.Fatalf("re-subscription went to n%d as %+v, want n3 with the original window and lease", to, s)
	}
	h.reply(3, s.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	if at, ok := h.c.NextDeadline(); !ok || at.Sub(h.now) != DefaultSubscriptionRefresh {
		t.Fatalf("an established subscription's next deadline is %v away, want only its refresh", at.Sub(h.now))
	}

	h.deliver(3, "orders", 1, 77)
	ds := h.deliveries()
	if len(ds) != 1 || ds[0].Delivery.From != 3 || ds[0].Delivery.Lease != 77 || ds[0].Op != 0 {
		t.Fatalf("want one delivery from n3 with lease 77, got %v", ds)
	}

	// It stands again: a second disconnect is handled the same way.
	h.disconnect(3)
	h.runToDeadline()
	if to, _ := expectSend[*wire.Subscribe](h); to == 3 {
		t.Fatal("second re-subscription went back to the disconnected node")
	}
	h.expectNoOpEvents()
}

// When the subscription's node tells the client, about any request on the
// queue, that it no longer owns it, the subscription moves at once to the
// owner it names.
func TestSubscriptionFollowsNotOwner(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	pub, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	to, p := expectSend[*wire.Publish](h)
	if to != 1 {
		t.Fatalf("publish went to n%d; the subscription made n1 the known owner", to)
	}
	h.reply(1, p.ReqID, wire.StatusNotOwner, 2, 0)

	out := h.sends()
	if len(out) != 2 {
		t.Fatalf("want the re-subscription and the redirected publish, got %s", describeAll(out))
	}
	for _, o := range out {
		if o.To != 2 {
			t.Fatalf("after n1 named n2 as owner, sent %s", describeAll(out))
		}
	}
	s, ok := out[0].Msg.(*wire.Subscribe)
	if !ok {
		t.Fatalf("the re-subscription should come first, as it was triggered first: %s", describeAll(out))
	}
	h.reply(2, s.ReqID, wire.StatusOK, 0, 0)
	h.reply(2, reqIDOf(out[1].Msg), wire.StatusOK, 0, 3)
	h.expectFinished(pub, OutcomeOK, wire.StatusOK)
}

// A node may answer the request that established a subscription again,
// later, to say it lost the queue; the client re-subscribes where told.
func TestSubscriptionFollowsFencedStandingReply(t *testing.T) {
	h := newHarness(t, testConfig())
	_, s := h.subscribeOn("orders", 1)
	h.reply(1, s.ReqID, wire.StatusOK, 0, 0) // a duplicate changes nothing
	h.expectNothingSent()
	h.reply(2, s.ReqID, wire.StatusFenced, 3, 0) // not the node holding it
	h.expectNothingSent()

	h.reply(1, s.ReqID, wire.StatusFenced, 3, 0)
	to, s2 := expectSend[*wire.Subscribe](h)
	if to != 3 || s2.ReqID == s.ReqID {
		t.Fatalf("re-subscription went to n%d with ReqID %d", to, s2.ReqID)
	}
	h.reply(3, s2.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	// The old request is dead now.
	h.reply(1, s.ReqID, wire.StatusFenced, 2, 0)
	h.expectNothingSent()
}

// A subscribe refused for certain is Failed, and the client does not keep
// it standing.
func TestSubscribeFailedIsDropped(t *testing.T) {
	h := newHarness(t, testConfig())
	op := h.c.Subscribe(h.now, "orders", 4, time.Second)
	to, s := expectSend[*wire.Subscribe](h)
	h.reply(to, s.ReqID, wire.StatusNoQueue, 0, 0)
	h.expectFinished(op, OutcomeFailed, wire.StatusNoQueue)
	h.disconnect(to)
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a failed subscription is being re-established")
	}
	h.expectNothingSent()
}

// A subscribe that runs out of attempts is reported Unknown once, then
// keeps trying silently, and once established it delivers.
func TestSubscribeUnknownKeepsTrying(t *testing.T) {
	cfg := unhedgedConfig()
	cfg.MaxAttempts = 2
	h := newHarness(t, cfg)
	op := h.c.Subscribe(h.now, "orders", 4, time.Second)
	expectSend[*wire.Subscribe](h)
	h.runToDeadline() // timeout
	h.runToDeadline() // backoff
	expectSend[*wire.Subscribe](h)
	h.expectNoOpEvents()
	h.runToDeadline() // timeout: the attempts are spent
	h.expectFinished(op, OutcomeUnknown, wire.StatusUnavailable)
	for range 4 {
		h.runToDeadline() // backoff
		to, s := expectSend[*wire.Subscribe](h)
		h.reply(to, s.ReqID, wire.StatusUnavailable, 0, 0)
	}
	h.runToDeadline()
	to, s := expectSend[*wire.Subscribe](h)
	h.reply(to, s.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	h.deliver(to, "orders", 1, 1)
	if ds := h.deliveries(); len(ds) != 1 {
		t.Fatalf("want one delivery, got %v", ds)
	}
}

// Deliveries surface in arrival order with the node they came from, even
// for a queue the client holds no subscription to. A delivery from a node
// other than the one holding the queue's subscription is stale (an old
// owner's, held up in the network) and dropped: the message is not lost,
// whoever serves the queue delivers it again once that lease is gone.
func TestDeliveriesSurfacedWithFrom(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.deliver(1, "orders", 1, 10)
	h.deliver(2, "orders", 2, 20)
	h.deliver(3, "other", 3, 30)
	ds := h.deliveries()
	want := []struct {
		from  uint32
		queue string
		seq   uint64
		lease uint64
	}{{1, "orders", 1, 10}, {3, "other", 3, 30}}
	if got := h.c.StaleDeliveries(); got != 1 {
		t.Fatalf("%d deliveries dropped as stale, want the one from n2", got)
	}
	if len(ds) != len(want) {
		t.Fatalf("want %d deliveries, got %v", len(want), ds)
	}
	for i, w := range want {
		d := ds[i]
		if d.Op != 0 || d.Kind != OpSubscribe || d.Outcome != OutcomeOK || d.Queue != w.queue ||
			d.Delivery.From != w.from || d.Delivery.ID.Seq != w.seq || d.Delivery.Lease != w.lease ||
			string(d.Delivery.Payload) != "m" {
			t.Fatalf("delivery %d is %v, want from n%d %s seq %d lease %d", i, d, w.from, w.queue, w.seq, w.lease)
		}
	}
}

// Ack and Nack go to the node that delivered, whatever the owner cache
// says, carrying the delivery's ID and lease.
func TestSettleGoesToDeliveringNode(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 4}, Lease: 12, From: 2}
	ack := h.c.Ack(h.now, d)
	to, s := expectSend[*wire.Settle](h)
	if to != 2 || s.Nack || s.ID != d.ID || s.Lease != 12 || s.Queue != "orders" {
		t.Fatalf("ack sent to n%d as %+v", to, s)
	}
	h.reply(2, s.ReqID, wire.StatusOK, 0, 50)
	if e := h.expectFinished(ack, OutcomeOK, wire.StatusOK); e.ID != d.ID || e.Kind != OpAck || e.Index != 50 {
		t.Fatalf("ack reported as %v", e)
	}

	nack := h.c.Nack(h.now, d)
	to, s = expectSend[*wire.Settle](h)
	if to != 2 || !s.Nack {
		t.Fatalf("nack sent to n%d as %+v", to, s)
	}
	// A settle that times out is retried, but only to the same node.
	h.runToDeadline()
	h.runToDeadline()
	to, s = expectSend[*wire.Settle](h)
	if to != 2 {
		t.Fatalf("settle retry went to n%d, want n2", to)
	}
	h.reply(2, s.ReqID, wire.StatusNotLeased, 0, 0)
	// The first attempt may have been applied, which is why the lease is
	// gone now.
	h.expectFinished(nack, OutcomeUnknown, wire.StatusNotLeased)
}

// A settle whose node disconnects is Unknown at once: the lease lived in
// that process, and the settle is never redirected.
func TestSettleToDisconnectedNodeIsUnknown(t *testing.T) {
	h := newHarness(t, testConfig())
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 4}, Lease: 12, From: 2}
	op := h.c.Ack(h.now, d)
	expectSend[*wire.Settle](h)
	h.disconnect(2)
	if e := h.expectFinished(op, OutcomeUnknown, wire.StatusUnavailable); e.Attempts != 1 {
		t.Fatalf("want one attempt, got %v", e)
	}
	h.expectNothingSent()
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a finished settle left a deadline")
	}
}

// A settle refused by a node that no longer owns the queue is not
// redirected: cleanly refused it is Failed, fenced it is Unknown.
func TestSettleIsNeverRedirected(t *testing.T) {
	for _, tc := range []struct {
		status  wire.Status
		outcome Outcome
	}{
		{wire.StatusNotOwner, OutcomeFailed},
		{wire.StatusFenced, OutcomeUnknown},
		{wire.StatusNotLeased, OutcomeFailed},
	} {
		t.Run(tc.status.String(), func(t *testing.T) {
			h := newHarness(t, testConfig())
			d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 4}, Lease: 12, From: 2}
			op := h.c.Nack(h.now, d)
			_, s := expectSend[*wire.Settle](h)
			h.reply(2, s.ReqID, tc.status, 3, 0)
			h.expectNothingSent()
			h.expectFinished(op, tc.outcome, tc.status)
		})
	}
}

// Once a subscription has stood, a refusal while re-establishing it does
// not end it: a node still catching up on the catalogue may not know the
// queue yet. It keeps trying, with backoff, and says nothing.
func TestStandingSubscriptionOutlastsRefusals(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.disconnect(1)
	for range 10 {
		h.runToDeadline()
		to, s := expectSend[*wire.Subscribe](h)
		h.reply(to, s.ReqID, wire.StatusNoQueue, 0, 0)
		h.expectNothingSent()
	}
	h.expectNoOpEvents()
	h.runToDeadline()
	to, s := expectSend[*wire.Subscribe](h)
	h.reply(to, s.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	// Once standing, the only thing left waiting on time is its refresh.
	if at, ok := h.c.NextDeadline(); !ok || at.Sub(h.now) != DefaultSubscriptionRefresh {
		t.Fatalf("the re-established subscription's next deadline is %v from now, want its refresh in %v",
			at.Sub(h.now), DefaultSubscriptionRefresh)
	}
}

// A node's notice that it lost the queue can be lost with the network,
// leaving a subscription that will never deliver again while looking
// established. The refresh finds out: it asks the same node, follows the
// refusal to the new owner, and stands there.
func TestRefreshFindsASubscriptionLostInSilence(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.expectNothingSent()
	// The node loses the queue; its fenced notice never arrives.
	wait := h.runToDeadline()
	if wait != DefaultSubscriptionRefresh {
		t.Fatalf("the refresh came after %v, want %v", wait, DefaultSubscriptionRefresh)
	}
	to, s := expectSend[*wire.Subscribe](h)
	if to != 1 || s.Queue != "orders" {
		t.Fatalf("the refresh went to node %d for %q, want node 1 for orders", to, s.Queue)
	}
	h.reply(1, s.ReqID, wire.StatusFenced, 3, 0)
	to, s = expectSend[*wire.Subscribe](h)
	if to != 3 {
		t.Fatalf("after the fenced refusal the client subscribed on node %d, want the named owner 3", to)
	}
	h.reply(3, s.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	// A refresh the holder confirms changes nothing but the next refresh.
	h.runToDeadline()
	to, s = expectSend[*wire.Subscribe](h)
	if to != 3 {
		t.Fatalf("the second refresh went to node %d, want 3", to)
	}
	h.reply(3, s.ReqID, wire.StatusOK, 0, 0)
	h.expectNothingSent()
	h.expectNoOpEvents()
}

// While a subscription is being refreshed, a delivery from another node
// is stale: an old owner's, sent before a partition and held up in the
// network until it healed. Only the node the refresh went to may deliver,
// since it keeps the subscription and may send before its reply.
func TestARefreshSurfacesDeliveriesOnlyFromTheRefreshedNode(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 3)
	h.runToDeadline()
	to, s := expectSend[*wire.Subscribe](h)
	if to != 3 {
		t.Fatalf("the refresh went to node %d, want 3", to)
	}
	h.deliver(1, "orders", 1, 10) // the old owner's, held up until now
	h.deliver(3, "orders", 2, 20)
	h.reply(3, s.ReqID, wire.StatusOK, 0, 0)
	h.deliver(3, "orders", 3, 30)
	var seqs []uint64
	for _, d := range h.deliveries() {
		if d.Delivery.From != 3 {
			t.Fatalf("a delivery from node %d was surfaced during the refresh: %v", d.Delivery.From, d)
		}
		seqs = append(seqs, d.Delivery.ID.Seq)
	}
	if !slices.Equal(seqs, []uint64{2, 3}) {
		t.Fatalf("surfaced deliveries %v, want 2 and 3 from node 3", seqs)
	}
	h.expectStale(1)
}

// A subscription whose node was lost waits out a backoff before it asks
// anywhere; no node may deliver to it meanwhile, the lost one included.
func TestASubscriptionBetweenAttemptsSurfacesNoDelivery(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.disconnect(1)
	h.expectNothingSent()
	h.deliver(1, "orders", 1, 10)
	h.deliver(2, "orders", 2, 20)
	if ds := h.deliveries(); len(ds) != 0 {
		t.Fatalf("surfaced %v between attempts", ds)
	}
	h.expectStale(2)
}

// expectStale fails the test unless the client has dropped want
// deliveries as stale.
func (h *harness) expectStale(want uint64) {
	h.t.Helper()
	if got := h.c.StaleDeliveries(); got != want {
		h.t.Fatalf("%d deliveries dropped as stale, want %d", got, want)
	}
}

// A refresh nobody answers is an attempt like any other: it times out and
// the subscription is re-made elsewhere, without the application being
// told anything.
func TestUnansweredRefreshMovesTheSubscription(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.runToDeadline()
	expectSend[*wire.Subscribe](h) // the refresh, never answered
	h.runToDeadline()              // its timeout
	var sent []uint32
	for i := range 4 {
		if i > 0 {
			h.runToDeadline()
		}
		for _, o := range h.sends() {
			if _, ok := o.Msg.(*wire.Subscribe); ok {
				sent = append(sent, o.To)
			}
		}
		if slices.ContainsFunc(sent, func(n uint32) bool { return n != 1 }) {
			break
		}
	}
	if !slices.ContainsFunc(sent, func(n uint32) bool { return n != 1 }) {
		t.Fatalf("after an unanswered refresh the client only tried %v; it must look beyond node 1", sent)
	}
	h.expectNoOpEvents()
}

// Unsubscribing tells the node holding the subscription, once, and the
// client stops keeping it: no refresh, and no re-subscription after a
// disconnect.
func TestUnsubscribeEndsTheStandingSubscription(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.c.Unsubscribe(h.now, "orders")
	if to, u := expectSend[*wire.Unsubscribe](h); to != 1 || u.Queue != "orders" {
		t.Fatalf("the unsubscribe went to n%d for %q, want n1 for orders", to, u.Queue)
	}
	if at, ok := h.c.NextDeadline(); ok {
		t.Fatalf("an ended subscription still has work at %v", at)
	}
	h.disconnect(1)
	h.advance(time.Minute)
	h.expectNothingSent()
	h.expectNoOpEvents()
	h.c.Unsubscribe(h.now, "orders") // twice is nothing
	h.expectNothingSent()
}

// An extension goes, like a settle, only to the node that delivered,
// carrying the delivery's ID, lease and the span asked for; it is
// retried there after a timeout and never redirected: a refusal ends it,
// and so does the loss of that node's connection.
func TestExtendGoesOnlyToTheDeliveringNode(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 4}, Lease: 12, From: 2}
	op := h.c.Extend(h.now, d, time.Minute)
	to, x := expectSend[*wire.Extend](h)
	if to != 2 || x.ID != d.ID || x.Lease != 12 || x.Queue != "orders" || x.For != time.Minute {
		t.Fatalf("extension sent to n%d as %+v", to, x)
	}
	h.runToDeadline()
	h.runToDeadline()
	if to, _ = expectSend[*wire.Extend](h); to != 2 {
		t.Fatalf("extension retry went to n%d, want n2", to)
	}
	h.disconnect(2)
	h.expectFinished(op, OutcomeUnknown, wire.StatusUnavailable)
	h.expectNothingSent()

	for _, tc := range []struct {
		status  wire.Status
		outcome Outcome
	}{
		{wire.StatusOK, OutcomeOK},
		{wire.StatusNotOwner, OutcomeFailed},
		{wire.StatusFenced, OutcomeUnknown},
		{wire.StatusNotLeased, OutcomeFailed},
	} {
		op := h.c.Extend(h.now, d, time.Minute)
		_, x := expectSend[*wire.Extend](h)
		h.reply(2, x.ReqID, tc.status, 3, 0)
		h.expectNothingSent()
		if e := h.expectFinished(op, tc.outcome, tc.status); e.Kind != OpExtend || e.ID != d.ID {
			t.Fatalf("extension answered %s reported as %v", tc.status, e)
		}
	}
}

// An extension the node would refuse is refused without being sent.
func TestExtendOutOfRangeIsRefusedLocally(t *testing.T) {
	h := newHarness(t, testConfig())
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 4}, Lease: 12, From: 2}
	for _, f := range []time.Duration{0, -time.Second, wire.MaxExtend + 1} {
		op := h.c.Extend(h.now, d, f)
		h.expectNothingSent()
		h.expectFinished(op, OutcomeFailed, wire.StatusBadRequest)
	}
	op := h.c.Extend(h.now, Delivery{Queue: "orders", ID: d.ID, Lease: 12}, time.Second)
	h.expectNothingSent()
	h.expectFinished(op, OutcomeFailed, wire.StatusBadRequest)
}

// A smaller window reaches the node holding the subscription at once,
// ahead of a settle queued after it, under a ReqID the subscription then
// answers to: the node's later notice that it lost the queue, sent under
// that ReqID, still moves the subscription. Refreshes carry the new window.
func TestSetWindowTellsTheNodeBeforeLaterSettles(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	h.c.SetWindow("orders", 3)
	h.c.Ack(h.now, Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 1}, Lease: 1, From: 1})
	out := h.sends()
	if len(out) != 2 {
		t.Fatalf("sent %v, want the window update and then the settle", out)
	}
	s, ok := out[0].Msg.(*wire.Subscribe)
	if !ok || out[0].To != 1 || s.Window != 3 || s.Queue != "orders" {
		t.Fatalf("first sent %v to n%d, want a subscribe with window 3 to n1", out[0].Msg, out[0].To)
	}
	if _, ok := out[1].Msg.(*wire.Settle); !ok {
		t.Fatalf("then sent %v, want the settle", out[1].Msg)
	}
	h.c.OnMessage(h.now, 1, &wire.Reply{ReqID: s.ReqID, Status: wire.StatusNotOwner, Owner: 2})
	to, again := expectSend[*wire.Subscribe](h)
	if to != 2 || again.Window != 3 {
		t.Fatalf("after the notice the subscription went to n%d with window %d, want n2 with 3", to, again.Window)
	}
}

// Window changes made before the outbox is drained travel as one update,
// in the place of the first, so the settles between them stay adjacent
// and go out as one batch.
func TestSetWindowChangesCoalesce(t *testing.T) {
	h := newHarness(t, testConfig())
	h.subscribeOn("orders", 1)
	for seq := uint64(1); seq <= 3; seq++ {
		h.c.SetWindow("orders", uint32(4-seq))
		h.c.Ack(h.now, Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: seq}, Lease: seq, From: 1})
	}
	out := h.sends()
	if len(out) != 2 {
		t.Fatalf("sent %d messages (%v), want one window update and one settle batch", len(out), out)
	}
	if s, ok := out[0].Msg.(*wire.Subscribe); !ok || s.Window != 1 {
		t.Fatalf("first sent %v, want a subscribe with window 1", out[0].Msg)
	}
	if b, ok := out[1].Msg.(*wire.SettleBatch); !ok || len(b.Items) != 3 {
		t.Fatalf("then sent %v, want a batch of 3 settles", out[1].Msg)
	}
}

// A subscribe attempt the client gave up on can still be taken up by its
// node (a candidate that answers after it activates, say), which then
// delivers to a client that drops every such delivery as stale. The
// client tells that node to drop the subscription, so the messages go
// back to the queue instead of circling between the node and a client
// that never sees them; one Unsubscribe per burst, and another only
// after a new attempt to that node.
func TestAStaleDeliveryEndsTheSubscriptionItCameFrom(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	h.c.Subscribe(h.now, "orders", 16, 30*time.Second)
	first, s := expectSend[*wire.Subscribe](h)
	h.runToDeadline() // the attempt times out unanswered
	h.runToDeadline() // backoff
	second, s2 := expectSend[*wire.Subscribe](h)
	if second == first {
		t.Fatalf("the retry went to n%d again", second)
	}
	h.reply(second, s2.ReqID, wire.StatusOK, 0, 0)
	h.reply(first, s.ReqID, wire.StatusOK, 0, 0) // the abandoned attempt, taken up late
	h.expectNothingSent()
	for seq := range uint64(3) {
		h.deliver(first, "orders", seq+1, 10+seq)
	}
	h.expectStale(3)
	if to, u := expectSend[*wire.Unsubscribe](h); to != first || u.Queue != "orders" {
		t.Fatalf("the unsubscribe went to n%d for %q, want n%d for orders", to, u.Queue, first)
	}
	if ds := h.deliveries(); len(ds) != 0 {
		t.Fatalf("surfaced %v from the node the client left", ds)
	}

	// The subscription moves back to the first node and away again: a
	// stale delivery from it now comes from a subscription made since.
	h.c.OnMessage(h.now, second, &wire.Reply{ReqID: s2.ReqID, Status: wire.StatusNotOwner, Owner: first})
	to, s3 := expectSend[*wire.Subscribe](h)
	if to != first {
		t.Fatalf("the subscription moved to n%d, want n%d", to, first)
	}
	h.reply(first, s3.ReqID, wire.StatusOK, 0, 0)
	h.deliver(first, "orders", 4, 14)
	if ds := h.deliveries(); len(ds) != 1 {
		t.Fatalf("want the delivery from the node holding the subscription, got %v", ds)
	}
	h.c.OnMessage(h.now, first, &wire.Reply{ReqID: s3.ReqID, Status: wire.StatusNotOwner, Owner: second})
	if to, _ := expectSend[*wire.Subscribe](h); to != second {
		t.Fatalf("the subscription moved to n%d, want n%d", to, second)
	}
	h.deliver(first, "orders", 5, 15)
	h.expectStale(4)
	if to, _ := expectSend[*wire.Unsubscribe](h); to != first {
		t.Fatalf("the second unsubscribe went to n%d, want n%d", to, first)
	}
}
