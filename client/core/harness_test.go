package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// t0 is an arbitrary start of virtual time.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// testConfig is a small, fast configuration the stories start from.
func testConfig() Config {
	return Config{
		Producer:       7,
		Nodes:          []uint32{1, 2, 3},
		RequestTimeout: time.Second,
		MaxAttempts:    5,
		RetryBackoff:   100 * time.Millisecond,
	}
}

// unhedgedConfig is testConfig with hedging off, for the stories of what
// a lone attempt meets: with hedging on, a silence of HedgeAfter would
// add a second attempt to each of them.
func unhedgedConfig() Config {
	cfg := testConfig()
	cfg.HedgeAfter = -1
	return cfg
}

// harness drives one client the way a simulator would: it owns the clock,
// drains the outbox after every input, and lets a story assert on what
// was sent and what the application was told.
type harness struct {
	t      *testing.T
	c      *Client
	now    time.Time
	events []Event
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return &harness{t: t, c: New(cfg, rand.New(rand.NewPCG(1, 2))), now: t0}
}

// sends drains the outbox.
func (h *harness) sends() []Outgoing {
	h.collect()
	return h.c.Outbox()
}

// collect moves pending events into the harness, so the outbox and the
// events can be inspected independently.
func (h *harness) collect() { h.events = append(h.events, h.c.Events()...) }

// expectSend drains the outbox and requires exactly one message of type T.
func expectSend[T wire.Message](h *harness) (uint32, T) {
	h.t.Helper()
	out := h.sends()
	if len(out) != 1 {
		h.t.Fatalf("want exactly one message sent, got %d: %s", len(out), describeAll(out))
	}
	m, ok := out[0].Msg.(T)
	if !ok {
		var zero T
		h.t.Fatalf("want a %T sent, got %s", zero, wire.Describe(out[0].Msg))
	}
	return out[0].To, m
}

// expectNothingSent requires an empty outbox.
func (h *harness) expectNothingSent() {
	h.t.Helper()
	if out := h.sends(); len(out) != 0 {
		h.t.Fatalf("want nothing sent, got %s", describeAll(out))
	}
}

// reply delivers a reply to the request with reqID from node from.
func (h *harness) reply(from uint32, reqID uint64, status wire.Status, owner uint32, index uint64) {
	h.c.OnMessage(h.now, from, &wire.Reply{ReqID: reqID, Status: status, Owner: owner, Index: index})
	h.collect()
}

// advance moves the clock by d and ticks.
func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.c.Tick(h.now)
	h.collect()
}

// runToDeadline moves the clock to the client's next deadline and ticks,
// returning how long that was.
func (h *harness) runToDeadline() time.Duration {
	h.t.Helper()
	next, ok := h.c.NextDeadline()
	if !ok {
		h.t.Fatalf("want a pending deadline, have none")
	}
	wait := next.Sub(h.now)
	h.now = next
	h.c.Tick(h.now)
	h.collect()
	return wait
}

// disconnect reports that the connection to node broke.
func (h *harness) disconnect(node uint32) {
	h.c.OnDisconnect(h.now, node)
	h.collect()
}

// opEvents drains the events that finished operations.
func (h *harness) opEvents() []Event {
	h.collect()
	var ops []Event
	rest := h.events[:0]
	for _, e := range h.events {
		if e.Delivery == nil {
			ops = append(ops, e)
		} else {
			rest = append(rest, e)
		}
	}
	h.events = rest
	return ops
}

// deliveries drains the delivery events.
func (h *harness) deliveries() []Event {
	h.collect()
	var ds []Event
	rest := h.events[:0]
	for _, e := range h.events {
		if e.Delivery != nil {
			ds = append(ds, e)
		} else {
			rest = append(rest, e)
		}
	}
	h.events = rest
	return ds
}

// expectFinished requires exactly one finished operation, op, with the
// given outcome and status, and returns it.
func (h *harness) expectFinished(op OpID, outcome Outcome, status wire.Status) Event {
	h.t.Helper()
	evs := h.opEvents()
	if len(evs) != 1 {
		h.t.Fatalf("want op %d to finish %s, got %d op events: %v", op, outcome, len(evs), evs)
	}
	e := evs[0]
	if e.Op != op || e.Outcome != outcome || e.Status != status {
		h.t.Fatalf("want op %d %s status=%s, got %v", op, outcome, status, e)
	}
	return e
}

// expectNoOpEvents requires that no operation finished.
func (h *harness) expectNoOpEvents() {
	h.t.Helper()
	if evs := h.opEvents(); len(evs) != 0 {
		h.t.Fatalf("want no operation to finish yet, got %v", evs)
	}
}

// otherNode returns a node of the test cluster that is neither a nor b.
func otherNode(a, b uint32) uint32 {
	for _, n := range testConfig().Nodes {
		if n != a && n != b {
			return n
		}
	}
	panic("no other node")
}

func describeAll(out []Outgoing) string {
	var parts []string
	for _, o := range out {
		parts = append(parts, fmt.Sprintf("n%d<-%s", o.To, wire.Describe(o.Msg)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// reqIDOf returns the ReqID of any client request.
func reqIDOf(m wire.Message) uint64 {
	switch m := m.(type) {
	case *wire.CreateQueue:
		return m.ReqID
	case *wire.DeleteQueue:
		return m.ReqID
	case *wire.Publish:
		return m.ReqID
	case *wire.Subscribe:
		return m.ReqID
	case *wire.Settle:
		return m.ReqID
	case *wire.Extend:
		return m.ReqID
	}
	panic(fmt.Sprintf("not a client request: %T", m))
}

// learnOwner makes the client cache owner as the owner of queue by
// publishing once and having owner confirm it.
func (h *harness) learnOwner(queue string, owner uint32) {
	h.t.Helper()
	op, _ := h.c.Publish(h.now, queue, []byte("warm-up"), 0)
	to, p := expectSend[*wire.Publish](h)
	if to != owner {
		h.reply(to, p.ReqID, wire.StatusNotOwner, owner, 0)
		to, p = expectSend[*wire.Publish](h)
	}
	if to != owner {
		h.t.Fatalf("warm-up publish went to n%d, want n%d", to, owner)
	}
	h.reply(owner, p.ReqID, wire.StatusOK, 0, 1)
	h.expectFinished(op, OutcomeOK, wire.StatusOK)
}

// contains reports whether node is one of the test cluster's nodes.
func contains(node uint32) bool { return slices.Contains(testConfig().Nodes, node) }
