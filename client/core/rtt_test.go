package core

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// The estimator follows RFC 6298's arithmetic: the first sample sets the
// mean and half of it as the deviation; later ones move the mean by an
// eighth and the deviation by a quarter of their distance.
func TestRTTEstimatorSmoothsAsRFC6298(t *testing.T) {
	var e rttEstimator
	e.observe(40 * time.Millisecond)
	if e.srtt != 40*time.Millisecond || e.rttvar != 20*time.Millisecond {
		t.Fatalf("after one sample srtt %v rttvar %v, want 40ms and 20ms", e.srtt, e.rttvar)
	}
	e.observe(8 * time.Millisecond)
	// rttvar += (|40-8| - 20) / 4 = 3; srtt += (8 - 40) / 8 = -4.
	if e.srtt != 36*time.Millisecond || e.rttvar != 23*time.Millisecond {
		t.Fatalf("after two samples srtt %v rttvar %v, want 36ms and 23ms", e.srtt, e.rttvar)
	}
	if d := e.delay(HedgeFloor, time.Second); d != 36*time.Millisecond+4*23*time.Millisecond {
		t.Fatalf("delay %v, want srtt + 4 rttvar = 128ms", d)
	}
	for range 100 {
		e.observe(30 * time.Millisecond)
	}
	if d := e.delay(HedgeFloor, time.Second); d < 59*time.Millisecond || d > 61*time.Millisecond {
		t.Fatalf("after steady 30ms confirmations the delay is %v, want about twice that", d)
	}
}

// The delay is the ceiling until a sample arrives, and stays within
// [floor, ceiling] whatever the samples: a steady fast network settles
// on the floor, a slow one on the ceiling.
func TestRTTEstimatorDelayStaysWithinItsBounds(t *testing.T) {
	const ceiling = 200 * time.Millisecond
	var e rttEstimator
	if d := e.delay(HedgeFloor, ceiling); d != ceiling {
		t.Fatalf("with no sample the delay is %v, want the ceiling %v", d, ceiling)
	}
	for range 100 {
		e.observe(time.Millisecond)
	}
	if d := e.delay(HedgeFloor, ceiling); d != HedgeFloor {
		t.Fatalf("after steady 1ms confirmations the delay is %v, want the floor %v", d, HedgeFloor)
	}
	for range 100 {
		e.observe(150 * time.Millisecond)
	}
	if d := e.delay(HedgeFloor, ceiling); d != ceiling {
		t.Fatalf("after steady 150ms confirmations the delay is %v, want the ceiling %v", d, ceiling)
	}
	e = rttEstimator{}
	for i := range 200 {
		// Confirmations alternating 20ms and 60ms: a mean near 40ms and
		// a deviation near 20ms put the delay between the two bounds.
		e.observe(time.Duration(20+40*(i%2)) * time.Millisecond)
	}
	if d := e.delay(HedgeFloor, ceiling); d <= HedgeFloor || d >= ceiling {
		t.Fatalf("with confirmations of 20-60ms the delay is %v, want it strictly inside (%v, %v)", d, HedgeFloor, ceiling)
	}
}

// confirmIn publishes once to the cached owner and has it confirm after
// took, so the client learns its confirmation time.
func (h *harness) confirmIn(owner uint32, took time.Duration) {
	h.t.Helper()
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	to, p := expectSend[*wire.Publish](h)
	if to != owner {
		h.t.Fatalf("the publish went to n%d, want the owner n%d", to, owner)
	}
	h.advance(took)
	h.reply(owner, p.ReqID, wire.StatusOK, 0, 1)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// A client whose publishes are confirmed in a couple of milliseconds
// hedges a publish to an owner that went silent at the floor, 50ms in,
// instead of the ceiling's 200ms: on a fast network it leaves a dead
// owner four times sooner. Its publishes' confirmation times are what it
// learned from.
func TestAdaptiveHedgeLeavesASilentOwnerSoonOnAFastNetwork(t *testing.T) {
	h := newHarness(t, testConfig())
	if d := h.c.HedgeDelay(); d != DefaultHedgeAfter {
		t.Fatalf("a fresh client hedges after %v, want %v until it has seen a confirmation", d, DefaultHedgeAfter)
	}
	h.learnOwner("orders", 1)
	for range 20 {
		h.confirmIn(1, 2*time.Millisecond)
	}
	if d := h.c.HedgeDelay(); d != HedgeFloor {
		t.Fatalf("after 2ms confirmations the hedge delay is %v, want the floor %v", d, HedgeFloor)
	}
	_, id := h.c.Publish(h.now, "orders", []byte("into the silence"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	h.advance(HedgeFloor - 1)
	h.expectNothingSent()
	h.advance(1)
	to, p2 := expectSend[*wire.Publish](h)
	if to == 1 || p2.ID != id || p2.ReqID == p1.ReqID {
		t.Fatalf("the hedge went to n%d with %s (ReqID %d), want another node with %s under a new ReqID", to, p2.ID, p2.ReqID, id)
	}
}

// Slow confirmations raise the delay to the ceiling, so a loaded owner
// is not hedged while it is still working through its queue.
func TestAdaptiveHedgeWaitsLongerOnASlowOwner(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	for range 20 {
		h.confirmIn(1, 120*time.Millisecond)
	}
	if d := h.c.HedgeDelay(); d != DefaultHedgeAfter {
		t.Fatalf("after 120ms confirmations the hedge delay is %v, want the ceiling %v", d, DefaultHedgeAfter)
	}
	h.c.Publish(h.now, "orders", []byte("y"), 0)
	expectSend[*wire.Publish](h)
	h.advance(DefaultHedgeAfter - 1)
	h.expectNothingSent()
}

// A publish that needed more than one attempt is not a sample: the
// failover it rode through says nothing of a healthy owner, and its
// reply may answer a hedge sent long after the first attempt. Nor is a
// fixed delay ever moved by samples.
func TestHedgedPublishesTeachTheClientNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	for range 20 {
		h.confirmIn(1, 2*time.Millisecond)
	}
	before := h.c.rtt
	op, _ := h.c.Publish(h.now, "orders", []byte("z"), 0)
	expectSend[*wire.Publish](h)
	h.advance(HedgeFloor)
	to, p2 := expectSend[*wire.Publish](h)
	h.advance(900 * time.Millisecond)
	h.reply(to, p2.ReqID, wire.StatusOK, 0, 2)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	if h.c.rtt != before {
		t.Fatalf("a hedged publish moved the estimate from %+v to %+v", before, h.c.rtt)
	}

	fixed := newHarness(t, hedgedConfig())
	fixed.learnOwner("orders", 1)
	fixed.confirmIn(1, time.Millisecond)
	if d := fixed.c.HedgeDelay(); d != hedgeAfter {
		t.Fatalf("a fixed HedgeAfter of %v became %v after a sample", hedgeAfter, d)
	}
}

// Hedges to an owner that stays silent space out: the first goes at the
// learned delay, each next one waits twice as long as the last, up to
// the ceiling, so a long outage costs no more hedges than the fixed
// default would send.
func TestAdaptiveHedgesBackOffWhileTheOwnerStaysSilent(t *testing.T) {
	cfg := testConfig()
	cfg.MaxAttempts, cfg.RetryFor = 0, 10*time.Second // not bounded by a count
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	for range 20 {
		h.confirmIn(1, 2*time.Millisecond)
	}
	h.c.Publish(h.now, "orders", []byte("into the silence"), 0)
	expectSend[*wire.Publish](h)
	began := h.now
	var at []time.Duration
	for len(at) < 5 {
		next, ok := h.c.NextDeadline()
		if !ok {
			t.Fatal("the publish has no deadline while its owner is silent")
		}
		h.advance(next.Sub(h.now))
		to, p := expectSend[*wire.Publish](h)
		at = append(at, h.now.Sub(began))
		// The node asked names the silent owner, which is no help: the
		// hedge's attempt is over and the next waits for its time.
		h.reply(to, p.ReqID, wire.StatusNotOwner, 1, 0)
		h.expectNothingSent()
	}
	want := []time.Duration{50, 150, 350, 550, 750}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(at, want) {
		t.Fatalf("hedges went out at %v after the first attempt, want %v", at, want)
	}
}
