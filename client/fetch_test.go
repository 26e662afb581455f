package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
)

// liveQueue serves a one-node cluster for the duration of the test,
// creates queue on it, and returns a client connected to it with a
// function that connects more.
func liveQueue(t *testing.T, queue string) (context.Context, *Client, func() *Client) {
	t.Helper()
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1}},
		DataDir: t.TempDir(), ClientListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0",
		Secret: secret, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-ran })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	connect := func() *Client {
		opts := Options{Secret: secret, RetryBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
		c, err := Dial(ctx, opts, rt.ClientAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := connect()
	for {
		err := c.CreateQueue(ctx, queue, PolicyMajority)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating %s: %v", queue, err)
		}
		time.Sleep(50 * time.Millisecond) // the metadata group is electing its leader
	}
	return ctx, c, connect
}

// publishN publishes payloads m0, m1, ... and fails the test if one is
// not confirmed.
func publishN(t *testing.T, ctx context.Context, c *Client, queue string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := c.Publish(ctx, queue, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("publish m%d: %v", i, err)
		}
	}
}

// Fetch returns as soon as n deliveries have arrived, well before its
// wait, and takes no more than n: the rest stay for the next Fetch.
func TestFetchReturnsNOnceNAreReady(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 10)
	start := time.Now()
	got, err := c.Fetch(ctx, "jobs", 4, 20*time.Second)
	if err != nil || len(got) != 4 {
		t.Fatalf("Fetch(4) = %d deliveries, %v; want 4", len(got), err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Fetch(4) with 10 ready took %v, want it to return once 4 arrived", took)
	}
	for _, d := range got {
		if err := d.AckSync(ctx); err != nil {
			t.Fatalf("ack %s: %v", d.ID, err)
		}
	}
	rest, err := c.Fetch(ctx, "jobs", 10, time.Second)
	if err != nil || len(rest) != 6 {
		t.Fatalf("second Fetch = %d deliveries, %v; want the other 6", len(rest), err)
	}
}

// With fewer than n ready, Fetch returns what there is once wait has
// passed, and not much later.
func TestFetchReturnsFewerAfterWait(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 2)
	const wait = 400 * time.Millisecond
	start := time.Now()
	got, err := c.Fetch(ctx, "jobs", 5, wait)
	took := time.Since(start)
	if err != nil || len(got) != 2 {
		t.Fatalf("Fetch(5) on 2 ready = %d deliveries, %v; want 2", len(got), err)
	}
	if took < wait || took > wait+2*time.Second {
		t.Fatalf("Fetch(5, %v) on 2 ready took %v", wait, took)
	}
}

// What Fetch returned stays leased to its caller, while a message that
// arrives after it returned goes to another consumer at once, not after
// a lease: the client shrinks its window to what it returned. Once the
// caller settles what it fetched, the subscription is gone from the node.
func TestFetchLeavesNothingStrandedAndKeepsWhatItReturned(t *testing.T) {
	ctx, a, connect := liveQueue(t, "jobs")
	publishN(t, ctx, a, "jobs", 0, 1)
	got, err := a.Fetch(ctx, "jobs", 3, 300*time.Millisecond, WithLease(time.Minute))
	if err != nil || len(got) != 1 {
		t.Fatalf("Fetch(3) on 1 ready = %d deliveries, %v; want 1", len(got), err)
	}
	b := connect()
	publishN(t, ctx, a, "jobs", 1, 1)
	other, err := b.Fetch(ctx, "jobs", 2, 3*time.Second)
	if err != nil || len(other) != 1 || string(other[0].Payload) != "m1" {
		t.Fatalf("another consumer fetched %v, %v; want m1 alone (m0 is leased to the first)", payloads(other), err)
	}
	if err := other[0].AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := got[0].AckSync(ctx); err != nil {
		t.Fatalf("ack of the fetched m0: %v", err)
	}
	// The first client's subscription has ended, so the next message
	// goes to the second at once.
	publishN(t, ctx, a, "jobs", 2, 1)
	again, err := b.Fetch(ctx, "jobs", 1, 3*time.Second)
	if err != nil || len(again) != 1 || string(again[0].Payload) != "m2" {
		t.Fatalf("after the first settled everything, the second fetched %v, %v; want m2", payloads(again), err)
	}
}

// A delivery that arrives for a Fetch that has given up is handed back
// to the queue, not held for a lease: when ctx ends Fetch returns its
// error and another consumer gets the messages at once.
func TestFetchCancelledHandsBackWhatArrived(t *testing.T) {
	ctx, a, connect := liveQueue(t, "jobs")
	publishN(t, ctx, a, "jobs", 0, 2)
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	got, err := a.Fetch(cctx, "jobs", 3, time.Minute, WithLease(time.Minute))
	if !errors.Is(err, context.DeadlineExceeded) || len(got) != 0 {
		t.Fatalf("cancelled Fetch = %d deliveries, %v; want none and the deadline", len(got), err)
	}
	b := connect()
	other, err := b.Fetch(ctx, "jobs", 2, 3*time.Second)
	if err != nil || len(other) != 2 {
		t.Fatalf("another consumer fetched %v, %v; want m0 and m1 at once", payloads(other), err)
	}
}

// A client fetches or subscribes per queue, not both.
func TestFetchAndSubscribeExcludeEachOther(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 1)
	got, err := c.Fetch(ctx, "jobs", 1, time.Second)
	if err != nil || len(got) != 1 {
		t.Fatalf("Fetch = %d, %v", len(got), err)
	}
	if _, err := c.Subscribe(ctx, "jobs", func(context.Context, *Delivery) {}); err == nil {
		t.Fatal("Subscribe while a fetched delivery is unsettled succeeded")
	}
	got[0].Ack(ctx)
	sub, err := c.Subscribe(ctx, "jobs", func(context.Context, *Delivery) {})
	if err != nil {
		t.Fatalf("Subscribe once the fetched delivery was acked: %v", err)
	}
	if _, err := c.Fetch(ctx, "jobs", 1, 0); err == nil {
		t.Fatal("Fetch while subscribed succeeded")
	}
	sub.Stop()
}

func payloads(ds []*Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Payload))
	}
	return out
}

// WithConcurrency(4) runs four handler calls at once, and Stop returns
// only once the calls in progress have.
func TestWithConcurrencyOverlapsAndStopWaits(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 8)
	var running, peak, started atomic.Int32
	var once sync.Once
	four := make(chan struct{})
	sub, err := c.Subscribe(ctx, "jobs", func(ctx context.Context, d *Delivery) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if started.Add(1) == 4 {
			once.Do(func() { close(four) })
		}
		time.Sleep(300 * time.Millisecond)
		d.Ack(ctx)
		running.Add(-1)
	}, WithConcurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-four:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called 4 times")
	}
	sub.Stop()
	if n := running.Load(); n != 0 {
		t.Fatalf("Stop returned with %d handler calls still running", n)
	}
	if p := peak.Load(); p != 4 {
		t.Fatalf("at most %d handler calls ran at once, want 4", p)
	}
}

// PublishBatch confirms every message and reports each one's ID in the
// order of the payloads; the messages are queued in that order.
func TestPublishBatchConfirmsAllInOrder(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	const n = 300
	var in [][]byte
	for i := range n {
		in = append(in, fmt.Appendf(nil, "m%d", i))
	}
	results, err := c.PublishBatch(ctx, "jobs", in)
	if err != nil || len(results) != n {
		t.Fatalf("PublishBatch = %d results, %v", len(results), err)
	}
	byID := make(map[MessageID]int)
	for i, r := range results {
		if r.Err != nil || r.ID == (MessageID{}) {
			t.Fatalf("result %d: %v, %v", i, r.ID, r.Err)
		}
		byID[r.ID] = i
	}
	got, err := c.Fetch(ctx, "jobs", n, 10*time.Second)
	if err != nil || len(got) != n {
		t.Fatalf("fetched %d of %d: %v", len(got), n, err)
	}
	for i, d := range got {
		if j, ok := byID[d.ID]; !ok || string(d.Payload) != fmt.Sprintf("m%d", j) {
			t.Fatalf("delivery %s carries %q, but its result is number %d (%v)", d.ID, d.Payload, j, ok)
		}
		if string(d.Payload) != fmt.Sprintf("m%d", i) {
			t.Fatalf("delivery %d is %q: the batch was not queued in order", i, d.Payload)
		}
	}
}

// A batch whose ctx has ended starts nothing, and says so plainly: each
// result carries ctx's error, never an unknown outcome.
func TestPublishBatchNotStartedIsNotUnknown(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	done, cancel := context.WithCancel(ctx)
	cancel()
	results, err := c.PublishBatch(done, "jobs", [][]byte{[]byte("a"), []byte("b")})
	if !errors.Is(err, context.Canceled) || len(results) != 2 {
		t.Fatalf("PublishBatch with an ended ctx = %v, %v", results, err)
	}
	for _, r := range results {
		if !errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, ErrUnknownOutcome) {
			t.Fatalf("result %v: want ctx's error and a known outcome", r)
		}
	}
}

// A fetched delivery left unsettled past its lease stops counting once
// the lease has run out: the client ends the subscription behind the
// Fetch (handing back what the node sent it meanwhile), instead of
// keeping it, and what it holds, for good.
func TestFetchLapsedLeaseEndsTheSubscription(t *testing.T) {
	ctx, a, connect := liveQueue(t, "jobs")
	publishN(t, ctx, a, "jobs", 0, 1)
	const lease = 300 * time.Millisecond
	got, err := a.Fetch(ctx, "jobs", 2, 200*time.Millisecond, WithLease(lease))
	if err != nil || len(got) != 1 {
		t.Fatalf("Fetch = %d, %v", len(got), err)
	}
	publishN(t, ctx, a, "jobs", 1, 1)
	time.Sleep(lease + lapseSlack + 300*time.Millisecond)
	sessions := make(chan int, 1)
	a.post(func() { sessions <- len(a.fetches) })
	if n := <-sessions; n != 0 {
		t.Fatalf("%d Fetch subscriptions still stand after their only delivery's lease ran out", n)
	}
	b := connect()
	start := time.Now()
	other, err := b.Fetch(ctx, "jobs", 2, 5*time.Second)
	if err != nil || len(other) != 2 || time.Since(start) > 2*time.Second {
		t.Fatalf("another consumer fetched %v, %v after %v; want m0 and m1 at once", payloads(other), err, time.Since(start))
	}
}

// When the lease of a fetched delivery runs out at the node before the
// client counts it lapsed, the node sends that message to the client
// again: the client takes that as the end of the earlier lease and hands
// the message back at once (shrinking its window first, so it does not
// come straight back), while the delivery it keeps extending stays its.
func TestFetchHandsBackAMessageWhoseLeaseRanOut(t *testing.T) {
	ctx, a, connect := liveQueue(t, "jobs")
	publishN(t, ctx, a, "jobs", 0, 2)
	const lease = 300 * time.Millisecond
	got, err := a.Fetch(ctx, "jobs", 2, time.Second, WithLease(lease))
	if err != nil || len(got) != 2 {
		t.Fatalf("Fetch = %d, %v", len(got), err)
	}
	if err := got[1].Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease + lapseSlack/4)
	state := make(chan [2]int, 1)
	a.post(func() { f := a.fetches["jobs"]; state <- [2]int{len(f.live), len(f.held)} })
	if s := <-state; s != [2]int{1, 0} {
		t.Fatalf("before its own lapse count the client has %d live and %d held deliveries, want 1 and 0", s[0], s[1])
	}
	b := connect()
	other, err := b.Fetch(ctx, "jobs", 1, 2*time.Second)
	if err != nil || len(other) != 1 || string(other[0].Payload) != string(got[0].Payload) || other[0].Attempt < 2 {
		t.Fatalf("another consumer fetched %v, %v; want %s delivered again", payloads(other), err, got[0].Payload)
	}
}

// A Fetch while deliveries of the previous one are unsettled widens the
// window by what it wants, so it gets that many more, and then shrinks
// it back to what is unsettled.
func TestFetchAgainBeforeSettling(t *testing.T) {
	ctx, c, connect := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 5)
	first, err := c.Fetch(ctx, "jobs", 2, 5*time.Second)
	if err != nil || len(first) != 2 {
		t.Fatalf("first Fetch = %v, %v", payloads(first), err)
	}
	second, err := c.Fetch(ctx, "jobs", 2, 5*time.Second)
	if err != nil || len(second) != 2 || second[0].Payload[1] < '2' || second[1].Payload[1] < '2' {
		t.Fatalf("second Fetch = %v, %v; want two of m2, m3, m4", payloads(second), err)
	}
	other, err := connect().Fetch(ctx, "jobs", 5, time.Second)
	if err != nil || len(other) != 1 {
		t.Fatalf("another consumer fetched %v, %v; want the one left", payloads(other), err)
	}
}
