package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// publishVia publishes through c, a client allowed one attempt per
// publish, until a publish is confirmed. Only the owner confirms, so
// once owner's status still names it the owner, c knows it as the owner
// and sends the queue's publishes there. An attempt that reaches another
// node is refused with a redirect, which teaches c where the owner is.
func publishVia(t *testing.T, ctx context.Context, c *client.Client, owner *procNode) client.MessageID {
	t.Helper()
	var err error
	for range 5 {
		var id client.MessageID
		if id, err = c.Publish(ctx, failoverQueue, []byte("before the pause")); err == nil {
			if v := viewOf(t, ctx, owner, failoverQueue); v.Role != "owner" {
				t.Fatalf("n%d stopped owning the queue before the pause: %+v", owner.id, v)
			}
			return id
		}
	}
	t.Fatalf("publishing to the owner n%d before the pause: %v", owner.id, err)
	return client.MessageID{}
}

// collector is a subscriber on a client of its own that records every
// delivery and acks it.
type collector struct {
	c    *client.Client
	mu   sync.Mutex
	got  map[client.MessageID]bool
	at   time.Time // the first delivery
	err  error     // why subscribing failed, if it did
	wake chan struct{}
}

// subscribeCollector dials a fresh client and subscribes it to queue on
// a goroutine of its own: while the queue has no owner, Subscribe may
// not return until one serves it, and that must not hold up the test's
// other measurements.
func subscribeCollector(t *testing.T, ctx context.Context, addrs []string, queue string) *collector {
	t.Helper()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret), RequestTimeout: time.Second}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{c: c, got: make(map[client.MessageID]bool), wake: make(chan struct{}, 1)}
	go func() {
		_, err := c.Subscribe(ctx, queue, col.handle, client.WithWindow(256), client.WithLease(5*time.Second))
		col.mu.Lock()
		col.err = err
		col.mu.Unlock()
	}()
	return col
}

// handle records a delivery and acks it.
func (col *collector) handle(ctx context.Context, d *client.Delivery) {
	col.mu.Lock()
	if col.at.IsZero() {
		col.at = time.Now()
	}
	col.got[d.ID] = true
	col.mu.Unlock()
	select {
	case col.wake <- struct{}{}:
	default:
	}
	// Ack does not wait for the node, so a frozen node does not hold up
	// the handler; a lost ack only means a redelivery.
	d.Ack(ctx)
}

// failed returns why subscribing failed, if it did.
func (col *collector) failed() error {
	col.mu.Lock()
	defer col.mu.Unlock()
	return col.err
}

func (col *collector) close() { col.c.Close() }

// waitFirst waits for the first delivery until deadline and returns when
// it arrived.
func (col *collector) waitFirst(t *testing.T, deadline time.Time) time.Time {
	t.Helper()
	for time.Now().Before(deadline) {
		col.mu.Lock()
		at := col.at
		col.mu.Unlock()
		if !at.IsZero() {
			return at
		}
		select {
		case <-col.wake:
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("the fresh subscriber received nothing by %v (subscribing: %v)", deadline.Format(time.StampMilli), col.failed())
	return time.Time{}
}

// waitAll waits until every ID in want was delivered.
func (col *collector) waitAll(t *testing.T, want []client.MessageID, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		col.mu.Lock()
		var missing []client.MessageID
		for _, id := range want {
			if !col.got[id] {
				missing = append(missing, id)
			}
		}
		col.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RPO violated: %d of %d confirmed messages never delivered, e.g. %v (subscribing: %v)",
				len(missing), len(want), missing[:min(5, len(missing))], col.failed())
		}
		select {
		case <-col.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe publishes one message from a fresh client, retrying until it is
// confirmed, and records when it was and how many publishes failed
// first. The client keeps its default retry deadline, so one publish
// should ride through the failover.
type probe struct {
	done     chan struct{}
	id       client.MessageID
	at       time.Time
	err      error
	failures int
}

func startProbe(ctx context.Context, addrs []string, queue string) *probe {
	p := &probe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret), RequestTimeout: time.Second,
			MaxBackoff: 200 * time.Millisecond}, addrs...)
		if err != nil {
			p.err = err
			return
		}
		defer c.Close()
		for ctx.Err() == nil {
			id, err := c.Publish(ctx, queue, []byte("probe"))
			if err == nil {
				p.id, p.at = id, time.Now()
				return
			}
			p.err = err
			p.failures++
		}
	}()
	return p
}

// wait returns the probe's confirmed ID and when it was confirmed.
func (p *probe) wait(t *testing.T, deadline time.Time) (client.MessageID, time.Time) {
	t.Helper()
	select {
	case <-p.done:
		if p.at.IsZero() {
			t.Fatalf("the probe publish never succeeded: %v", p.err)
		}
		return p.id, p.at
	case <-time.After(time.Until(deadline)):
		t.Fatalf("no new publish confirmed by %v (last error: %v)", deadline.Format(time.StampMilli), p.err)
	}
	return client.MessageID{}, time.Time{}
}

// background publishes a message every 20ms, one at a time, on a client
// of its own, and keeps the confirmed IDs.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ids    []client.MessageID
	last   time.Time // when the latest confirmation came
	errs   int
}

func startBackground(ctx context.Context, addrs []string, queue string) *background {
	bctx, cancel := context.WithCancel(ctx)
	bg := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(bg.done)
		c, err := client.Dial(bctx, client.Options{Secret: []byte(processSecret), RequestTimeout: time.Second,
			MaxBackoff: 200 * time.Millisecond}, addrs...)
		if err != nil {
			return
		}
		defer c.Close()
		for i := 0; bctx.Err() == nil; i++ {
			id, err := c.Publish(bctx, queue, fmt.Appendf(nil, "background %d", i))
			bg.mu.Lock()
			if err == nil {
				bg.ids, bg.last = append(bg.ids, id), time.Now()
			} else if !errors.Is(err, context.Canceled) {
				bg.errs++
			}
			bg.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return bg
}

// waitConfirmedAfter waits until a background publish is confirmed after
// since: the new owner is taking writes.
func (bg *background) waitConfirmedAfter(t *testing.T, since time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		bg.mu.Lock()
		last := bg.last
		bg.mu.Unlock()
		if last.After(since) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no background publish confirmed within %v of the new owner's activation", timeout)
}

// stop ends the background publisher and returns the IDs it confirmed.
func (bg *background) stop(t *testing.T) []client.MessageID {
	bg.cancel()
	<-bg.done
	bg.mu.Lock()
	defer bg.mu.Unlock()
	t.Logf("background publisher: %d confirmed, %d not (unknown outcome or refused)", len(bg.ids), bg.errs)
	return bg.ids
}
