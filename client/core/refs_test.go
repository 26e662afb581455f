package core

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// An ack at the owner is not bound to a delivering node: it goes to the
// queue's owner, survives that node's disconnect by trying another, and
// follows a refusal that names the new owner, carrying no lease.
func TestAnAckAtTheOwnerFollowsTheQueue(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 2)
	id := wire.MessageID{Producer: 9, Seq: 4}
	op := h.c.AckAtOwner(h.now, "orders", id)
	to, s := expectSend[*wire.Settle](h)
	if to != 2 || s.Nack || s.ID != id || s.Lease != 0 || s.Queue != "orders" {
		t.Fatalf("ack at the owner sent to n%d as %+v, want n2, an ack of %s without a lease", to, s, id)
	}
	h.disconnect(2)
	h.expectNoOpEvents() // a delivery's ack would be Unknown here
	h.runToDeadline()
	to, s = expectSend[*wire.Settle](h)
	if to == 2 {
		t.Fatal("the retry went back to the node that disconnected")
	}
	h.reply(to, s.ReqID, wire.StatusNotOwner, 3, 0)
	to, s = expectSend[*wire.Settle](h)
	if to != 3 || s.ID != id {
		t.Fatalf("the redirect went to n%d as %+v, want n3", to, s)
	}
	h.reply(3, s.ReqID, wire.StatusOK, 0, 77)
	if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Kind != OpAck || e.Index != 77 {
		t.Fatalf("ack at the owner reported as %v", e)
	}
}

// A nack or an extension at the owner carries the owner's lease number
// and follows a redirect; the owner's clean refusal of a lease it does
// not hold ends it Failed, and an extension out of range never leaves.
func TestANackAndAnExtensionAtTheOwnerCarryTheirLease(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	id := wire.MessageID{Producer: 9, Seq: 5}
	nack := h.c.NackAtOwner(h.now, "orders", id, 4242)
	to, s := expectSend[*wire.Settle](h)
	if to != 1 || !s.Nack || s.Lease != 4242 || s.ID != id {
		t.Fatalf("nack at the owner sent to n%d as %+v", to, s)
	}
	h.reply(1, s.ReqID, wire.StatusNotOwner, 2, 0)
	to, s = expectSend[*wire.Settle](h)
	if to != 2 || s.Lease != 4242 {
		t.Fatalf("redirected nack sent to n%d as %+v, want n2 with lease 4242", to, s)
	}
	h.reply(2, s.ReqID, wire.StatusNotLeased, 0, 0)
	h.expectFinished(nack, OutcomeFailed, wire.StatusNotLeased)

	ext := h.c.ExtendAtOwner(h.now, "orders", id, 4243, 30*time.Second)
	to, e := expectSend[*wire.Extend](h)
	if to != 2 || e.Lease != 4243 || e.For != 30*time.Second {
		t.Fatalf("extension at the owner sent to n%d as %+v", to, e)
	}
	h.reply(2, e.ReqID, wire.StatusOK, 0, 0)
	h.expectFinished(ext, OutcomeOK, wire.StatusOK)

	bad := h.c.ExtendAtOwner(h.now, "orders", id, 4243, 0)
	h.expectNothingSent()
	h.expectFinished(bad, OutcomeFailed, wire.StatusBadRequest)
}
