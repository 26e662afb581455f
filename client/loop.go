package client

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// post hands f to the loop goroutine. It reports false if the client has
// shut down, in which case f never runs.
func (c *Client) post(f func()) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.in <- f:
		return true
	case <-c.done:
		return false
	}
}

// loop is the goroutine that owns the core: it runs one input at a time,
// then does what the core asked for.
func (c *Client) loop() {
	defer c.shutdown()
	for {
		select {
		case <-c.stop:
			return
		case f := <-c.in:
			f()
			c.takeQueued()
		case <-c.timer.C:
			c.core.Tick(time.Now())
		}
		c.flush()
	}
}

// maxTurn bounds how many queued inputs the loop takes before it sends
// what they produced.
const maxTurn = 256

// takeQueued runs the inputs already queued behind the one just run, up
// to maxTurn, so that what they send goes out together: acks handed over
// in a burst reach the owner as one batch.
func (c *Client) takeQueued() {
	for range maxTurn {
		select {
		case f := <-c.in:
			f()
		default:
			return
		}
	}
}

// flush sends the core's outbox, hands out its events and re-arms the
// timer for its next deadline. Sending can feed the core again (a node
// that cannot be reached counts as a disconnect), so it repeats until the
// core has nothing more.
func (c *Client) flush() {
	for {
		out, events := c.core.Outbox(), c.core.Events()
		if len(out) == 0 && len(events) == 0 {
			break
		}
		for _, o := range out {
			c.sendTo(o.To, o.Msg)
		}
		for _, e := range events {
			c.dispatch(e)
		}
	}
	if at, ok := c.core.NextDeadline(); ok {
		c.timer.Reset(max(time.Until(at), 0))
	} else {
		c.timer.Stop()
	}
}

// sendTo sends m to node to, dialing it first if need be.
func (c *Client) sendTo(to uint32, m wire.Message) {
	e := c.nodes[to]
	if e == nil {
		// A redirect named a node the cluster never told us about: one
		// that joined later, whose address the member list may hold.
		// Until then it is as unreachable as a dead one.
		c.opts.Logger.Debug("no address for node", slog.Uint64("node", uint64(to)))
		c.learnNodes(time.Now())
		c.core.OnDisconnect(time.Now(), to)
		return
	}
	frame := wire.Encode(session.FrameBuffer(), m)
	if e.conn != nil {
		c.enqueue(e, frame)
		return
	}
	e.pending = append(e.pending, frame)
	if !e.dialing {
		c.dial(e)
	}
}

// dispatch hands one core event to whoever waits for it.
func (c *Client) dispatch(e core.Event) {
	if e.Delivery != nil {
		d := &Delivery{Queue: e.Queue, ID: messageIDFrom(e.ID), Attempt: e.Delivery.Attempt, Payload: e.Delivery.Payload, c: c, d: *e.Delivery}
		if s := c.subs[e.Queue]; s != nil {
			s.push(d)
		} else if f := c.fetches[e.Queue]; f != nil {
			c.onFetched(f, d)
		}
		return
	}
	if e.Op != 0 && e.Op == c.learning {
		c.onMembersLearned(e)
		return
	}
	if ch, ok := c.waiters[e.Op]; ok {
		delete(c.waiters, e.Op)
		ch <- e
		return
	}
	if _, ok := c.unawaited[e.Op]; ok {
		c.finishUnawaited(e.Op)
	}
}

// onConnLost handles the end of a connection. Only the current
// connection of a node counts; a stale one was already handled.
func (c *Client) onConnLost(conn *nodeConn, err error) {
	e := c.nodes[conn.node]
	if e == nil || e.conn != conn {
		return
	}
	e.conn = nil
	c.opts.Logger.Debug("connection lost", slog.Uint64("node", uint64(conn.node)), slog.Any("err", err))
	c.core.OnDisconnect(time.Now(), conn.node)
}

// onDialed takes the outcome of dialing e, and reports whether it kept
// the connection. A failed dial is a disconnect: whatever the core sent
// that way is now ambiguous, and it will look elsewhere.
func (c *Client) onDialed(e *nodeEntry, h *handshaken, err error) bool {
	e.dialing = false
	if err != nil {
		c.opts.Logger.Debug("dial failed", slog.Uint64("node", uint64(e.id)), slog.String("addr", e.addr), slog.Any("err", err))
		e.pending = nil
		c.core.OnDisconnect(time.Now(), e.id)
		return false
	}
	if e.conn != nil {
		return false // cannot happen: a node is dialed only while unconnected
	}
	c.attach(e, h)
	return true
}

// shutdown closes every connection and stops every subscription. It runs
// on the loop goroutine as the loop exits.
func (c *Client) shutdown() {
	c.cancel()
	close(c.done)
	c.timer.Stop()
	for _, e := range c.nodes {
		if e.conn != nil {
			e.conn.close()
		}
	}
	for _, s := range c.subs {
		s.end()
	}
	for _, f := range c.fetches {
		if f.timer != nil {
			f.timer.Stop()
		}
	}
}

// pendingOp is an operation started on the loop, whose outcome its
// caller has yet to collect.
type pendingOp struct {
	c      *Client
	ch     chan core.Event
	posted bool
	err    error // set when the operation never started
}

// begin starts an operation on the loop. The start closure is queued
// before begin returns, so operations begun one after another by one
// goroutine reach the core, and the wire, in that order.
func (c *Client) begin(ctx context.Context, start func(now time.Time) core.OpID) *pendingOp {
	p := &pendingOp{c: c, ch: make(chan core.Event, 1)}
	if err := ctx.Err(); err != nil {
		p.err = err
		return p
	}
	if !c.post(func() { c.waiters[start(time.Now())] = p.ch }) {
		p.err = ErrClosed
		return p
	}
	p.posted = true
	return p
}

// beginAll starts the operations of starts on the loop in one turn, in
// their order, so that what they send goes out together.
func (c *Client) beginAll(ctx context.Context, starts []func(now time.Time) core.OpID) []*pendingOp {
	ps := make([]*pendingOp, len(starts))
	for i := range ps {
		ps[i] = &pendingOp{c: c, ch: make(chan core.Event, 1)}
	}
	err := ctx.Err()
	if err == nil && !c.post(func() {
		now := time.Now()
		for i, start := range starts {
			c.waiters[start(now)] = ps[i].ch
		}
	}) {
		err = ErrClosed
	}
	for _, p := range ps {
		p.posted, p.err = err == nil, err
	}
	return ps
}

// wait collects the outcome. An operation that never started fails
// plainly (with ctx's error or ErrClosed); one that started and was not
// seen to finish is ambiguous.
func (p *pendingOp) wait(ctx context.Context) (core.Event, error) {
	if !p.posted {
		return core.Event{}, p.err
	}
	select {
	case e := <-p.ch:
		return e, outcomeError(e)
	case <-ctx.Done():
		return core.Event{}, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
	case <-p.c.done:
		return core.Event{}, fmt.Errorf("%w: %w", ErrUnknownOutcome, ErrClosed)
	}
}

// do starts an operation and waits for its outcome.
func (c *Client) do(ctx context.Context, start func(now time.Time) core.OpID) (core.Event, error) {
	return c.begin(ctx, start).wait(ctx)
}
