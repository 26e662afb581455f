package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// Delivery is a message handed to a subscription under a lease.
type Delivery struct {
	Queue string
	ID    MessageID
	// Attempt counts deliveries of this message, from 1. A delivery
	// still leased, and not extended, when its subscription is ended by
	// Unsubscribe goes back uncounted. The count goes on across a failover or a
	// move of the queue, at most a few of the last deliveries short when
	// the owner died (those its followers had not yet heard of).
	Attempt uint32
	Payload []byte

	c *Client
	d core.Delivery
	// fetch is the Fetch session the delivery came through, if any, and
	// lapseAt when its lease runs out at the node at the latest; both
	// belong to the loop.
	fetch   *fetchSession
	lapseAt time.Time
}

// Nack hands the delivery back for redelivery.
func (d *Delivery) Nack(ctx context.Context) error {
	_, err := d.c.do(ctx, d.settling(func(now time.Time) core.OpID { return d.c.core.Nack(now, d.d) }))
	return err
}

// Extend keeps the delivery leased for extendFor from when the node
// takes the request, instead of whatever was left of its lease, without
// settling it: a handler that needs longer than the subscription's lease
// (see WithLease) calls it before the lease runs out, as often as it
// needs to. extendFor must be positive and at most 12 hours.
//
// It returns once the node holding the lease has extended it. The
// request goes only to that node, never to another: if the lease has
// already run out, or was settled, the error is a *StatusError with
// StatusNotLeased (or StatusOwnerChanged) and the message will be (or
// was) delivered again; an error wrapping ErrUnknownOutcome means the
// extension may not have happened, and the message may be delivered again
// when the old lease runs out.
func (d *Delivery) Extend(ctx context.Context, extendFor time.Duration) error {
	if detail, ok := core.CheckExtend(d.d, extendFor); !ok {
		return &StatusError{Op: core.OpExtend.String(), Queue: d.d.Queue, Status: StatusBadRequest, Detail: detail}
	}
	_, err := d.c.do(ctx, d.extending(extendFor, func(now time.Time) core.OpID { return d.c.core.Extend(now, d.d, extendFor) }))
	return err
}

// Handler processes one delivery. Deliveries of one subscription are
// handled one at a time, in the order they arrive, unless WithConcurrency
// lets several calls run at once.
type Handler func(ctx context.Context, d *Delivery)

// Subscription is a standing subscription to one queue.
type Subscription struct {
	c       *Client
	queue   string
	handler Handler
	ctx     context.Context
	cancel  context.CancelFunc

	mu      sync.Mutex
	backlog []*Delivery
	wake    chan struct{}
	ended   chan struct{} // closed when the client shuts down
	endOnce sync.Once
	done    chan struct{} // closed when the handler goroutine returns

	// workers are the goroutines that call the handler, by goroutine ID,
	// and workerExit is signalled (under mu) as each returns, so a Stop
	// called from inside the handler can wait for the others alone;
	// stopsInside counts such Stop calls waiting, none of which waits for
	// another.
	workers     map[uint64]bool
	workerExit  *sync.Cond
	stopsInside int
}

// Subscribe subscribes to queue and calls handler for every delivery on a
// goroutine of its own, until ctx ends, Stop is called or the client
// closes. It returns once the subscription stands, or once the client has
// retried for Options.RetryFor without an answer it can count on (during a
// failover, say), in which case the client keeps establishing it in the
// background. So during an outage it can block for a while: call it from
// a goroutine of its own, or with a ctx that bounds the wait, if that
// matters. It fails if a node refused it for good (no such queue, for
// instance). A client holds at most one subscription per queue.
func (c *Client) Subscribe(ctx context.Context, queue string, handler Handler, opts ...SubscribeOption) (*Subscription, error) {
	so := subscribeOptions{window: DefaultWindow, lease: 30 * time.Second, concurrency: 1}
	for _, o := range opts {
		o(&so)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Subscription{
		c: c, queue: queue, handler: handler, ctx: sctx, cancel: cancel,
		wake: make(chan struct{}, 1), ended: make(chan struct{}), done: make(chan struct{}),
		workers: make(map[uint64]bool),
	}
	s.workerExit = sync.NewCond(&s.mu)
	ch := make(chan core.Event, 1)
	registered := make(chan error, 1)
	if !c.post(func() { registered <- c.register(s, so, ch) }) {
		cancel()
		return nil, ErrClosed
	}
	if err := <-registered; err != nil {
		cancel()
		return nil, err
	}
	select {
	case e := <-ch:
		if e.Outcome == core.OutcomeFailed {
			cancel()
			c.post(func() { c.unregister(s) })
			return nil, outcomeError(e)
		}
	case <-ctx.Done():
		cancel()
		c.post(func() { c.unregister(s) })
		return nil, ctx.Err()
	case <-c.done:
		cancel()
		return nil, ErrClosed
	}
	go s.run(max(so.concurrency, 1))
	return s, nil
}

// register runs on the loop: it records s and starts the core's
// subscription, whose first outcome goes to ch.
func (c *Client) register(s *Subscription, so subscribeOptions, ch chan core.Event) error {
	if c.subs[s.queue] != nil {
		return fmt.Errorf("client: already subscribed to queue %q", s.queue)
	}
	if c.fetches[s.queue] != nil {
		return fmt.Errorf("client: cannot subscribe to queue %q while deliveries fetched from it are unsettled", s.queue)
	}
	c.subs[s.queue] = s
	c.waiters[c.core.Subscribe(time.Now(), s.queue, so.window, so.lease)] = ch
	return nil
}

// unregister runs on the loop: the subscription ends at the node, which
// hands back what it leased to it (but for leases a consumer extended,
// which it keeps until they are settled or run out), and deliveries
// already on their way
// are dropped here (they lapse back into the queue when their leases
// expire).
func (c *Client) unregister(s *Subscription) {
	if c.subs[s.queue] == s {
		delete(c.subs, s.queue)
		c.core.Unsubscribe(time.Now(), s.queue)
	}
}

// Stop stops calling the handler, waits for the calls in progress to
// return, and ends the subscription at the node, which hands the
// messages leased to it back to the queue, all but those whose lease was
// extended (they stay leased until settled or run out). A handler may
// call Stop: it
// then waits for the other calls in progress (with WithConcurrency) and
// returns, the handler is not called again, and Done closes once the
// call it was made from returns.
func (s *Subscription) Stop() {
	s.cancel()
	if !s.isWorker(goroutineID()) {
		<-s.done
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopsInside++
	s.workerExit.Broadcast()
	for len(s.workers) > s.stopsInside {
		s.workerExit.Wait()
	}
	s.stopsInside--
}

// isWorker reports whether goroutine id calls the handler.
func (s *Subscription) isWorker(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[id]
}

// Done is closed once the handler will not be called again and no call
// is in progress.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// push queues a delivery for the handler. It runs on the loop and never
// blocks: the subscription's window bounds the backlog.
func (s *Subscription) push(d *Delivery) {
	s.mu.Lock()
	s.backlog = append(s.backlog, d)
	s.mu.Unlock()
	s.signal()
}

// signal wakes a worker waiting for a delivery, if none is awake yet.
func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end tells the handler goroutine that the client is gone.
func (s *Subscription) end() { s.endOnce.Do(func() { close(s.ended) }) }

// run calls the handler for each delivery, on workers goroutines, and
// returns once every call has.
func (s *Subscription) run(workers int) {
	defer close(s.done)
	defer s.c.post(func() { s.c.unregister(s) })
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := goroutineID()
			s.mu.Lock()
			s.workers[id] = true
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.workers, id)
				s.workerExit.Broadcast()
				s.mu.Unlock()
			}()
			for {
				d := s.next()
				if d == nil {
					return
				}
				s.handler(s.ctx, d)
			}
		}()
	}
	wg.Wait()
}

// next waits for the next delivery, or returns nil once the subscription
// is over.
func (s *Subscription) next() *Delivery {
	for {
		if s.ctx.Err() != nil {
			return nil
		}
		s.mu.Lock()
		if len(s.backlog) > 0 {
			d := s.backlog[0]
			s.backlog[0] = nil
			s.backlog = s.backlog[1:]
			more := len(s.backlog) > 0
			s.mu.Unlock()
			if more {
				// One wake-up stands for the whole backlog: pass it on
				// to another worker waiting.
				s.signal()
			}
			return d
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.ended:
			return nil
		case <-s.ctx.Done():
			return nil
		}
	}
}
