package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// rollPublisher publishes to a queue at a steady pace on a client with
// the default settings, without waiting for one publish before sending
// the next, and records how each ended and when.
type rollPublisher struct {
	stopping chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	res      rollResult
	at       []time.Time // when each confirmation came
}

// rollResult is what a rollPublisher saw.
type rollResult struct {
	sent, failed, unknown int
	confirmed             []client.MessageID
	confirmedAt           []time.Time // sorted
	maxLatency            time.Duration
	firstErr              error
}

// startRollPublisher dials a client of its own and publishes to queue
// once every interval until stopped.
func startRollPublisher(ctx context.Context, addrs []string, queue string, every time.Duration) *rollPublisher {
	p := &rollPublisher{stopping: make(chan struct{}), done: make(chan struct{})}
	go p.run(ctx, addrs, queue, every)
	return p
}

func (p *rollPublisher) run(ctx context.Context, addrs []string, queue string, every time.Duration) {
	defer close(p.done)
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret)}, addrs...)
	if err != nil {
		p.record(err)
		return
	}
	defer c.Close()
	var waits sync.WaitGroup
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stopping:
			waits.Wait()
			return
		case <-tick.C:
		}
		sent := time.Now()
		pub := c.PublishAsync(ctx, queue, fmt.Appendf(nil, "roll %d", i))
		waits.Add(1)
		go func() {
			defer waits.Done()
			id, err := pub.Wait()
			p.recordID(id, time.Since(sent), err)
		}()
	}
}

// recordID records one publish's outcome and latency.
func (p *rollPublisher) recordID(id client.MessageID, latency time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.sent++
	switch {
	case err == nil:
		p.res.confirmed = append(p.res.confirmed, id)
		p.at = append(p.at, time.Now())
		p.res.maxLatency = max(p.res.maxLatency, latency)
		return
	case errors.Is(err, client.ErrUnknownOutcome):
		p.res.unknown++
	default:
		p.res.failed++
	}
	if p.res.firstErr == nil {
		p.res.firstErr = err
	}
}

// record records a failure that is not one publish's.
func (p *rollPublisher) record(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.failed++
	p.res.firstErr = err
}

// stop stops publishing, waits for every publish sent to end and
// returns what the publisher saw.
func (p *rollPublisher) stop() rollResult {
	close(p.stopping)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	res := p.res
	res.confirmedAt = slices.Clone(p.at)
	slices.SortFunc(res.confirmedAt, func(a, b time.Time) int { return a.Compare(b) })
	return res
}

// longestGap is the longest time between consecutive confirmations that
// overlaps the span from..to, and when it began.
func (r rollResult) longestGap(from, to time.Time) (time.Duration, time.Time) {
	var gap time.Duration
	var at time.Time
	for i := 1; i < len(r.confirmedAt); i++ {
		a, b := r.confirmedAt[i-1], r.confirmedAt[i]
		if b.Before(from) || a.After(to) {
			continue
		}
		if d := b.Sub(a); d > gap {
			gap, at = d, a
		}
	}
	return gap, at
}

// rollConsumer subscribes to a queue on a client of its own, acks
// everything and counts how often each message was delivered.
type rollConsumer struct {
	c    *client.Client
	mu   sync.Mutex
	got  map[client.MessageID]int
	wake chan struct{}
}

func startRollConsumer(t *testing.T, ctx context.Context, addrs []string, queue string) *rollConsumer {
	t.Helper()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret)}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rollConsumer{c: c, got: make(map[client.MessageID]int), wake: make(chan struct{}, 1)}
	if _, err := c.Subscribe(ctx, queue, rc.handle, client.WithWindow(256)); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *rollConsumer) handle(ctx context.Context, d *client.Delivery) {
	rc.mu.Lock()
	rc.got[d.ID]++
	rc.mu.Unlock()
	select {
	case rc.wake <- struct{}{}:
	default:
	}
	d.Ack(ctx)
}

func (rc *rollConsumer) close() { rc.c.Close() }

// waitAll waits until every ID in want was delivered and returns how
// many messages were delivered more than once, which at-least-once
// delivery allows.
func (rc *rollConsumer) waitAll(t *testing.T, want []client.MessageID, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rc.mu.Lock()
		var missing []client.MessageID
		dups := 0
		for _, id := range want {
			if rc.got[id] == 0 {
				missing = append(missing, id)
			}
		}
		for _, n := range rc.got {
			if n > 1 {
				dups++
			}
		}
		rc.mu.Unlock()
		if len(missing) == 0 {
			return dups
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d confirmed messages never delivered, e.g. %v", len(missing), len(want), missing[:min(5, len(missing))])
		}
		select {
		case <-rc.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}
