package live

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
)

// TestAStuckConsumerIsHeldBackWhileAnotherDrains runs two consumers of
// one queue over TCP: one whose handlers hang without a word (a consumer
// wedged, or on a host that died with its connection still open), one
// that acks. The owner holds the first back once its leases run out
// unanswered, so the second gets the messages instead of sharing them
// with the stuck one lease after lease.
func TestAStuckConsumerIsHeldBackWhileAnotherDrains(t *testing.T) {
	tn := start(t, singleConfig(t))
	ctx := ctxFor(t, 20*time.Second)
	stuck, live := dial(t, tn.ClientAddr()), dial(t, tn.ClientAddr())
	if err := live.CreateQueue(ctx, "jobs", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	const messages, window = 48, 16
	const lease = 300 * time.Millisecond
	for i := range messages {
		if _, err := live.Publish(ctx, "jobs", fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	var stuckGot atomic.Int64
	release := make(chan struct{})
	defer close(release)
	_, err := stuck.Subscribe(ctx, "jobs", func(ctx context.Context, d *client.Delivery) {
		stuckGot.Add(1)
		<-release // never acks, nacks or extends
	}, client.WithWindow(window), client.WithLease(lease), client.WithConcurrency(4*messages))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the stuck consumer's window", func() bool { return stuckGot.Load() == window })

	acked := make(chan struct{}, 9*messages)
	_, err = live.Subscribe(ctx, "jobs", func(ctx context.Context, d *client.Delivery) {
		if err := d.Ack(ctx); err == nil {
			acked <- struct{}{}
		}
	}, client.WithWindow(window), client.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i := range messages {
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatalf("the live consumer acked %d of %d messages; the stuck one was handed %d", i, messages, stuckGot.Load())
		}
	}
	// Before, each lease that ran out gave the stuck consumer about half
	// of what it let go again; now it takes one at a time, with pauses.
	// The deliveries it took beyond its first window are at most one for
	// each lease the drain lasted.
	took := time.Since(began)
	extra, leases := stuckGot.Load()-window, int64(took/lease)+1
	t.Logf("drained %d messages in %v; the stuck consumer was handed %d past its first window", messages, took.Round(time.Millisecond), extra)
	if extra > leases {
		t.Fatalf("the stuck consumer was handed %d deliveries past its first window in %d leases' time", extra, leases)
	}
	// The stuck consumer's client still confirms its subscription every
	// two seconds; that is no word about its deliveries, and it stays
	// held back while more messages come in over a few seconds.
	before, began := stuckGot.Load(), time.Now()
	for round := range 8 {
		for i := range window {
			if _, err := live.Publish(ctx, "jobs", fmt.Appendf(nil, "more %d.%d", round, i)); err != nil {
				t.Fatalf("publish: %v", err)
			}
		}
		time.Sleep(400 * time.Millisecond)
	}
	for i := range 8 * window {
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatalf("the live consumer acked %d of %d more messages", i, 8*window)
		}
	}
	took = time.Since(began)
	extra, leases = stuckGot.Load()-before, int64(took/lease)+1
	t.Logf("then %d more in %v; the stuck consumer was handed %d of them", 8*window, took.Round(time.Millisecond), extra)
	if extra > leases {
		t.Fatalf("over %v the stuck consumer was handed %d more deliveries, more than one a lease", took, extra)
	}
	if !tn.logsMention(string(event.QueueSubscriberQuiet), "q=jobs") {
		t.Fatal("the node did not log that it held the stuck subscription back")
	}
	st, err := status.FetchAuth(ctx, tn.HTTPAddr(), status.Auth{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	var depth *status.Depth
	for _, q := range st.Queues {
		if q.Name == "jobs" {
			depth = q.Depth
		}
	}
	if depth == nil || depth.Consumers != 2 || depth.HeldBack != 1 {
		t.Fatalf("/status shows the queue's depth as %+v, want 2 consumers, 1 held back", depth)
	}
	held := labelled(scrapeFamilies(t, tn.HTTPAddr())["cairn_queue_consumers_held_back"], "queue=jobs")
	if held == nil || held.GetGauge().GetValue() != 1 {
		t.Fatalf("/metrics shows %v consumers held back, want 1", held)
	}
}
