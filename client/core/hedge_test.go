package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// hedgeAfter is the hedge delay of hedgedConfig: well inside its
// RequestTimeout of a second, so a story sees several hedges before the
// first attempt times out.
const hedgeAfter = 200 * time.Millisecond

// hedgedConfig is testConfig with an explicit hedge delay, so the stories
// below do not depend on the default.
func hedgedConfig() Config {
	cfg := testConfig()
	cfg.HedgeAfter = hedgeAfter
	return cfg
}

// expectHedge waits out HedgeAfter from now and requires exactly one
// publish then, to a node other than silent, carrying id under a ReqID
// not yet used.
func (h *harness) expectHedge(silent uint32, id wire.MessageID, used ...uint64) (uint32, *wire.Publish) {
	h.t.Helper()
	h.advance(hedgeAfter - 1)
	h.expectNothingSent()
	h.advance(1)
	to, p := expectSend[*wire.Publish](h)
	if to == silent || p.ID != id {
		h.t.Fatalf("the hedge went to n%d with %s; want a node other than the silent n%d, with %s", to, p.ID, silent, id)
	}
	for _, u := range used {
		if p.ReqID == u {
			h.t.Fatalf("the hedge reuses ReqID %d", u)
		}
	}
	return to, p
}

// The owner goes silent (paused, or cut off without a reset). Once the
// publish has waited HedgeAfter, the client sends it to another node as
// well; that node names the new owner, the hedge follows at once, and
// the publish is confirmed long before the first attempt's
// RequestTimeout. The silent node's late reply changes nothing, and the
// next publish goes straight to the new owner.
func TestHedgeFindsTheNewOwnerBeforeTimeout(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	h.learnOwner("orders", 1)
	began := h.now
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)

	to, p2 := h.expectHedge(1, id, p1.ReqID)
	owner := otherNode(1, to)
	h.reply(to, p2.ReqID, wire.StatusNotOwner, owner, 0)
	next, p3 := expectSend[*wire.Publish](h)
	if next != owner || p3.ID != id {
		t.Fatalf("the redirected hedge went to n%d with %s, want the named n%d with %s", next, p3.ID, owner, id)
	}
	h.reply(owner, p3.ReqID, wire.StatusOK, 0, 12)
	e := h.expectFinished(op, OutcomeOK, wire.StatusOK)
	if took := h.now.Sub(began); took != hedgeAfter {
		t.Fatalf("the publish took %v, want it confirmed at the hedge, %v in", took, hedgeAfter)
	}
	if e.Index != 12 || e.Attempts != 3 {
		t.Fatalf("want the new owner's index and three attempts, got %v", e)
	}

	h.reply(1, p1.ReqID, wire.StatusOK, 0, 12) // the silent node wakes up
	h.expectNoOpEvents()
	h.expectNothingSent()
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a finished hedged publish left a deadline behind")
	}
	h.c.Publish(h.now, "orders", []byte("y"), 0)
	if to, _ := expectSend[*wire.Publish](h); to != owner {
		t.Fatalf("the next publish went to n%d, want the new owner n%d", to, owner)
	}
}

// A fresh client knows no owner: the node it asks first names the
// silent one, and the redirect goes there and meets silence. The hedge
// then asks elsewhere, and a node that knows of the failover answers
// with the new owner.
func TestHedgeRescuesAFreshClientSentToASilentOwner(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	first, p1 := expectSend[*wire.Publish](h)
	silent := otherNode(first, 0)
	h.reply(first, p1.ReqID, wire.StatusNotOwner, silent, 0)
	if to, _ := expectSend[*wire.Publish](h); to != silent {
		t.Fatalf("the redirect went to n%d, want the named n%d", to, silent)
	}
	to, p3 := h.expectHedge(silent, id)
	owner := otherNode(silent, to)
	h.reply(to, p3.ReqID, wire.StatusNotOwner, owner, 0)
	next, p4 := expectSend[*wire.Publish](h)
	if next != owner {
		t.Fatalf("the redirected hedge went to n%d, want n%d", next, owner)
	}
	h.reply(owner, p4.ReqID, wire.StatusOK, 0, 1)
	if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Attempts != 4 {
		t.Fatalf("want four attempts, got %v", e)
	}
}

// A hedge refused without a new name (it names the silent node itself,
// names no one, or the node is not ready) only leaves the first attempt
// waiting: nothing is sent at once, the next hedge goes out only
// HedgeAfter after the last, and the operation keeps its first attempt's
// RequestTimeout, after which it backs off and retries as before.
func TestRefusedHedgeWaitsForTheNextHedge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status wire.Status
		owner  uint32
	}{
		{"not owner, naming the silent node", wire.StatusNotOwner, 1},
		{"not owner, naming no one", wire.StatusNotOwner, 0},
		{"unavailable", wire.StatusUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hedgedConfig()
			cfg.MaxAttempts = 20
			h := newHarness(t, cfg)
			h.learnOwner("orders", 1)
			began := h.now
			op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
			expectSend[*wire.Publish](h)
			hedges, sentAt := 0, h.now
			for sentAt.Add(hedgeAfter).Before(began.Add(time.Second)) {
				h.advance(sentAt.Add(hedgeAfter).Sub(h.now) - 1)
				h.expectNothingSent()
				h.advance(1)
				to, p := expectSend[*wire.Publish](h)
				if to == 1 || p.ID != id {
					t.Fatalf("hedge %d went to n%d with %s, want another node than n1 with %s", hedges+1, to, p.ID, id)
				}
				hedges, sentAt = hedges+1, h.now
				// The refusal comes a little later; the next hedge still
				// counts from this one.
				h.advance(50 * time.Millisecond)
				h.reply(to, p.ReqID, tc.status, tc.owner, 0)
				h.expectNothingSent()
				if at, _ := h.c.NextDeadline(); !at.Equal(sentAt.Add(hedgeAfter)) {
					t.Fatalf("after hedge %d was refused the next deadline is %v away, want the next hedge, %v away",
						hedges, at.Sub(h.now), sentAt.Add(hedgeAfter).Sub(h.now))
				}
			}
			if hedges != 4 {
				t.Fatalf("%d hedges in the first attempt's second, want 4 (one per %v)", hedges, hedgeAfter)
			}
			h.advance(began.Add(time.Second).Sub(h.now))
			h.expectNothingSent()
			h.expectNoOpEvents()
			h.runToDeadline() // the backoff
			to, p := expectSend[*wire.Publish](h)
			h.reply(to, p.ReqID, wire.StatusOK, 0, 1)
			if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Attempts != 6 {
				t.Fatalf("want six attempts (one, four hedges, one retry), got %v", e)
			}
		})
	}
}

// The first attempt's answer arrives after the hedge went out: the
// publish is confirmed once, and the hedge's reply, whatever it says,
// is a straggler.
func TestFirstAttemptAnswersAfterTheHedge(t *testing.T) {
	for _, late := range []wire.Status{wire.StatusOK, wire.StatusNotOwner, wire.StatusUnavailable} {
		t.Run(late.String(), func(t *testing.T) {
			h := newHarness(t, hedgedConfig())
			h.learnOwner("orders", 1)
			op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
			_, p1 := expectSend[*wire.Publish](h)
			to, p2 := h.expectHedge(1, id, p1.ReqID)
			h.advance(50 * time.Millisecond)
			h.reply(1, p1.ReqID, wire.StatusOK, 0, 5)
			if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Index != 5 || e.Attempts != 2 {
				t.Fatalf("want the first attempt's index after two attempts, got %v", e)
			}
			h.reply(to, p2.ReqID, late, 1, 5)
			h.expectNoOpEvents()
			h.expectNothingSent()
			if len(h.c.attempts) != 0 {
				t.Fatalf("%d attempts still registered after the publish finished", len(h.c.attempts))
			}
			if owner := h.c.owners["orders"]; owner != 1 {
				t.Fatalf("the straggler moved the cached owner to n%d", owner)
			}
		})
	}
}

// Settles are never hedged: the lease belongs to one owner process. Nor
// are operations that the metadata answers, where a second attempt would
// race the first. Each waits out its RequestTimeout with one attempt.
func TestUnhedgedOperationsWaitAlone(t *testing.T) {
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 9, Seq: 1}, Lease: 3, From: 2}
	for _, tc := range []struct {
		name  string
		start func(h *harness) OpID
	}{
		{"ack", func(h *harness) OpID { return h.c.Ack(h.now, d) }},
		{"nack", func(h *harness) OpID { return h.c.Nack(h.now, d) }},
		{"create", func(h *harness) OpID { return h.c.CreateQueue(h.now, "orders", wire.PolicyMajority) }},
		{"delete", func(h *harness) OpID { return h.c.DeleteQueue(h.now, "orders") }},
		{"set detection", func(h *harness) OpID {
			return h.c.SetDetection(h.now, wire.SetDetection{Mode: 1, Interval: time.Second})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, hedgedConfig())
			tc.start(h)
			if out := h.sends(); len(out) != 1 {
				t.Fatalf("want one request, got %s", describeAll(out))
			}
			if at, _ := h.c.NextDeadline(); at.Sub(h.now) != time.Second {
				t.Fatalf("the next deadline is %v away, want only the reply timeout", at.Sub(h.now))
			}
			for range 9 {
				h.advance(100*time.Millisecond - 1)
				h.expectNothingSent()
			}
			h.expectNoOpEvents()
		})
	}
}

// A subscribe to a silent owner is hedged like a publish: the
// subscription stands on the node that confirms it first, and the silent
// node's late confirmation does not establish it twice.
func TestSubscribeHedgeEstablishesOnTheNewOwner(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	h.learnOwner("orders", 1)
	op := h.c.Subscribe(h.now, "orders", 16, 30*time.Second)
	_, s1 := expectSend[*wire.Subscribe](h)
	h.advance(hedgeAfter)
	to, s2 := expectSend[*wire.Subscribe](h)
	if to == 1 || s2.ReqID == s1.ReqID || s2.Window != 16 {
		t.Fatalf("the subscribe hedge went to n%d as %+v", to, s2)
	}
	h.reply(to, s2.ReqID, wire.StatusOK, 0, 0)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	h.reply(1, s1.ReqID, wire.StatusOK, 0, 0)
	h.expectNoOpEvents()
	h.expectNothingSent()
	if wait := h.runToDeadline(); wait != DefaultSubscriptionRefresh {
		t.Fatalf("the next deadline came after %v, want the refresh", wait)
	}
	if next, _ := expectSend[*wire.Subscribe](h); next != to {
		t.Fatalf("the refresh went to n%d, want n%d, where the hedge stood", next, to)
	}
}

// Unsubscribing while a hedged subscribe is in flight at two nodes asks
// both to drop it, since either may take it up.
func TestUnsubscribeReachesEveryAttemptInFlight(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	h.learnOwner("orders", 1)
	h.c.Subscribe(h.now, "orders", 16, 30*time.Second)
	expectSend[*wire.Subscribe](h)
	h.advance(hedgeAfter)
	to, _ := expectSend[*wire.Subscribe](h)
	h.c.Unsubscribe(h.now, "orders")
	out := h.sends()
	if len(out) != 2 || out[0].To != 1 || out[1].To != to {
		t.Fatalf("want an unsubscribe to n1 and to n%d, got %s", to, describeAll(out))
	}
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("an ended subscription still has work")
	}
}

// Hedging keeps the outcome honest: the operation is Failed only if no
// attempt may have acted, and a refusal that arrives while another
// attempt is in flight never ends it, since that attempt may have acted
// and may yet be confirmed.
func TestHedgedOutcomeIsFailedOnlyIfNothingActed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hedge is the hedge's answer; first, the first attempt's after it.
		hedge, first wire.Status
		want         Outcome
	}{
		{"clean hedge refusal, then a definite one", wire.StatusUnavailable, wire.StatusNoQueue, OutcomeFailed},
		{"definite hedge refusal, then another", wire.StatusNoQueue, wire.StatusNoQueue, OutcomeFailed},
		{"fenced hedge, then a definite refusal", wire.StatusFenced, wire.StatusNoQueue, OutcomeUnknown},
		{"definite hedge refusal, then OK", wire.StatusNoQueue, wire.StatusOK, OutcomeOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, hedgedConfig())
			h.learnOwner("orders", 1)
			op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
			_, p1 := expectSend[*wire.Publish](h)
			to, p2 := h.expectHedge(1, id, p1.ReqID)
			h.reply(to, p2.ReqID, tc.hedge, 0, 0)
			h.expectNoOpEvents()
			h.expectNothingSent()
			h.reply(1, p1.ReqID, tc.first, 0, 0)
			h.expectFinished(op, tc.want, tc.first)
		})
	}
}

// A hedge that times out made its operation ambiguous, even though
// another attempt was still in flight then: definite refusals of every
// other attempt end it Unknown, not Failed. (A hedge still in flight
// when the first attempt is refused is the one attempt in flight, and is
// hedged in turn.)
func TestTimedOutHedgeMakesTheOutcomeUnknown(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	h.learnOwner("orders", 1)
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	silent, _ := h.expectHedge(1, id, p1.ReqID)
	h.reply(1, p1.ReqID, wire.StatusUnavailable, 0, 0)
	h.expectNothingSent()
	second, p2 := h.expectHedge(silent, id)
	// The silent hedge times out while the second is in flight; the
	// second is then alone, and hedged in turn.
	h.advance(time.Second - hedgeAfter)
	third, p3 := expectSend[*wire.Publish](h)
	if third == second || third == silent {
		t.Fatalf("the third hedge went to n%d, with attempts in flight at n%d and n%d", third, second, silent)
	}
	h.expectNoOpEvents()
	h.reply(second, p2.ReqID, wire.StatusNoQueue, 0, 0)
	h.expectNoOpEvents()
	h.reply(third, p3.ReqID, wire.StatusNoQueue, 0, 0)
	h.expectFinished(op, OutcomeUnknown, wire.StatusNoQueue)
}

// A disconnect ends only the attempt in flight on that connection; the
// hedge beside it goes on and confirms the publish.
func TestDisconnectEndsOnlyItsAttempt(t *testing.T) {
	h := newHarness(t, hedgedConfig())
	h.learnOwner("orders", 1)
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	to, p2 := h.expectHedge(1, id, p1.ReqID)
	h.disconnect(1)
	h.expectNothingSent()
	h.expectNoOpEvents()
	h.reply(to, p2.ReqID, wire.StatusOK, 0, 3)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// Two nodes that name each other while the owner is silent do not bounce
// hedges at network speed: after a few redirects the hedge waits for the
// next HedgeAfter.
func TestHedgeRedirectLoopIsBounded(t *testing.T) {
	cfg := hedgedConfig()
	cfg.MaxAttempts = 20
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	_, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	expectSend[*wire.Publish](h)
	to, p := h.expectHedge(1, id)
	for i := range maxQuickRedirects + 1 {
		h.reply(to, p.ReqID, wire.StatusNotOwner, 5-to, 0)
		if i == maxQuickRedirects {
			break
		}
		to, p = expectSend[*wire.Publish](h)
	}
	h.expectNothingSent()
	if at, _ := h.c.NextDeadline(); at.Sub(h.now) != hedgeAfter {
		t.Fatalf("after the redirects ran out the next deadline is %v away, want the next hedge's %v", at.Sub(h.now), hedgeAfter)
	}
}

// Hedges are attempts: they stop once the operation's retry deadline has
// passed, and the operation then ends when its last attempt times out.
func TestHedgesStopAtTheRetryDeadline(t *testing.T) {
	cfg := hedgedConfig()
	cfg.MaxAttempts, cfg.RetryFor = 0, 500*time.Millisecond
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	began := h.now
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	sent := 0
	for range 100 {
		for _, o := range h.sends() {
			sent++
			if p, ok := o.Msg.(*wire.Publish); ok && o.To != 1 {
				h.reply(o.To, p.ReqID, wire.StatusNotOwner, 1, 0)
			}
		}
		if evs := h.opEvents(); len(evs) > 0 {
			if evs[0].Op != op || evs[0].Outcome != OutcomeUnknown || h.now.Sub(began) != time.Second || sent != 3 {
				t.Fatalf("ended %v after %v and %d requests; want unknown at the first attempt's timeout after 3",
					evs, h.now.Sub(began), sent)
			}
			return
		}
		h.runToDeadline()
	}
	t.Fatalf("the publish is still unfinished after %d requests and %v", sent, h.now.Sub(began))
}

// Hedges count towards MaxAttempts, which bounds the requests an
// operation sends: a caller that allows one attempt has its request reach
// one node only. A hedge never takes the last attempt allowed, which is
// kept for the retry after a timeout.
func TestHedgesCountAsAttempts(t *testing.T) {
	for _, tc := range []struct {
		maxAttempts, hedges int
	}{{1, 0}, {2, 0}, {3, 1}, {5, 3}} {
		t.Run(fmt.Sprintf("%d attempts", tc.maxAttempts), func(t *testing.T) {
			cfg := hedgedConfig()
			cfg.MaxAttempts = tc.maxAttempts
			h := newHarness(t, cfg)
			op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
			silent, _ := expectSend[*wire.Publish](h)
			hedges := 0
			for range 4 {
				h.advance(hedgeAfter)
				for _, o := range h.sends() {
					hedges++
					h.reply(o.To, o.Msg.(*wire.Publish).ReqID, wire.StatusNotOwner, silent, 0)
				}
			}
			if hedges != tc.hedges {
				t.Fatalf("%d hedges within the first attempt's timeout, want %d", hedges, tc.hedges)
			}
			h.expectNoOpEvents()
			h.advance(hedgeAfter) // the first attempt times out
			h.expectNothingSent()
			if tc.maxAttempts == 1 {
				h.expectFinished(op, OutcomeUnknown, wire.StatusUnavailable)
				return
			}
			h.expectNoOpEvents()
			h.runToDeadline() // the backoff
			to, p := expectSend[*wire.Publish](h)
			h.reply(to, p.ReqID, wire.StatusOK, 0, 1)
			if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Attempts != tc.hedges+2 {
				t.Fatalf("want %d attempts, got %v", tc.hedges+2, e)
			}
		})
	}
}

// A zero HedgeAfter means the default; a one-node cluster has nowhere to
// hedge to.
func TestHedgeAfterDefaults(t *testing.T) {
	cfg := testConfig()
	cfg.HedgeAfter = 0
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	h.c.Publish(h.now, "orders", []byte("x"), 0)
	expectSend[*wire.Publish](h)
	if wait := h.runToDeadline(); wait != DefaultHedgeAfter {
		t.Fatalf("the first deadline came after %v, want DefaultHedgeAfter", wait)
	}
	if to, _ := expectSend[*wire.Publish](h); to == 1 {
		t.Fatal("the hedge went to the silent node")
	}

	cfg.Nodes = []uint32{1}
	h = newHarness(t, cfg)
	h.c.Publish(h.now, "orders", []byte("x"), 0)
	expectSend[*wire.Publish](h)
	if wait := h.runToDeadline(); wait != cfg.RequestTimeout {
		t.Fatalf("a one-node client's first deadline came after %v, want its reply timeout", wait)
	}
}

// What one operation's hedge learns serves the others: a publish stuck on
// the same silent owner sends its own hedge straight to the new owner
// that another publish's hedge found.
func TestHedgeGoesToTheOwnerAnotherHedgeFound(t *testing.T) {
	cfg := hedgedConfig()
	cfg.Nodes = []uint32{1, 2, 3, 4, 5}
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	first, id := h.c.Publish(h.now, "orders", []byte("a"), 0)
	expectSend[*wire.Publish](h)
	h.advance(hedgeAfter / 2)
	second, _ := h.c.Publish(h.now, "orders", []byte("b"), 0)
	expectSend[*wire.Publish](h)

	h.advance(hedgeAfter / 2)
	to, p := expectSend[*wire.Publish](h)
	if to == 1 || p.ID != id {
		t.Fatalf("the first publish's hedge went to n%d as %s, want another node than n1, as %s", to, p.ID, id)
	}
	// Not the node discovery offers next, so only the cache can send the
	// second hedge there.
	after := func(n uint32) uint32 {
		if n = n%5 + 1; n == 1 {
			n = 2
		}
		return n
	}
	owner := after(after(to))
	h.reply(to, p.ReqID, wire.StatusNotOwner, owner, 0)
	_, p = expectSend[*wire.Publish](h)
	h.reply(owner, p.ReqID, wire.StatusOK, 0, 1)
	h.expectFinished(first, OutcomeOK, wire.StatusOK)

	h.advance(hedgeAfter / 2)
	next, p := expectSend[*wire.Publish](h)
	if next != owner {
		t.Fatalf("the second publish's hedge went to n%d, want n%d, the owner the first one found", next, owner)
	}
	h.reply(owner, p.ReqID, wire.StatusOK, 0, 2)
	if e := h.expectFinished(second, OutcomeOK, wire.StatusOK); e.Attempts != 2 {
		t.Fatalf("want two attempts, got %v", e)
	}
}
