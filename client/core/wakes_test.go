package core

import (
	"testing"
	"time"
)

// TestATickThatLeavesAWakeTimeAsItWasFilesNothing sends one publish and
// ticks through the hedge delay and the reply timeout's approach: each
// tick that finds nothing due, and each change that leaves the deadline
// where it was, keeps the one entry the send filed instead of queueing a
// copy behind it.
func TestATickThatLeavesAWakeTimeAsItWasFilesNothing(t *testing.T) {
	h := newHarness(t, unhedgedConfig())
	h.c.Publish(h.now, "orders", []byte("x"), 0)
	if len(h.sends()) != 1 {
		t.Fatal("the publish was not sent")
	}
	if n := h.c.wakes.Len(); n != 1 {
		t.Fatalf("after one send the wake queue holds %d entries, want 1", n)
	}
	for range 10 {
		h.advance(50 * time.Millisecond)
		for _, op := range h.c.live {
			h.c.rewake(op)
		}
	}
	if n := h.c.wakes.Len(); n != 1 {
		t.Fatalf("after ticks and changes that left its deadline alone the wake queue holds %d entries, want 1", n)
	}
	// The reply timeout still fires from the entry that stood, and the
	// retry follows its backoff.
	h.advance(time.Second)
	h.advance(200 * time.Millisecond)
	if got := len(h.sends()); got != 1 {
		t.Fatalf("the reply timeout sent %d retries, want 1", got)
	}
}
