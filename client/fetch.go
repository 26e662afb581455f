package client

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// lapseSlack is how long after a fetched delivery's lease should have run
// out, by this client's clock, the client counts it as lapsed at its node.
// The node's lease starts when it sends the delivery, before the client
// receives it, so the slack only has to cover an extension's trip to the
// node, whose clock starts the extended lease on arrival.
const lapseSlack = 500 * time.Millisecond

// Fetch takes up to n deliveries from queue in one go and returns them:
// as soon as n have arrived, or once wait has passed with fewer (none is
// no error). The node does not tell a client that a queue is empty, so
// Fetch on a queue with fewer than n messages ready always waits the
// whole wait; a wait of 0 returns at once with what has already arrived,
// which is nothing on a first call. The subscription's window leaves the
// node room for n deliveries beyond those still unsettled, no more.
//
// The deliveries are leased (for 30s, or as WithLease says; other
// subscribe options are ignored) and settled as a subscription's are:
// Ack, AckSync, Nack, Extend. Each lease starts when its delivery is
// sent, not when Fetch returns, so a wait near the lease leaves the
// first deliveries little of it; one whose lease ran out before Fetch
// returned is left out. Under the hood Fetch subscribes to queue
// with a window of n and keeps that subscription, with its window shrunk
// to what is still unsettled, until every delivery it returned is
// settled or its lease has run out; then it ends the subscription at the
// node. A delivery the node sends after Fetch returned (when a lease ran
// out, say) is held by the client and handed to the next Fetch on the
// queue, or handed back to the queue as soon as that cannot bring it
// straight back, and at the latest when the subscription ends.
//
// A client holds one subscription per queue, so Fetch fails while the
// client subscribes to queue, and while another Fetch on queue is
// waiting. It fails with ctx's error if ctx ends first; the deliveries
// that had arrived then go back to the queue.
func (c *Client) Fetch(ctx context.Context, queue string, n int, wait time.Duration, opts ...SubscribeOption) ([]*Delivery, error) {
	if n <= 0 || uint64(n) > math.MaxUint32 || wait < 0 {
		return nil, &StatusError{Op: core.OpSubscribe.String(), Queue: queue, Status: StatusBadRequest,
			Detail: fmt.Sprintf("fetch of %d deliveries within %v: want 1 to %d deliveries and a wait of 0 or more", n, wait, uint32(math.MaxUint32))}
	}
	so := subscribeOptions{window: uint32(n), lease: 30 * time.Second}
	for _, o := range opts {
		o(&so)
	}
	so.window = uint32(n)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	type started struct {
		f     *fetchSession
		ready chan []*Delivery
		op    chan core.Event // nil when the subscription already stood
		err   error
	}
	st := make(chan started, 1)
	if !c.post(func() {
		f, ready, op, err := c.startFetch(queue, so)
		st <- started{f, ready, op, err}
	}) {
		return nil, ErrClosed
	}
	var s started
	select {
	case s = <-st:
	case <-c.done:
		return nil, ErrClosed
	}
	if s.err != nil {
		return nil, s.err
	}
	return c.collect(ctx, s.f, s.ready, s.op, deadline.C)
}

// collect waits for the Fetch in progress on f to end and returns what
// it took, which arrives on ready (f itself belongs to the loop).
// Whatever ends the Fetch, the loop decides what was taken, in one place
// (endCollect), so a delivery is either returned or handed back.
func (c *Client) collect(ctx context.Context, f *fetchSession, ready chan []*Delivery, op chan core.Event, deadline <-chan time.Time) ([]*Delivery, error) {
	var failed error
	cancelled := ctx.Done()
	for {
		select {
		case e := <-op:
			op = nil
			if e.Outcome == core.OutcomeFailed {
				failed = outcomeError(e)
				c.post(func() { c.endCollect(f, true) })
			}
		case got := <-ready:
			// Deliveries taken before the failure was seen are leased
			// to the caller now, so they are returned, not lost.
			if len(got) == 0 && failed != nil {
				return nil, failed
			}
			return got, nil
		case <-deadline:
			deadline = nil
			c.post(func() { c.endCollect(f, false) })
		case <-cancelled:
			cancelled, failed = nil, ctx.Err()
			c.post(func() { c.endCollect(f, true) })
		case <-c.done:
			return nil, ErrClosed
		}
	}
}

// fetchSession is the subscription behind the Fetch calls on one queue.
// It is owned by the loop goroutine.
type fetchSession struct {
	queue string
	lease time.Duration
	// window is what the core was last told.
	window uint32

	// want is how many more deliveries the Fetch in progress takes; got
	// what it has taken; ready receives got when it ends. want is zero
	// and ready nil when no Fetch is in progress.
	want  int
	got   []*Delivery
	ready chan []*Delivery

	// live maps the leases of the deliveries Fetch returned that are
	// neither settled nor lapsed to their messages and when they lapse,
	// by this clock.
	live map[uint64]liveLease
	// held are deliveries the node sent when no Fetch was in progress.
	// unexplained counts those sent into room the client did not make,
	// which can only be a lease lapsing at the node earlier than live
	// says: handing one of those back would bring it straight back, so
	// it waits for a lapse to be counted here. overshoot counts the
	// deliveries that may still be on their way for a Fetch that ended
	// early; they can go back at once.
	held        []*Delivery
	unexplained int
	overshoot   int
	timer       *time.Timer
}

// liveLease is a delivery Fetch returned, still leased as far as the
// client knows.
type liveLease struct {
	id MessageID
	at time.Time // when it lapses, slack included
}

// startFetch runs on the loop: it begins a Fetch on queue, on the
// subscription a previous Fetch left or on a new one, whose first outcome
// goes to op. What the Fetch takes goes to ready.
func (c *Client) startFetch(queue string, so subscribeOptions) (f *fetchSession, ready chan []*Delivery, op chan core.Event, err error) {
	if c.subs[queue] != nil {
		return nil, nil, nil, fmt.Errorf("client: cannot fetch from queue %q while subscribed to it", queue)
	}
	f = c.fetches[queue]
	if f != nil && f.ready != nil {
		return nil, nil, nil, fmt.Errorf("client: a Fetch on queue %q is already waiting", queue)
	}
	if f == nil {
		f = &fetchSession{queue: queue, lease: so.lease, window: so.window, live: make(map[uint64]liveLease)}
		c.fetches[queue] = f
		op = make(chan core.Event, 1)
		c.waiters[c.core.Subscribe(time.Now(), queue, so.window, so.lease)] = op
	}
	ready = make(chan []*Delivery, 1)
	f.ready, f.want = ready, int(so.window)
	pruneHeld(f, time.Now())
	take := min(len(f.held), f.want)
	f.got = append(f.got[:0], f.held[:take]...)
	f.held = append(f.held[:0], f.held[take:]...)
	f.want -= take
	f.unexplained = min(f.unexplained, len(f.held))
	if f.want == 0 {
		c.endCollect(f, false)
		return f, ready, op, nil
	}
	c.reconcile(f)
	return f, ready, op, nil
}

// onFetched runs on the loop for each delivery to a queue fetched from.
func (c *Client) onFetched(f *fetchSession, d *Delivery) {
	d.fetch, d.lapseAt = f, time.Now().Add(f.lease)
	// The node sends a message again only once its earlier lease has
	// ended: that lease explains the room the node found.
	explained := forgetEarlierLease(f, d.ID)
	if f.ready != nil && f.want > 0 {
		f.got = append(f.got, d)
		if f.want--; f.want == 0 {
			c.endCollect(f, false)
		} else if explained {
			c.reconcile(f)
		}
		return
	}
	f.held = append(f.held, d)
	switch {
	case explained:
	case f.overshoot > 0:
		f.overshoot--
	default:
		f.unexplained++
		return
	}
	c.reconcile(f)
}

// forgetEarlierLease drops the delivery of message id that f returned,
// holds or is taking, if any: its lease is over. It reports whether there
// was one. (A Fetch started just after the previous one's subscription
// ended can get a delivery sent to that subscription, and then the same
// message again once the node handed it back.)
func forgetEarlierLease(f *fetchSession, id MessageID) bool {
	found := false
	if n := len(f.got); n > 0 {
		f.got = slices.DeleteFunc(f.got, func(g *Delivery) bool { return g.ID == id })
		f.want += n - len(f.got)
		found = len(f.got) < n
	}
	for lease, l := range f.live {
		if l.id == id {
			delete(f.live, lease)
			found = true
		}
	}
	n := len(f.held)
	f.held = slices.DeleteFunc(f.held, func(h *Delivery) bool { return h.ID == id })
	f.unexplained = min(f.unexplained, len(f.held))
	return found || len(f.held) < n
}

// pruneHeld drops the held deliveries whose leases have run out at the
// node by now: they are no longer the client's to hand out or back.
func pruneHeld(f *fetchSession, now time.Time) {
	f.held = slices.DeleteFunc(f.held, func(h *Delivery) bool { return !h.lapseAt.After(now) })
	f.unexplained = min(f.unexplained, len(f.held))
}

// endCollect runs on the loop: it ends the Fetch in progress on f, if
// any, and hands what it took to the caller, or with abandon to the
// queue. From then on the subscription holds only the deliveries
// returned.
func (c *Client) endCollect(f *fetchSession, abandon bool) {
	if f.ready == nil {
		return
	}
	now := time.Now()
	// A delivery whose lease ran out during a long wait is no longer the
	// caller's: the node delivers it again, perhaps to this very Fetch.
	got := slices.DeleteFunc(f.got, func(d *Delivery) bool { return !d.lapseAt.After(now) })
	f.got = nil
	if abandon {
		f.held = append(f.held, got...)
		got = nil
	}
	for _, d := range got {
		f.live[d.d.Lease] = liveLease{id: d.ID, at: d.lapseAt.Add(lapseSlack)}
	}
	f.overshoot += f.want
	f.want = 0
	f.ready <- got
	f.ready = nil
	c.reconcile(f)
	c.armLapses(f)
}

// reconcile runs on the loop after f's deliveries changed. While a Fetch
// is in progress it only sets the window; otherwise it hands back the
// held deliveries that can go, shrinks the window to what stays leased,
// or ends the subscription once nothing does. The window goes out first, so the node has no room to send a
// handed-back delivery straight back.
func (c *Client) reconcile(f *fetchSession) {
	if f.ready != nil {
		c.setFetchWindow(f, uint32(len(f.live)+len(f.held)+len(f.got)+f.want))
		return
	}
	if len(f.live) == 0 {
		c.endFetch(f)
		return
	}
	release := f.held[:len(f.held)-f.unexplained]
	f.held = append([]*Delivery(nil), f.held[len(release):]...)
	c.setFetchWindow(f, uint32(len(f.live)+len(f.held)))
	now := time.Now()
	for _, d := range release {
		c.core.Nack(now, d.d)
	}
}

// setFetchWindow tells the core f's window, if it changed.
func (c *Client) setFetchWindow(f *fetchSession, window uint32) {
	if window != f.window && window > 0 {
		f.window = window
		c.core.SetWindow(f.queue, window)
	}
}

// endFetch ends f's subscription at the node, which hands back whatever
// is still leased to it: held deliveries, and any on their way.
func (c *Client) endFetch(f *fetchSession) {
	if c.fetches[f.queue] != f {
		return
	}
	delete(c.fetches, f.queue)
	c.core.Unsubscribe(time.Now(), f.queue)
	if f.timer != nil {
		f.timer.Stop()
	}
}

// armLapses schedules the next count of lapsed leases.
func (c *Client) armLapses(f *fetchSession) {
	if c.fetches[f.queue] != f || len(f.live) == 0 {
		return
	}
	var next time.Time
	for _, l := range f.live {
		if next.IsZero() || l.at.Before(next) {
			next = l.at
		}
	}
	for _, h := range f.held {
		if h.lapseAt.Before(next) {
			next = h.lapseAt
		}
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	f.timer = time.AfterFunc(time.Until(next), func() { c.post(func() { c.countLapses(f) }) })
}

// countLapses runs on the loop when a returned or held delivery's lease
// should have run out at its node: it no longer counts as leased, and
// each lapse of a returned one explains one held delivery, which can now
// go back.
func (c *Client) countLapses(f *fetchSession) {
	if c.fetches[f.queue] != f {
		return
	}
	now := time.Now()
	for lease, l := range f.live {
		if !l.at.After(now) {
			delete(f.live, lease)
			if f.unexplained > 0 {
				f.unexplained--
			}
		}
	}
	pruneHeld(f, now)
	c.reconcile(f)
	c.armLapses(f)
}

// settling wraps the start of a settle of d: a fetched delivery first
// leaves its session's count, and the window shrinks ahead of the settle,
// so the node gets no room for another delivery. If that was the last
// one, the subscription ends after the settle is on its way.
func (d *Delivery) settling(start func(now time.Time) core.OpID) func(now time.Time) core.OpID {
	f := d.fetch
	if f == nil {
		return start
	}
	return func(now time.Time) core.OpID {
		c := d.c
		if _, ok := f.live[d.d.Lease]; !ok || c.fetches[f.queue] != f {
			return start(now)
		}
		delete(f.live, d.d.Lease)
		if len(f.live) > 0 || f.ready != nil {
			c.reconcile(f)
			return start(now)
		}
		op := start(now)
		c.endFetch(f)
		return op
	}
}

// extending wraps the start of an extension of d: a fetched delivery's
// lapse moves with it.
func (d *Delivery) extending(extendFor time.Duration, start func(now time.Time) core.OpID) func(now time.Time) core.OpID {
	f := d.fetch
	if f == nil {
		return start
	}
	return func(now time.Time) core.OpID {
		if l, ok := f.live[d.d.Lease]; ok && d.c.fetches[f.queue] == f {
			f.live[d.d.Lease] = liveLease{id: l.id, at: now.Add(extendFor + lapseSlack)}
			d.c.armLapses(f)
		}
		return start(now)
	}
}
