package core

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// A publish to a node that does not own the queue is redirected at once to
// the owner the refusal names, under a new ReqID but the same MessageID,
// and the client remembers the owner for the next publish.
func TestRedirectOnNotOwnerThenOK(t *testing.T) {
	h := newHarness(t, testConfig())
	op, id := h.c.Publish(h.now, "orders", []byte("hello"), 0)
	if id != (wire.MessageID{Producer: 7, Seq: 1}) {
		t.Fatalf("first publish got ID %s, want p7.1", id)
	}
	first, p1 := expectSend[*wire.Publish](h)
	owner := otherNode(first, 0)
	h.reply(first, p1.ReqID, wire.StatusNotOwner, owner, 0)

	to, p2 := expectSend[*wire.Publish](h)
	if to != owner {
		t.Fatalf("redirect went to n%d, want the named owner n%d", to, owner)
	}
	if p2.ID != id || p2.ReqID == p1.ReqID || !bytes.Equal(p2.Payload, []byte("hello")) {
		t.Fatalf("redirected publish %v should carry ID %s and a new ReqID (was %d)", p2, id, p1.ReqID)
	}
	h.expectNoOpEvents()
	h.reply(owner, p2.ReqID, wire.StatusOK, 0, 42)
	e := h.expectFinished(op, OutcomeOK, wire.StatusOK)
	if e.Index != 42 || e.Attempts != 2 || e.ID != id || e.Kind != OpPublish || e.Queue != "orders" {
		t.Fatalf("finished publish reported %v", e)
	}

	_, id2 := h.c.Publish(h.now, "orders", nil, 0)
	if to, p := expectSend[*wire.Publish](h); to != owner || p.ID != (wire.MessageID{Producer: 7, Seq: 2}) {
		t.Fatalf("next publish went to n%d as %s, want n%d as p7.2", to, p.ID, owner)
	}
	if id2.Seq != 2 {
		t.Fatalf("second publish got seq %d, want 2", id2.Seq)
	}
}

// A fenced reply from a stale owner names the new owner; the client goes
// there at once and the publish is confirmed.
func TestFencedRedirectsToNewOwner(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p := expectSend[*wire.Publish](h)
	h.reply(1, p.ReqID, wire.StatusFenced, 3, 0)
	to, p2 := expectSend[*wire.Publish](h)
	if to != 3 || p2.ID != id {
		t.Fatalf("after fenced the publish went to n%d with %s, want n3 with %s", to, p2.ID, id)
	}
	h.reply(3, p2.ReqID, wire.StatusOK, 0, 9)
	if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Attempts != 2 {
		t.Fatalf("want 2 attempts, got %v", e)
	}
}

// Unavailable replies back off exponentially, with jitter that never
// exceeds the nominal delay nor falls below half of it, up to the cap.
// An unavailable owner is still the owner while the backoff ramps up;
// the retry after the first wait at the cap asks another node.
func TestUnavailableBacksOffWithJitter(t *testing.T) {
	cfg := testConfig()
	cfg.MaxAttempts = 8
	cfg.MaxBackoff = 400 * time.Millisecond
	h := newHarness(t, cfg)
	h.learnOwner("orders", 2)
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	to, p := expectSend[*wire.Publish](h)

	nominal := []time.Duration{100, 200, 400, 400, 400}
	for i, n := range nominal {
		n *= time.Millisecond
		h.reply(to, p.ReqID, wire.StatusUnavailable, 0, 0)
		h.expectNothingSent()
		next, ok := h.c.NextDeadline()
		if !ok {
			t.Fatalf("backoff %d: no deadline pending", i)
		}
		if wait := next.Sub(h.now); wait < n/2 || wait > n {
			t.Fatalf("backoff %d waits %v, want within [%v, %v]", i, wait, n/2, n)
		}
		// One nanosecond early, nothing happens.
		h.advance(next.Sub(h.now) - 1)
		h.expectNothingSent()
		h.advance(1)
		to, p = expectSend[*wire.Publish](h)
		switch {
		case i < 2 && to != 2:
			t.Fatalf("retry %d went to n%d; an unavailable owner is still the owner while the backoff ramps up", i, to)
		case i == 2 && to == 2:
			t.Fatalf("retry %d went to n2 again after a wait at the cap; want another node asked", i)
		}
	}
	h.reply(to, p.ReqID, wire.StatusOK, 0, 5)
	if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Attempts != len(nominal)+1 {
		t.Fatalf("want %d attempts, got %v", len(nominal)+1, e)
	}
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a client with nothing in flight still has a deadline")
	}
}

// A node removed from the cluster while it was down runs on with the
// metadata it had, which may name it the owner of a queue; it never
// hears from the metadata again, so it answers unavailable for good. A
// client whose cache names it asks it again only until the backoff
// reaches its cap, then asks another node, which names the real owner
// (seed 49899: two subscribers asked a removed n5 for eight seconds).
func TestOwnerUnavailableForGoodIsLookedUpAgain(t *testing.T) {
	cfg := unhedgedConfig()
	cfg.MaxAttempts = 0
	cfg.RetryFor = time.Minute
	h := newHarness(t, cfg)
	h.learnOwner("orders", 3)
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	to, p := expectSend[*wire.Publish](h)
	// 100 ms doubled five times passes DefaultMaxBackoff (2 s): the sixth
	// unavailable answer is met with the longest wait.
	for i := range 6 {
		if to != 3 {
			t.Fatalf("attempt %d went to n%d before the backoff reached its cap; want the owner n3", i+1, to)
		}
		h.reply(3, p.ReqID, wire.StatusUnavailable, 0, 0)
		h.runToDeadline()
		to, p = expectSend[*wire.Publish](h)
	}
	if to == 3 {
		t.Fatal("the owner answered unavailable through the whole backoff ramp and was asked again; want another node")
	}
	h.reply(to, p.ReqID, wire.StatusNotOwner, 2, 0)
	to, p = expectSend[*wire.Publish](h)
	if to != 2 {
		t.Fatalf("the redirect went to n%d, want n2", to)
	}
	h.reply(2, p.ReqID, wire.StatusOK, 0, 9)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// A publish that times out is ambiguous: the client forgets the owner,
// backs off, and resends the same MessageID elsewhere; the server's
// deduplication makes the confirmation safe.
func TestTimeoutRetriesWithSameMessageID(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	h.learnOwner("orders", 1)
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	if next, _ := h.c.NextDeadline(); !next.Equal(h.now.Add(time.Second)) {
		t.Fatalf("reply deadline is %v, want now+RequestTimeout", next.Sub(h.now))
	}
	h.advance(time.Second)
	h.expectNothingSent()
	h.expectNoOpEvents()
	if wait := h.runToDeadline(); wait < 50*time.Millisecond || wait > 100*time.Millisecond {
		t.Fatalf("retry after a timeout waited %v, want the first backoff", wait)
	}
	to, p2 := expectSend[*wire.Publish](h)
	if to == 1 || p2.ID != id || p2.ReqID == p1.ReqID {
		t.Fatalf("retry went to n%d as %v; want another node, same ID %s, new ReqID", to, p2, id)
	}
	h.reply(to, p2.ReqID, wire.StatusOK, 0, 3)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// Attempts that all time out exhaust the budget and the publish is
// Unknown, never Failed: any of them may have been appended.
func TestTimeoutsExhaustAttemptsAsUnknown(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	for range 5 {
		expectSend[*wire.Publish](h)
		h.expectNoOpEvents()
		h.runToDeadline() // the reply deadline
		if _, ok := h.c.NextDeadline(); ok {
			h.runToDeadline() // the backoff
		}
	}
	h.expectNothingSent()
	e := h.expectFinished(op, OutcomeUnknown, wire.StatusUnavailable)
	if e.Attempts != 5 {
		t.Fatalf("want all 5 attempts used, got %v", e)
	}
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a finished operation left a deadline behind")
	}
}

// With no owner known, consecutive attempts walk the whole fallback list
// instead of hammering one dead node.
func TestDiscoveryRotatesThroughNodes(t *testing.T) {
	h := newHarness(t, testConfig())
	h.c.DeleteQueue(h.now, "orders")
	seen := map[uint32]int{}
	for range 3 {
		to, _ := expectSend[*wire.DeleteQueue](h)
		seen[to]++
		h.runToDeadline()
		h.runToDeadline()
	}
	if len(seen) != 3 {
		t.Fatalf("three timed-out attempts went to %v, want each node once", seen)
	}
}

// A definite refusal with no ambiguous attempt before it is Failed, and a
// clean not-owner redirect does not count as ambiguous.
func TestDefiniteFailureWithoutAmbiguityIsFailed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		redirect bool
		status   wire.Status
	}{
		{"queue exists", false, wire.StatusQueueExists},
		{"bad request", false, wire.StatusBadRequest},
		{"queue exists after a clean redirect", true, wire.StatusQueueExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			op := h.c.CreateQueue(h.now, "orders", wire.PolicyAll)
			to, m := expectSend[*wire.CreateQueue](h)
			if m.Policy != wire.PolicyAll || m.Queue != "orders" {
				t.Fatalf("create sent as %+v", m)
			}
			if tc.redirect {
				leader := otherNode(to, 0)
				h.reply(to, m.ReqID, wire.StatusNotOwner, leader, 0)
				to, m = expectSend[*wire.CreateQueue](h)
				if to != leader {
					t.Fatalf("create redirect went to n%d, want n%d", to, leader)
				}
			}
			h.reply(to, m.ReqID, tc.status, 0, 0)
			h.expectNothingSent()
			h.expectFinished(op, OutcomeFailed, tc.status)
		})
	}
}

// A definite refusal after an attempt that may have been acted on is
// Unknown: "queue exists" may be our own first attempt's doing.
func TestDefiniteFailureAfterAmbiguityIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(h *harness, to uint32, reqID uint64)
	}{
		{"timeout", func(h *harness, to uint32, reqID uint64) { h.runToDeadline(); h.runToDeadline() }},
		{"disconnect", func(h *harness, to uint32, reqID uint64) { h.disconnect(to); h.runToDeadline() }},
		{"fenced", func(h *harness, to uint32, reqID uint64) {
			h.reply(to, reqID, wire.StatusFenced, otherNode(to, 0), 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			op := h.c.CreateQueue(h.now, "orders", wire.PolicyMajority)
			to, m := expectSend[*wire.CreateQueue](h)
			tc.spoil(h, to, m.ReqID)
			to, m = expectSend[*wire.CreateQueue](h)
			h.reply(to, m.ReqID, wire.StatusQueueExists, 0, 0)
			e := h.expectFinished(op, OutcomeUnknown, wire.StatusQueueExists)
			if e.Attempts != 2 {
				t.Fatalf("want 2 attempts, got %v", e)
			}
		})
	}
}

// A disconnect while a publish is in flight makes it ambiguous; after a
// backoff it goes, with the same ID, to a node rediscovered from the
// fallback list rather than to the dead one.
func TestDisconnectMidFlightRetriesToRediscoveredNode(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 2)
	op, id := h.c.Publish(h.now, "orders", []byte("x"), 0)
	expectSend[*wire.Publish](h)
	h.disconnect(2)
	h.expectNothingSent()
	h.expectNoOpEvents()
	if wait := h.runToDeadline(); wait > 100*time.Millisecond {
		t.Fatalf("retry after a disconnect waited %v, want at most one base backoff", wait)
	}
	to, p := expectSend[*wire.Publish](h)
	if to == 2 || !contains(to) || p.ID != id {
		t.Fatalf("retry went to n%d with %s; want a live fallback node with %s", to, p.ID, id)
	}
	// The rediscovered node is not the owner and says so.
	h.reply(to, p.ReqID, wire.StatusNotOwner, 3, 0)
	to, p = expectSend[*wire.Publish](h)
	if to != 3 {
		t.Fatalf("redirect went to n%d, want n3", to)
	}
	h.reply(3, p.ReqID, wire.StatusOK, 0, 8)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// Replies the client did not ask for are ignored: an unknown ReqID, a
// reply from the wrong node, a duplicate after the operation finished,
// and a stale refusal to an earlier attempt.
func TestStaleAndDuplicateRepliesIgnored(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	h.learnOwner("orders", 1)
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)

	h.reply(1, p1.ReqID+100, wire.StatusOK, 0, 1) // never sent
	h.reply(2, p1.ReqID, wire.StatusOK, 0, 1)     // not where it went
	h.c.OnMessage(h.now, 1, &wire.Subscribe{ReqID: p1.ReqID})
	h.expectNoOpEvents()
	h.expectNothingSent()

	h.runToDeadline() // timeout
	h.runToDeadline() // backoff
	to, p2 := expectSend[*wire.Publish](h)
	h.reply(1, p1.ReqID, wire.StatusNotOwner, 3, 0) // late refusal of attempt 1
	h.expectNothingSent()
	h.expectNoOpEvents()

	h.reply(to, p2.ReqID, wire.StatusOK, 0, 4)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	h.reply(to, p2.ReqID, wire.StatusOK, 0, 4)          // duplicate
	h.reply(to, p2.ReqID, wire.StatusUnavailable, 0, 0) // contradiction after the fact
	h.expectNoOpEvents()
	h.expectNothingSent()
}

// A late OK to an earlier attempt proves the operation happened, even
// while a retry is outstanding; the retry's own reply is then ignored.
func TestLateOKFromEarlierAttemptFinishes(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	h.learnOwner("orders", 1)
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	h.runToDeadline()
	h.runToDeadline()
	to, p2 := expectSend[*wire.Publish](h)
	h.reply(1, p1.ReqID, wire.StatusOK, 0, 11)
	if e := h.expectFinished(op, OutcomeOK, wire.StatusOK); e.Index != 11 {
		t.Fatalf("want the late reply's index, got %v", e)
	}
	h.reply(to, p2.ReqID, wire.StatusOK, 0, 11)
	h.expectNoOpEvents()
}

// Two nodes that name each other as owner do not bounce a request back
// and forth at network speed: after a few redirects the client backs off.
func TestRedirectLoopBacksOff(t *testing.T) {
	cfg := testConfig()
	cfg.MaxAttempts = 10
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	to, p := expectSend[*wire.Publish](h)
	for i := range maxQuickRedirects {
		h.reply(to, p.ReqID, wire.StatusNotOwner, 3-to, 0)
		to, p = expectSend[*wire.Publish](h)
		if to != 2-uint32(i%2) {
			t.Fatalf("redirect %d went to n%d", i, to)
		}
	}
	h.reply(to, p.ReqID, wire.StatusNotOwner, 3-to, 0)
	h.expectNothingSent()
	h.runToDeadline()
	if next, _ := expectSend[*wire.Publish](h); next != 3-to {
		t.Fatalf("after backing off the publish went to n%d, want the named n%d", next, 3-to)
	}
	h.expectNoOpEvents()
	if last := h.c.live[len(h.c.live)-1]; last.id != op || last.phase == phaseDone {
		t.Fatalf("the publish should still be in flight, it is in phase %s", last.phase)
	}
}

// Inputs the server would refuse finish at once as Failed, with nothing
// sent, and with a detail that says what was wrong and what is accepted:
// no node saw the request, so the client's own words are all the caller
// gets.
func TestInvalidInputsFailAtOnce(t *testing.T) {
	long := strings.Repeat("q", wire.MaxQueueNameLen+1)
	d := Delivery{Queue: "orders", ID: wire.MessageID{Producer: 1, Seq: 1}, Lease: 1, From: 2}
	noFrom := d
	noFrom.From = 0
	for _, tc := range []struct {
		name   string
		start  func(c *Client) OpID
		kind   OpKind
		status wire.Status
		detail string
	}{
		{"empty queue name", func(c *Client) OpID { return c.DeleteQueue(t0, "") }, OpDelete, wire.StatusBadRequest,
			"queue name is 0 bytes long: a name is 1 to 200 bytes"},
		{"queue name too long", func(c *Client) OpID { op, _ := c.Publish(t0, long, nil, 0); return op }, OpPublish, wire.StatusBadRequest,
			"queue name is 201 bytes long: a name is 1 to 200 bytes"},
		{"payload too large", func(c *Client) OpID {
			op, _ := c.Publish(t0, "orders", make([]byte, wire.MaxPayloadSize+1), 0)
			return op
		}, OpPublish, wire.StatusTooLarge, "payload of 1048577 bytes exceeds 1048576: a message carries at most 1048576 bytes"},
		{"negative delay", func(c *Client) OpID { op, _ := c.Publish(t0, "orders", nil, -1); return op }, OpPublish, wire.StatusBadRequest,
			"delay -1ns is negative: a message's delay is zero or more"},
		{"unknown policy", func(c *Client) OpID { return c.CreateQueue(t0, "orders", 9) }, OpCreate, wire.StatusBadRequest,
			"unknown confirmation policy 9: want 0 (majority), 1 (all) or 2 (owner-only)"},
		{"create with an empty name", func(c *Client) OpID { return c.CreateQueue(t0, "", wire.PolicyMajority) }, OpCreate, wire.StatusBadRequest,
			"queue name is 0 bytes long"},
		{"zero window", func(c *Client) OpID { return c.Subscribe(t0, "orders", 0, time.Second) }, OpSubscribe, wire.StatusBadRequest,
			"subscription window is 0: it must allow at least one unsettled delivery"},
		{"zero lease", func(c *Client) OpID { return c.Subscribe(t0, "orders", 1, 0) }, OpSubscribe, wire.StatusBadRequest,
			"lease 0s is not positive: a delivery must stay leased for some time"},
		{"negative lease", func(c *Client) OpID { return c.Subscribe(t0, "orders", 1, -time.Second) }, OpSubscribe, wire.StatusBadRequest,
			"lease -1s is not positive"},
		{"long queue subscribe", func(c *Client) OpID { return c.Subscribe(t0, long, 1, time.Second) }, OpSubscribe, wire.StatusBadRequest,
			"queue name is 201 bytes long"},
		{"settle without a node", func(c *Client) OpID { return c.Ack(t0, noFrom) }, OpAck, wire.StatusBadRequest,
			"delivery of p1.1 names no node (From is 0): a settle goes to the node that delivered the message"},
		{"nack without a node", func(c *Client) OpID { return c.Nack(t0, noFrom) }, OpNack, wire.StatusBadRequest,
			"delivery of p1.1 names no node"},
		{"settle with an empty queue name", func(c *Client) OpID {
			e := d
			e.Queue = ""
			return c.Ack(t0, e)
		}, OpAck, wire.StatusBadRequest, "queue name is 0 bytes long"},
		{"unknown detection mode", func(c *Client) OpID {
			return c.SetDetection(t0, wire.SetDetection{Mode: 9, Interval: time.Second})
		}, OpSetDetection, wire.StatusBadRequest,
			"invalid detection policy (mode 9, interval 1s, grace 0s): want mode 1 (heartbeat) or 2 (eager), a positive interval and a grace of zero or more"},
		{"zero detection interval", func(c *Client) OpID {
			return c.SetDetection(t0, wire.SetDetection{Mode: 1})
		}, OpSetDetection, wire.StatusBadRequest, "invalid detection policy (mode 1, interval 0s, grace 0s)"},
		{"negative detection grace", func(c *Client) OpID {
			return c.SetDetection(t0, wire.SetDetection{Mode: 2, Interval: time.Second, Grace: -time.Second})
		}, OpSetDetection, wire.StatusBadRequest, "invalid detection policy (mode 2, interval 1s, grace -1s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			op := tc.start(h.c)
			h.expectNothingSent()
			e := h.expectFinished(op, OutcomeFailed, tc.status)
			if e.Kind != tc.kind || e.Attempts != 0 {
				t.Fatalf("rejected op reported as %v", e)
			}
			if !strings.Contains(e.Detail, tc.detail) {
				t.Fatalf("rejected op's detail is %q, want one containing %q", e.Detail, tc.detail)
			}
			if _, ok := h.c.NextDeadline(); ok {
				t.Fatal("a rejected op left a deadline")
			}
			h.c.OnDisconnect(t0, 2)
			h.expectNothingSent()
		})
	}
}

// The payload is copied: the application may reuse its buffer while the
// publish is still being retried.
func TestPublishCopiesPayload(t *testing.T) {
	h := newHarness(t, testConfig())
	buf := []byte("first")
	h.c.Publish(h.now, "orders", buf, 0)
	copy(buf, "XXXXX")
	if _, p := expectSend[*wire.Publish](h); string(p.Payload) != "first" {
		t.Fatalf("publish carries %q after the caller reused its buffer", p.Payload)
	}
}

// A deleted queue has no owner; the next operation on it rediscovers.
func TestDeleteForgetsOwner(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 2)
	op := h.c.DeleteQueue(h.now, "orders")
	to, m := expectSend[*wire.DeleteQueue](h)
	if to != 2 {
		t.Fatalf("delete went to n%d, want the owner n2", to)
	}
	h.reply(2, m.ReqID, wire.StatusOK, 0, 0)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	if _, ok := h.c.owners["orders"]; ok {
		t.Fatal("the owner of a deleted queue is still cached")
	}
}

// New refuses configurations that cannot work, naming the problem.
func TestNewPanicsOnInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"zero producer", func(c *Config) { c.Producer = 0 }, "Producer"},
		{"no nodes", func(c *Config) { c.Nodes = nil }, "Nodes is empty"},
		{"zero node", func(c *Config) { c.Nodes = []uint32{1, 0} }, "Nodes[1] is 0"},
		{"duplicate node", func(c *Config) { c.Nodes = []uint32{1, 2, 1} }, "twice"},
		{"no timeout", func(c *Config) { c.RequestTimeout = 0 }, "RequestTimeout"},
		{"no attempts", func(c *Config) { c.MaxAttempts = 0 }, "MaxAttempts"},
		{"no backoff", func(c *Config) { c.RetryBackoff = 0 }, "RetryBackoff"},
		{"cap below base", func(c *Config) { c.MaxBackoff = time.Millisecond }, "MaxBackoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.change(&cfg)
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("New panicked with %v, want a message about %q", r, tc.want)
				}
			}()
			New(cfg, newHarness(t, testConfig()).c.rng)
		})
	}
}

// A tick that finds several deadlines passed handles them in deadline
// order, not in the order the operations were started, so the output does
// not depend on how often the driver ticks.
func TestTickHandlesDeadlinesInOrder(t *testing.T) {
	cfg := testConfig()
	cfg.MaxAttempts = 2
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	first, _ := h.c.Publish(h.now, "orders", []byte("a"), 0)
	_, p1 := expectSend[*wire.Publish](h)
	h.advance(50 * time.Millisecond)
	second, _ := h.c.Publish(h.now, "orders", []byte("b"), 0)
	_, p2 := expectSend[*wire.Publish](h)

	// The second is redirected first, so its retry times out first.
	h.advance(10 * time.Millisecond)
	h.reply(1, p2.ReqID, wire.StatusNotOwner, 2, 0)
	expectSend[*wire.Publish](h)
	h.advance(40 * time.Millisecond)
	h.reply(1, p1.ReqID, wire.StatusNotOwner, 2, 0)
	expectSend[*wire.Publish](h)

	h.advance(2 * time.Second)
	evs := h.opEvents()
	if len(evs) != 2 || evs[0].Op != second || evs[1].Op != first {
		t.Fatalf("want op %d then op %d to time out, got %v", second, first, evs)
	}
}

// Finished operations do not pile up inside a long-lived client.
func TestFinishedOperationsAreSwept(t *testing.T) {
	h := newHarness(t, testConfig())
	h.learnOwner("orders", 1)
	for range 1000 {
		h.c.Publish(h.now, "orders", []byte("x"), 0)
		_, p := expectSend[*wire.Publish](h)
		h.reply(1, p.ReqID, wire.StatusOK, 0, 1)
	}
	if n := len(h.c.live); n > 64 {
		t.Fatalf("%d operation records kept after every operation finished", n)
	}
	if n := len(h.c.attempts); n != 0 {
		t.Fatalf("%d attempts still registered after every operation finished", n)
	}
	if evs := h.opEvents(); len(evs) != 1000 {
		t.Fatalf("want 1000 finished publishes, got %d", len(evs))
	}
}

// Unavailable is a clean refusal: a node that may have acted never says
// it. A definite failure after it is still Failed.
func TestUnavailableIsACleanRefusal(t *testing.T) {
	h := newHarness(t, testConfig())
	op := h.c.CreateQueue(h.now, "orders", wire.PolicyMajority)
	to, m := expectSend[*wire.CreateQueue](h)
	h.reply(to, m.ReqID, wire.StatusUnavailable, 0, 0)
	h.runToDeadline()
	to, m = expectSend[*wire.CreateQueue](h)
	h.reply(to, m.ReqID, wire.StatusQueueExists, 0, 0)
	h.expectFinished(op, OutcomeFailed, wire.StatusQueueExists)
}

// SetDetection names no queue: it goes to any node and completes like any
// other request.
func TestSetDetectionGoesToAnyNode(t *testing.T) {
	h := newHarness(t, testConfig())
	op := h.c.SetDetection(h.now, wire.SetDetection{Mode: 2, Interval: 100 * time.Millisecond})
	to, m := expectSend[*wire.SetDetection](h)
	if m.Mode != 2 || m.Interval != 100*time.Millisecond {
		t.Fatalf("sent %+v", m)
	}
	h.reply(to, m.ReqID, wire.StatusOK, 0, 0)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
	bad := h.c.SetDetection(h.now, wire.SetDetection{Mode: 9, Interval: time.Second})
	h.expectFinished(bad, OutcomeFailed, wire.StatusBadRequest)
}
