package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
)

// timedPublisher publishes at a steady rate with many publishes in
// flight, and records when each confirmation came: the gaps between
// confirmations are what a planned move or a failover costs a producer.
type timedPublisher struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	times   []time.Time     // confirmation instants, as they came
	lats    []time.Duration // each confirmed publish's latency, as times
	ids     []client.MessageID
	failed  int // refused: certainly not queued
	unknown int // may or may not be queued
}

// startTimed starts publishing rate messages a second to queue, with at
// most inFlight unsettled: past that, publishing waits.
func startTimed(ctx context.Context, c *client.Client, queue string, rate, inFlight int) *timedPublisher {
	pctx, cancel := context.WithCancel(ctx)
	tp := &timedPublisher{cancel: cancel}
	tp.wg.Add(1)
	go func() {
		defer tp.wg.Done()
		tp.pace(pctx, c, queue, rate, make(chan struct{}, inFlight))
	}()
	return tp
}

// pace starts as many publishes at each tick as the rate calls for since
// the start, each settled on a goroutine of its own, which records the
// outcome the moment it comes.
func (tp *timedPublisher) pace(ctx context.Context, c *client.Client, queue string, rate int, slots chan struct{}) {
	began := time.Now()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int(now.Sub(began).Seconds() * float64(rate))
			for ; sent < due && ctx.Err() == nil; sent++ {
				slots <- struct{}{}
				began := time.Now()
				// Stopping the producer must not turn the publishes in
				// flight into unknown outcomes.
				p := c.PublishAsync(context.WithoutCancel(ctx), queue, payload)
				tp.wg.Add(1)
				go func() {
					defer tp.wg.Done()
					id, err := p.Wait()
					now := time.Now()
					tp.record(now, now.Sub(began), id, err)
					<-slots
				}()
			}
		}
	}
}

// record keeps one publish's outcome, when it came and how long after
// the publish call.
func (tp *timedPublisher) record(at time.Time, latency time.Duration, id client.MessageID, err error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	switch {
	case err == nil:
		tp.times = append(tp.times, at)
		tp.lats = append(tp.lats, latency)
		tp.ids = append(tp.ids, id)
	case errors.Is(err, client.ErrUnknownOutcome):
		tp.unknown++
	default:
		tp.failed++
	}
}

// stop ends publishing and waits for every publish started to settle.
func (tp *timedPublisher) stop() {
	tp.cancel()
	tp.wg.Wait()
}

// counts returns the tallies so far.
func (tp *timedPublisher) counts() (confirmed, failed, unknown int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return len(tp.ids), tp.failed, tp.unknown
}

// confirmedIDs returns a copy of the IDs confirmed so far.
func (tp *timedPublisher) confirmedIDs() []client.MessageID {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.ids)
}

// awaitConfirmAfter waits until a publish is confirmed after t, and
// reports whether one was before ctx ended.
func (tp *timedPublisher) awaitConfirmAfter(ctx context.Context, t time.Time) bool {
	for {
		tp.mu.Lock()
		n := len(tp.times)
		last := time.Time{}
		if n > 0 {
			last = tp.times[n-1]
		}
		tp.mu.Unlock()
		if last.After(t) {
			return true
		}
		if sleep(ctx, 5*time.Millisecond) != nil {
			return false
		}
	}
}

// longestGap is the longest time between two consecutive confirmations
// of which the later came after from and the earlier not after to: the
// pair that spans from counts, so a stall that began just before it is
// measured whole.
func (tp *timedPublisher) longestGap(from, to time.Time) time.Duration {
	tp.mu.Lock()
	ts := slices.Clone(tp.times)
	tp.mu.Unlock()
	return longestGap(ts, from, to)
}

// longestGap computes timedPublisher.longestGap over confirmation
// instants ts, in any order.
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].After(from) && !ts[i-1].After(to) {
			gap = max(gap, ts[i].Sub(ts[i-1]))
		}
	}
	return gap
}

// maxLatency is the longest time from a publish call to its confirmation
// among the publishes confirmed from from to to.
func (tp *timedPublisher) maxLatency(from, to time.Time) time.Duration {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var worst time.Duration
	for i, at := range tp.times {
		if !at.Before(from) && !at.After(to) {
			worst = max(worst, tp.lats[i])
		}
	}
	return worst
}
