//go:build linux

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// publishRecord is one publish of the steady publisher: when it was
// started and when and how it ended.
type publishRecord struct {
	id   client.MessageID
	sent time.Time
	done time.Time // zero while it waits
	err  error
}

// steadyPublisher publishes at a fixed rate on a client of its own with
// the client's default settings, as an application would, keeping every
// publish's outcome.
type steadyPublisher struct {
	c       *client.Client
	cancel  context.CancelFunc
	ticking chan struct{} // closed once no publish will start
	waits   sync.WaitGroup
	mu      sync.Mutex
	records []*publishRecord
}

// startPublisher starts publishing rate messages a second to queue.
// Each publish keeps its own context, ctx, so that stopping the ticks
// lets the publishes under way run to their outcome.
func startPublisher(t *testing.T, ctx context.Context, addrs []string, queue string, rate int) *steadyPublisher {
	t.Helper()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret)}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithCancel(ctx)
	p := &steadyPublisher{c: c, cancel: cancel, ticking: make(chan struct{})}
	go p.tick(tctx, ctx, queue, time.Second/time.Duration(rate))
	return p
}

func (p *steadyPublisher) tick(tctx, ctx context.Context, queue string, every time.Duration) {
	defer close(p.ticking)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-tick.C:
		case <-tctx.Done():
			return
		}
		rec := &publishRecord{sent: time.Now()}
		pub := p.c.PublishAsync(ctx, queue, fmt.Appendf(nil, "partition suite %d", seq))
		p.mu.Lock()
		p.records = append(p.records, rec)
		p.mu.Unlock()
		p.waits.Go(func() {
			id, err := pub.Wait()
			p.mu.Lock()
			rec.id, rec.err, rec.done = id, err, time.Now()
			p.mu.Unlock()
		})
	}
}

// confirmedAfter reports whether a publish started at or after since
// has been confirmed.
func (p *steadyPublisher) confirmedAfter(since time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range slices.Backward(p.records) {
		if r.sent.Before(since) {
			return false
		}
		if !r.done.IsZero() && r.err == nil {
			return true
		}
	}
	return false
}

// stop stops publishing, waits for every publish under way to end (the
// client's retry deadline bounds each) and returns all the records.
func (p *steadyPublisher) stop() []publishRecord {
	p.cancel()
	<-p.ticking
	p.waits.Wait()
	p.c.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]publishRecord, len(p.records))
	for i, r := range p.records {
		out[i] = *r
	}
	return out
}

// deliveryRecord is one delivery the consumer received.
type deliveryRecord struct {
	id      client.MessageID
	attempt uint32
	at      time.Time
}

// ackingConsumer subscribes on a client of its own with default settings
// and settles every delivery with AckSync, off the handler, so that it
// knows which settles were confirmed: a message whose settle was
// confirmed must never be delivered again.
type ackingConsumer struct {
	c       *client.Client
	acks    sync.WaitGroup
	wake    chan struct{}
	mu      sync.Mutex
	got     []deliveryRecord
	settled map[client.MessageID]time.Time // when its AckSync returned nil
	subErr  error
}

// consumerLease is the subscription's delivery lease. The default, 30s,
// is what messages the old owner leased wait out after a failover
// before a new owner may deliver them again; the suite's drain would
// wait that long for a message delivered but not settled at the cut.
const consumerLease = 5 * time.Second

// startConsumer subscribes to queue on a goroutine: while the queue has
// no owner Subscribe may wait, and the test goes on meanwhile.
func startConsumer(t *testing.T, ctx context.Context, addrs []string, queue string) *ackingConsumer {
	t.Helper()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret)}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	ac := &ackingConsumer{c: c, wake: make(chan struct{}, 1), settled: make(map[client.MessageID]time.Time)}
	go func() {
		_, err := c.Subscribe(ctx, queue, ac.handle, client.WithLease(consumerLease))
		ac.mu.Lock()
		ac.subErr = err
		ac.mu.Unlock()
	}()
	return ac
}

func (ac *ackingConsumer) handle(ctx context.Context, d *client.Delivery) {
	ac.mu.Lock()
	ac.got = append(ac.got, deliveryRecord{id: d.ID, attempt: d.Attempt, at: time.Now()})
	ac.mu.Unlock()
	select {
	case ac.wake <- struct{}{}:
	default:
	}
	ac.acks.Go(func() {
		if d.AckSync(ctx) == nil {
			ac.mu.Lock()
			if _, ok := ac.settled[d.ID]; !ok {
				ac.settled[d.ID] = time.Now()
			}
			ac.mu.Unlock()
		}
	})
}

// waitAll waits until every ID in want was delivered, or timeout passes,
// and returns those never delivered.
func (ac *ackingConsumer) waitAll(want []client.MessageID, timeout time.Duration) []client.MessageID {
	deadline := time.Now().Add(timeout)
	for {
		ac.mu.Lock()
		have := make(map[client.MessageID]bool, len(ac.got))
		for _, d := range ac.got {
			have[d.id] = true
		}
		ac.mu.Unlock()
		var missing []client.MessageID
		for _, id := range want {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		select {
		case <-ac.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop closes the client once the settles under way have ended, and
// returns the deliveries and confirmed settles.
func (ac *ackingConsumer) stop() ([]deliveryRecord, map[client.MessageID]time.Time) {
	ac.acks.Wait()
	ac.c.Close()
	ac.mu.Lock()
	defer ac.mu.Unlock()
	return slices.Clone(ac.got), ac.settled
}

// subscribeError is why subscribing failed, if it did.
func (ac *ackingConsumer) subscribeError() error {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	return ac.subErr
}
