package core

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// A publish during a failover meets a run of clean refusals (the queue is
// recovering) that lasts longer than six quick attempts take. Bounded by
// a deadline instead of a count, it keeps retrying and succeeds once the
// new owner serves; bounded by six attempts, as the client was before, it
// gives up first with its outcome unknown.
func TestRetryForRidesThroughAFailover(t *testing.T) {
	const failover = 1500 * time.Millisecond
	for _, tc := range []struct {
		name     string
		attempts int
		retryFor time.Duration
		want     Outcome
	}{
		{"six attempts", 6, 0, OutcomeUnknown},
		{"a deadline", 0, 10 * time.Second, OutcomeOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxAttempts, cfg.RetryFor = tc.attempts, tc.retryFor
			cfg.RetryBackoff, cfg.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
			h := newHarness(t, cfg)
			h.learnOwner("orders", 1)
			began := h.now
			op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
			for {
				to, p := expectSend[*wire.Publish](h)
				if h.now.Sub(began) >= failover {
					h.reply(to, p.ReqID, wire.StatusOK, 0, 1)
				} else {
					h.reply(to, p.ReqID, wire.StatusUnavailable, 0, 0)
				}
				if evs := h.opEvents(); len(evs) > 0 {
					if len(evs) != 1 || evs[0].Op != op || evs[0].Outcome != tc.want {
						t.Fatalf("after %v: %v, want op %d to end %v", h.now.Sub(began), evs, op, tc.want)
					}
					return
				}
				h.runToDeadline()
			}
		})
	}
}

// Once RetryFor has passed, the operation gives up at its next retry
// decision, however few attempts it made.
func TestRetryForEndsAnOperation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxAttempts, cfg.RetryFor = 0, 3*time.Second
	h := newHarness(t, cfg)
	h.learnOwner("orders", 1)
	began := h.now
	op, _ := h.c.Publish(h.now, "orders", []byte("x"), 0)
	attempts := 0
	for {
		if out := h.sends(); len(out) == 1 {
			attempts++
			// Silence: each attempt times out after RequestTimeout (1 s).
		} else if len(out) > 1 {
			t.Fatalf("%d messages sent at once", len(out))
		}
		if evs := h.opEvents(); len(evs) > 0 {
			took := h.now.Sub(began)
			if evs[0].Op != op || evs[0].Outcome != OutcomeUnknown || took < 3*time.Second || took > 5*time.Second {
				t.Fatalf("ended %v after %v and %d attempts, want unknown between 3 s and 5 s", evs, took, attempts)
			}
			if attempts < 2 {
				t.Fatalf("only %d attempts in %v", attempts, took)
			}
			return
		}
		h.runToDeadline()
	}
}
