package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A handler that has seen what it wanted stops its own subscription:
// Stop returns (it used to wait for the very call it was made from), the
// handler is not called again, and Done closes once that call returns.
func TestAHandlerMayStopItsOwnSubscription(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 5)
	subs := make(chan *Subscription, 1)
	stopped := make(chan struct{})
	var calls atomic.Int32
	sub, err := c.Subscribe(ctx, "jobs", func(ctx context.Context, d *Delivery) {
		if calls.Add(1) != 2 {
			return
		}
		(<-subs).Stop()
		close(stopped)
	})
	if err != nil {
		t.Fatal(err)
	}
	subs <- sub
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop called from the handler did not return")
	}
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close after the handler that stopped returned")
	}
	time.Sleep(100 * time.Millisecond)
	if n := calls.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2: it was called again after Stop", n)
	}
}

// With several calls at once, a Stop from one of them still waits for
// the others, and two handlers stopping at once do not wait for each
// other.
func TestAStopFromOneHandlerWaitsForTheOthers(t *testing.T) {
	ctx, c, _ := liveQueue(t, "jobs")
	publishN(t, ctx, c, "jobs", 0, 4)
	var sleeping atomic.Int32
	var all sync.WaitGroup
	all.Add(4)
	subs := make(chan *Subscription, 1)
	var sub *Subscription
	var once sync.Once
	stoppedWith := make(chan int32, 2)
	got, err := c.Subscribe(ctx, "jobs", func(ctx context.Context, d *Delivery) {
		all.Done()
		all.Wait() // all four calls are in progress
		switch string(d.Payload) {
		case "m0", "m1":
			once.Do(func() { sub = <-subs })
			sub.Stop()
			stoppedWith <- sleeping.Load()
		default:
			sleeping.Add(1)
			time.Sleep(300 * time.Millisecond)
			sleeping.Add(-1)
		}
	}, WithConcurrency(4), WithWindow(4))
	if err != nil {
		t.Fatal(err)
	}
	subs <- got
	for range 2 {
		select {
		case n := <-stoppedWith:
			if n != 0 {
				t.Fatalf("Stop returned while %d other calls were in progress", n)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("two handlers stopping at once waited for each other")
		}
	}
}
