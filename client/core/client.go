// Package core is cairn's client logic as a sans-IO state machine: routing
// requests to queue owners, following redirects, rediscovering owners
// through a fallback list of nodes, retrying with backoff, hedging
// requests that a silent node holds, keeping subscriptions standing
// across failovers, and deciding honestly whether a finished operation
// happened (OK), certainly did not (Failed), or may have (Unknown).
//
// The client never does I/O and never reads a clock. A driver (the
// simulator, or the real client over TCP) feeds it inputs, each stamped
// with the current time, and then drains what it produced: messages to
// send (Outbox) and things to tell the application (Events). Given the
// same inputs and the same seeded generator it produces the same outputs,
// byte for byte.
package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cairnmq/cairn/fifoheap"
	"github.com/cairnmq/cairn/wire"
)

// DefaultMaxBackoff caps retry backoff when Config.MaxBackoff is zero.
const DefaultMaxBackoff = 2 * time.Second

// Config describes one client.
type Config struct {
	Producer       uint64        // this client's identity; MessageID.Producer of its publishes (must be non-zero)
	Nodes          []uint32      // discovery/fallback addresses: nodes to try when no owner is known
	RequestTimeout time.Duration // an unanswered attempt becomes ambiguous after this
	MaxAttempts    int           // attempts (hedges included) per operation before giving up; zero for no bound but RetryFor
	// RetryFor bounds how long an operation keeps retrying, from its first
	// attempt: once it has passed, the operation gives up at its next
	// retry decision (an attempt in flight still has its RequestTimeout).
	// Zero means MaxAttempts alone bounds it. A deadline, unlike a count,
	// lets an operation ride through a failover however many quick
	// refusals it meets on the way.
	RetryFor     time.Duration
	RetryBackoff time.Duration // base backoff before retrying after an unavailable or ambiguous attempt
	MaxBackoff   time.Duration // cap on one backoff; zero means max(DefaultMaxBackoff, RetryBackoff)
	// SubscriptionRefresh is how often an established subscription is
	// confirmed with the node holding it; zero means
	// DefaultSubscriptionRefresh. It bounds how long a subscription the
	// client was never told it lost can sit silent.
	SubscriptionRefresh time.Duration
	// HedgeAfter is how long a publish or subscribe attempt may wait for
	// its reply before the client sends the same request to another node
	// too, without abandoning the first; whichever is confirmed first
	// completes the operation. Hedges count towards MaxAttempts, though
	// one never takes the last attempt allowed, and stop once RetryFor
	// has passed. Zero means adaptive: the delay follows the confirmation
	// times of this client's healthy publishes, between HedgeFloor and
	// DefaultHedgeAfter (see rtt.go). A positive value fixes the delay; a
	// negative value turns hedging off, as does a single node in Nodes.
	HedgeAfter time.Duration
}

// DefaultSubscriptionRefresh is the refresh interval when
// Config.SubscriptionRefresh is zero.
const DefaultSubscriptionRefresh = 2 * time.Second

// DefaultHedgeAfter is the ceiling of the adaptive hedge delay, and the
// delay itself until the client has seen a publish confirmed. It is above
// what a healthy owner takes to confirm a publish (the README's pipelined
// runs on loopback confirm at p99 in 96-144 ms), so a hedge costs nothing
// while the cluster is well even on a network the client knows nothing
// of; and it is near how long the other nodes take to see a silent owner
// under heartbeat detection (an owner whose connection reset is confirmed
// down within about 200 ms), so a hedge that goes out then usually
// reaches a node that parks it for the failover or names the next owner.
const DefaultHedgeAfter = 200 * time.Millisecond

// validate panics, naming the field, if the configuration cannot work. A
// bad configuration is a programming error in the driver, not a runtime
// condition the client could recover from.
func (cfg Config) validate() {
	if cfg.Producer == 0 {
		panic("core: Config.Producer must be non-zero: it names this client's messages")
	}
	if len(cfg.Nodes) == 0 {
		panic("core: Config.Nodes is empty: the client has nowhere to discover owners")
	}
	for i, n := range cfg.Nodes {
		if n == 0 {
			panic(fmt.Sprintf("core: Config.Nodes[%d] is 0, which is never a node ID", i))
		}
		if slices.Contains(cfg.Nodes[:i], n) {
			panic(fmt.Sprintf("core: Config.Nodes lists node %d twice", n))
		}
	}
	if cfg.RequestTimeout <= 0 {
		panic(fmt.Sprintf("core: Config.RequestTimeout must be positive, got %v", cfg.RequestTimeout))
	}
	if cfg.MaxAttempts < 0 || cfg.RetryFor < 0 || (cfg.MaxAttempts == 0 && cfg.RetryFor == 0) {
		panic(fmt.Sprintf("core: Config.MaxAttempts (%d) and RetryFor (%v) must not be negative, and one must be positive: nothing would bound retries", cfg.MaxAttempts, cfg.RetryFor))
	}
	if cfg.RetryBackoff <= 0 {
		panic(fmt.Sprintf("core: Config.RetryBackoff must be positive, got %v", cfg.RetryBackoff))
	}
	if cfg.SubscriptionRefresh < 0 {
		panic(fmt.Sprintf("core: Config.SubscriptionRefresh must not be negative, got %v", cfg.SubscriptionRefresh))
	}
	if cfg.MaxBackoff != 0 && cfg.MaxBackoff < cfg.RetryBackoff {
		panic(fmt.Sprintf("core: Config.MaxBackoff %v is below Config.RetryBackoff %v", cfg.MaxBackoff, cfg.RetryBackoff))
	}
}

// Client is one client's state. It is not safe for concurrent use: the
// driver calls it from one goroutine, as the simulator does.
type Client struct {
	cfg                 Config
	maxBackoff          time.Duration
	subscriptionRefresh time.Duration
	hedgeAfter          time.Duration // the fixed delay, or the adaptive one's ceiling; zero when hedging is off
	hedgeAdaptive       bool          // the delay follows rtt (Config.HedgeAfter was zero)
	rtt                 rttEstimator  // healthy publishes' confirmation times
	rng                 *rand.Rand

	lastReq uint64 // the last ReqID handed out
	lastOp  OpID   // the last OpID handed out
	lastSeq uint64 // the last MessageID.Seq handed out

	// live holds unfinished operations in OpID order. Finished ones are
	// marked done and swept out in batches, so finishing is O(1).
	live     []*operation
	doneLive int
	// wakes files the live operations' wake times (wakes.go).
	wakes fifoheap.Queue[wakeEntry]
	// attempts maps every registered ReqID to its attempt.
	attempts map[uint64]attempt

	owners map[string]uint32 // queue → the node believed to own it
	cursor int               // the next index into cfg.Nodes for discovery
	// staleDeliveries counts deliveries dropped as stale (onDelivery).
	staleDeliveries uint64
	// staleLeft holds each (node, queue) the client has sent an
	// Unsubscribe to after a stale delivery from there, so a burst of
	// them asks once; a new subscribe attempt to the node clears it.
	staleLeft map[staleSource]bool

	subs []*subscription // standing subscriptions, in the order they were made

	outbox []Outgoing
	events []Event
}

// New returns a client. It panics on an invalid configuration or a nil
// generator. The generator picks the first discovery node and jitters
// backoff; nothing else is random.
func New(cfg Config, rng *rand.Rand) *Client {
	cfg.validate()
	if rng == nil {
		panic("core: New needs a seeded *rand.Rand; got nil")
	}
	maxBackoff := cfg.MaxBackoff
	if maxBackoff == 0 {
		maxBackoff = max(DefaultMaxBackoff, cfg.RetryBackoff)
	}
	cfg.Nodes = slices.Clone(cfg.Nodes)
	refresh := cfg.SubscriptionRefresh
	if refresh == 0 {
		refresh = DefaultSubscriptionRefresh
	}
	hedgeAfter, hedgeAdaptive := cfg.HedgeAfter, false
	switch {
	case hedgeAfter < 0 || len(cfg.Nodes) == 1:
		// With one node there is nowhere else to send a hedge.
		hedgeAfter = 0
	case hedgeAfter == 0:
		hedgeAfter, hedgeAdaptive = DefaultHedgeAfter, true
	}
	return &Client{
		cfg:                 cfg,
		maxBackoff:          maxBackoff,
		subscriptionRefresh: refresh,
		hedgeAfter:          hedgeAfter,
		hedgeAdaptive:       hedgeAdaptive,
		rng:                 rng,
		attempts:            make(map[uint64]attempt),
		owners:              make(map[string]uint32),
		cursor:              rng.IntN(len(cfg.Nodes)),
	}
}

// Outbox returns the messages to send, in the order they were produced,
// and forgets them.
func (c *Client) Outbox() []Outgoing {
	out := coalesceSettles(c.outbox)
	c.outbox = nil
	return out
}

// maxSettleBatch bounds the settles one SettleBatch carries (33 bytes
// each), far below a frame's limit.
const maxSettleBatch = 1024

// coalesceSettles packs settles queued one after another for the same
// node and queue into SettleBatch frames. Each keeps its own ReqID and
// gets its own reply, so nothing else in the client changes: the batch
// only saves the owner a request, and the log a record, per ack.
func coalesceSettles(out []Outgoing) []Outgoing {
	merged := out[:0]
	for _, o := range out {
		s, ok := o.Msg.(*wire.Settle)
		if !ok || len(merged) == 0 {
			merged = append(merged, o)
			continue
		}
		prev := &merged[len(merged)-1]
		item := wire.SettleItem{ReqID: s.ReqID, ID: s.ID, Lease: s.Lease, Nack: s.Nack}
		switch p := prev.Msg.(type) {
		case *wire.Settle:
			if prev.To == o.To && p.Queue == s.Queue {
				prev.Msg = &wire.SettleBatch{Queue: s.Queue, Items: []wire.SettleItem{
					{ReqID: p.ReqID, ID: p.ID, Lease: p.Lease, Nack: p.Nack}, item}}
				continue
			}
		case *wire.SettleBatch:
			if prev.To == o.To && p.Queue == s.Queue && len(p.Items) < maxSettleBatch {
				p.Items = append(p.Items, item)
				continue
			}
		}
		merged = append(merged, o)
	}
	return merged
}

// Events returns finished operations and deliveries, in the order they
// happened, and forgets them.
func (c *Client) Events() []Event {
	out := c.events
	c.events = nil
	return out
}

// OnMessage handles a message from node from. Replies and deliveries are
// the only messages a client expects; anything else is ignored, because a
// node's output is untrusted input here and must not crash the client.
func (c *Client) OnMessage(now time.Time, from uint32, m wire.Message) {
	switch m := m.(type) {
	case *wire.Reply:
		c.onReply(now, from, m)
	case *wire.MemberListReply:
		c.onMemberListReply(now, from, m)
	case *wire.Delivery:
		c.onDelivery(from, m)
	}
	c.sweep()
}

// OnDisconnect handles the loss of the connection to node. Every attempt
// outstanding there becomes ambiguous, since the node may have acted
// before the connection broke, and every subscription held there is gone.
func (c *Client) OnDisconnect(now time.Time, node uint32) {
	c.forgetOwner(node)
	for _, op := range c.live {
		// An operation's attempts in flight go to different nodes, so
		// at most one of them was lost here.
		if i := op.flightTo(node); i >= 0 {
			c.onNoReply(now, op, i, true)
		}
	}
	c.onSubscriptionNodeLost(now, node)
	c.sweep()
}

// Tick fires every reply timeout, hedge and retry that is due at now.
// Due work runs in order of its deadline (ties by OpID), so the order of
// the output does not depend on how often the driver ticks.
func (c *Client) Tick(now time.Time) {
	due := c.popDue(now)
	for _, op := range due {
		switch {
		case op.phase == phaseDone:
			// Finished by an earlier item of this same tick.
		case op.wake().After(now):
			// Rescheduled by an earlier item of this same tick.
		case op.phase == phaseAwaiting:
			c.onAwaitingDue(now, op)
		case op.phase == phaseBackoff:
			c.send(now, op)
		default:
			panic(fmt.Sprintf("core: op %d in impossible phase %s at tick", op.id, op.phase))
		}
		// Its entry was taken out; whatever it does next is filed anew
		// (again, if handling it filed it already).
		c.rewake(op)
	}
	c.refreshDue(now)
	c.sweep()
}

// sweep drops finished operations from live once they are at least half
// of it, so finishing stays O(1) amortized. It runs only at the end of an
// input, never while a loop over live is in progress.
func (c *Client) sweep() {
	if c.doneLive < 16 || c.doneLive*2 < len(c.live) {
		return
	}
	c.live = slices.DeleteFunc(c.live, func(op *operation) bool { return op.phase == phaseDone })
	c.doneLive = 0
}

// LastOp is the OpID the latest operation was given (zero before the
// first); every OpID handed out so far is at most this.
func (c *Client) LastOp() OpID { return c.lastOp }

// NextDeadline reports the earliest time at which Tick has work: a reply
// timeout, a retry or a subscription refresh. It reports false when
// nothing is waiting on time.
func (c *Client) NextDeadline() (time.Time, bool) {
	var earliest time.Time
	found := false
	for _, s := range c.subs {
		if s.op == nil && s.node != 0 && (!found || s.refreshAt.Before(earliest)) {
			earliest, found = s.refreshAt, true
		}
	}
	if e, ok := c.nextWake(); ok && (!found || e.at.Before(earliest)) {
		earliest, found = e.at, true
	}
	return earliest, found
}
