package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
)

// SQS consumers poll; cairn pushes deliveries to a subscription. A
// receive buffer joins the two: for each queue and visibility timeout
// the backend keeps one subscription whose lease is the visibility
// timeout and whose window bounds what it holds, and ReceiveMessage
// takes deliveries from it. A delivery that waited in the buffer for a
// quarter of its lease is handed back (nacked) rather than given out
// with little of its visibility left.

// bufferKey names a receive buffer.
type bufferKey struct {
	queue      string
	visibility time.Duration
}

// buffer is one queue's deliveries under one visibility timeout.
type buffer struct {
	key bufferKey
	sub *client.Subscription

	// Guarded by the backend's mutex.
	outstanding int       // handed out, not settled
	lastUsed    time.Time // the last ReceiveMessage

	mu      sync.Mutex
	waiting []arrival
	wake    chan struct{}
	// node is the node the last delivery came from, and checksLeft how
	// many more deliveries are to have their lease confirmed before they
	// are handed out (see confirmLeases): a window's worth after the
	// first delivery from a node, the queue's new owner after a failover.
	node       uint32
	checksLeft int
	window     int
}

// arrival is a delivery waiting in a buffer. One taken from another
// buffer of the queue keeps that buffer as its holder, whose
// subscription holds its lease.
type arrival struct {
	d      *client.Delivery
	at     time.Time
	holder *buffer
	check  bool // confirm the lease before handing the delivery out
}

// firstFillWait is how long a receive on a buffer just subscribed waits
// for its first deliveries, even without long polling: otherwise the
// first short poll of a queue would always come back empty.
const firstFillWait = 250 * time.Millisecond

// lingerAfterFirst is how long a receive that has some deliveries but
// fewer than it may return waits for more: the owner pushes a window's
// worth in bursts, and answering each burst's first delivery alone would
// cost a round trip per message.
const lingerAfterFirst = 5 * time.Millisecond

// Receive hands out up to max deliveries, waiting up to wait for the
// first.
func (b *ClusterBackend) Receive(ctx context.Context, queue string, limit int, visibility, wait time.Duration) ([]Received, error) {
	buf, fresh, err := b.buffer(ctx, queue, visibility)
	if err != nil {
		return nil, err
	}
	if fresh {
		wait = max(wait, firstFillWait)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	look := time.NewTicker(siblingLook)
	defer look.Stop()
	var got []arrival
	for {
		got = append(got, buf.takeFresh(limit-len(got), visibility, b.nack)...)
		if len(got) == 0 {
			got = b.takeFromSiblings(ctx, buf, limit, visibility)
		}
		if len(got) > 0 && len(got) < limit {
			time.Sleep(lingerAfterFirst)
			got = append(got, buf.takeFresh(limit-len(got), visibility, b.nack)...)
		}
		if got = b.confirmLeases(ctx, got, visibility); len(got) > 0 {
			break
		}
		select {
		case <-buf.wake:
		case <-look.C:
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, nil
		}
	}
	return b.handOut(buf, got, visibility), nil
}

// confirmLeases extends, before they are handed out, the leases of the
// deliveries in got that may be redeliveries, and leaves out those whose
// lease is gone. A redelivery is what an owner sends after a lease ran
// out, or what a new owner sends after a failover of every message the
// old one had out, and the application may meanwhile have deleted the
// message through another node's endpoint with the handle of its earlier
// delivery, which settles it by ID and ends the lease this buffer holds
// without telling it: handed out, the delivery would be a message already
// deleted. A delivery that is not the message's first may be one, and so
// may the first window of deliveries from a node (a new owner does not
// always know how often the old one delivered a message). The extension
// also gives the delivery its whole visibility from now. The rest, nearly
// every delivery in steady operation, pass as they are; those taken from
// another buffer were extended already.
func (b *ClusterBackend) confirmLeases(ctx context.Context, got []arrival, visibility time.Duration) []arrival {
	var wg sync.WaitGroup
	gone := make([]bool, len(got))
	for i, a := range got {
		if !a.check && a.d.Attempt <= 1 || a.holder != nil {
			continue
		}
		wg.Go(func() {
			err := a.d.Extend(ctx, visibility)
			var se *client.StatusError
			switch {
			case err == nil:
				got[i].at = time.Now()
			case errors.As(err, &se) && se.Status == client.StatusNotLeased:
				gone[i] = true // settled meanwhile, or its lease ran out and the owner takes it back
			default:
				gone[i] = true
				b.nack(a.d) // the outcome is unknown: hand it back rather than give it out
			}
		})
	}
	wg.Wait()
	kept := got[:0]
	for i, a := range got {
		if !gone[i] {
			kept = append(kept, a)
		}
	}
	return kept
}

// siblingLook is how often a waiting receive looks into the queue's
// buffers for other visibility timeouts.
const siblingLook = 50 * time.Millisecond

// takeFromSiblings takes, for a receive under visibility that found its
// own buffer empty, deliveries waiting in the queue's buffers for other
// visibility timeouts, and extends each lease to visibility from now.
// Without it a message handed back (a visibility change to 0, a lease
// that ran out) could go to the buffer of a visibility timeout nobody
// receives with now, and wait there for a quarter of that timeout while
// receives under another found the queue empty. A delivery whose
// extension fails is handed back.
func (b *ClusterBackend) takeFromSiblings(ctx context.Context, buf *buffer, limit int, visibility time.Duration) []arrival {
	// Every buffer has its visibility timeout's receiver, and an endpoint
	// sees few timeouts: looking each up spares a walk over every
	// queue's buffers, 20 times a second for each waiting receive.
	b.mu.Lock()
	var siblings []*buffer
	for v := range b.receivers {
		if other := b.buffers[bufferKey{queue: buf.key.queue, visibility: v}]; other != nil && other != buf {
			siblings = append(siblings, other)
		}
	}
	b.mu.Unlock()
	var got []arrival
	for _, other := range siblings {
		for _, a := range other.takeFresh(limit-len(got), other.key.visibility, b.nack) {
			if err := a.d.Extend(ctx, visibility); err != nil {
				// Its lease is gone, or this receive gave up before the
				// owner answered: hand it back, so that it does not wait
				// out the other buffer's timeout taken from that buffer.
				b.nack(a.d)
				continue
			}
			got = append(got, arrival{d: a.d, at: time.Now(), holder: other})
		}
		if len(got) == limit {
			break
		}
	}
	return got
}

// handOut records deliveries as handed out and names each by a lease
// token for its receipt handle.
func (b *ClusterBackend) handOut(buf *buffer, got []arrival, visibility time.Duration) []Received {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Received, 0, len(got))
	for _, a := range got {
		holder := buf
		if a.holder != nil {
			holder = a.holder
		}
		b.lastLease++
		b.leases[b.lastLease] = &handedOut{d: a.d, buf: holder, expires: a.at.Add(visibility)}
		holder.outstanding++
		out = append(out, Received{ID: MessageID{Producer: a.d.ID.Producer, Seq: a.d.ID.Seq}, Payload: a.d.Payload,
			Lease: b.lastLease, Grant: a.d.Ref().Lease, Attempt: a.d.Attempt})
	}
	buf.lastUsed = time.Now()
	return out
}

// buffer finds or makes the buffer for a queue and visibility timeout,
// subscribing on first use; fresh says it was just made.
func (b *ClusterBackend) buffer(ctx context.Context, queue string, visibility time.Duration) (*buffer, bool, error) {
	key := bufferKey{queue: queue, visibility: visibility}
	b.mu.Lock()
	if buf := b.buffers[key]; buf != nil {
		if !buf.ended() {
			buf.lastUsed = time.Now()
			b.mu.Unlock()
			return buf, false, nil
		}
		// Its subscription ended (the queue was deleted, say): a queue
		// made again under the name needs a new one.
		delete(b.buffers, key)
	}
	b.mu.Unlock()
	c, err := b.receiver(ctx, visibility)
	if err != nil {
		return nil, false, err
	}
	buf := &buffer{key: key, wake: make(chan struct{}, 1), lastUsed: time.Now(), window: b.cfg.Window}
	sub, err := b.subscribe(ctx, c, buf)
	if err != nil {
		if existing := b.existingBuffer(key); existing != nil {
			// Another receive subscribed first; the client refused the
			// second subscription.
			return existing, false, nil
		}
		return nil, false, clientError(err)
	}
	buf.sub = sub
	b.mu.Lock()
	defer b.mu.Unlock()
	if existing := b.buffers[key]; existing != nil {
		sub.Stop()
		return existing, false, nil
	}
	b.buffers[key] = buf
	return buf, true, nil
}

// subscribe starts a buffer's subscription. It lives as long as the
// backend, not the request that started it (a subscription ends with its
// context), so the wait for it is bounded by the client's retry budget.
// A buffer of the same key that was just closed may still hold the
// client's one subscription to the queue for a moment, so a refusal that
// is not the node's is retried.
func (b *ClusterBackend) subscribe(ctx context.Context, c *client.Client, buf *buffer) (*client.Subscription, error) {
	for attempt := 0; ; attempt++ {
		sub, err := c.Subscribe(b.life, buf.key.queue, buf.push, client.WithLease(buf.key.visibility), client.WithWindow(uint32(b.cfg.Window)))
		var se *client.StatusError
		if err == nil || errors.As(err, &se) || attempt == 5 || ctx.Err() != nil {
			return sub, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ended reports whether the buffer's subscription is over.
func (buf *buffer) ended() bool {
	select {
	case <-buf.sub.Done():
		return true
	default:
		return false
	}
}

func (b *ClusterBackend) existingBuffer(key bufferKey) *buffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffers[key]
}

// receiver is the client whose subscriptions carry one visibility
// timeout, dialed on first use.
func (b *ClusterBackend) receiver(ctx context.Context, visibility time.Duration) (*client.Client, error) {
	b.mu.Lock()
	c := b.receivers[visibility]
	b.mu.Unlock()
	if c != nil {
		return c, nil
	}
	var addrs []string
	for _, n := range b.main.Nodes() {
		addrs = append(addrs, n.Addr)
	}
	c, err := client.Dial(ctx, b.cfg.Client, append(b.cfg.Addrs, addrs...)...)
	if err != nil {
		return nil, fmt.Errorf("connecting a receiver: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if existing := b.receivers[visibility]; existing != nil {
		go c.Close()
		return existing, nil
	}
	b.receivers[visibility] = c
	return c, nil
}

// push is the subscription's handler: it queues the delivery and wakes a
// waiting receive. It never blocks; the window bounds the buffer.
func (buf *buffer) push(_ context.Context, d *client.Delivery) {
	buf.mu.Lock()
	if n := d.Node(); n != buf.node {
		buf.node, buf.checksLeft = n, buf.window
	}
	check := buf.checksLeft > 0
	if check {
		buf.checksLeft--
	}
	buf.waiting = append(buf.waiting, arrival{d: d, at: time.Now(), check: check})
	buf.mu.Unlock()
	select {
	case buf.wake <- struct{}{}:
	default:
	}
}

// takeFresh takes up to n deliveries that still have at least three
// quarters of their lease, handing staler ones back through nack.
func (buf *buffer) takeFresh(n int, visibility time.Duration, nack func(*client.Delivery)) []arrival {
	buf.mu.Lock()
	defer buf.mu.Unlock()
	var out []arrival
	now := time.Now()
	kept := buf.waiting[:0]
	for _, a := range buf.waiting {
		switch {
		case now.Sub(a.at) > visibility/4:
			nack(a.d)
		case len(out) < n:
			out = append(out, a)
		default:
			kept = append(kept, a)
		}
	}
	clear(buf.waiting[len(kept):])
	buf.waiting = kept
	if len(buf.waiting) > 0 {
		// Leave the wake set for the next receive.
		select {
		case buf.wake <- struct{}{}:
		default:
		}
	}
	return out
}

// nack hands a delivery back without waiting for the answer.
func (b *ClusterBackend) nack(d *client.Delivery) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Nack(ctx); err != nil {
			b.cfg.Logger.Debug("handing back a stale buffered delivery", slog.String("queue", d.Queue), slog.String("err", err.Error()))
		}
	}()
}

// handBackStale nacks, in every buffer, the deliveries that waited a
// quarter of their lease: a buffer no receive asks (say, one for a
// visibility timeout no longer used) does not keep messages from the
// others for longer than that.
func (b *ClusterBackend) handBackStale() {
	b.mu.Lock()
	bufs := make([]*buffer, 0, len(b.buffers))
	for _, buf := range b.buffers {
		bufs = append(bufs, buf)
	}
	b.mu.Unlock()
	for _, buf := range bufs {
		buf.takeFresh(0, buf.key.visibility, b.nack)
	}
}

// sweepEvery is how often expired handed-out deliveries are forgotten
// and idle buffers closed.
const sweepEvery = time.Second

func (b *ClusterBackend) sweepLoop() {
	defer close(b.done)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.handBackStale()
			for _, sub := range b.sweep(now) {
				sub.Stop()
				<-sub.Done()
			}
		}
	}
}

// sweep marks handed-out deliveries whose lease has run out (the node
// has taken them back), forgets them a visibility timeout later, and
// removes buffers idle for IdleAfter with none handed out, returning
// their subscriptions to stop. A delete that arrives soon after the
// lease ran out is still sent: cairn settles a message by its ID, so it
// deletes the message unless another consumer already has.
func (b *ClusterBackend) sweep(now time.Time) []*client.Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	for lease, h := range b.leases {
		if !h.lapsed && now.After(h.expires) {
			h.lapsed = true
			h.buf.outstanding--
		}
		if now.After(h.expires.Add(h.buf.key.visibility)) {
			delete(b.leases, lease)
		}
	}
	var idle []*client.Subscription
	for key, buf := range b.buffers {
		if buf.outstanding == 0 && now.Sub(buf.lastUsed) > b.cfg.IdleAfter {
			delete(b.buffers, key)
			idle = append(idle, buf.sub)
		}
	}
	return idle
}
