package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/latency"
)

// windowResult is what one window of driving a side measured.
type windowResult struct {
	rate      float64         // confirmed publishes per second completed in the counted part
	latencies []time.Duration // confirm latency of each publish started in the counted part
	confirmed int             // every confirmed publish of the window
	unknown   int
	refused   int
	lost      int // confirmed, yet not delivered to the subscriber
}

// windowTally collects the outcomes of a window's publishes as they
// complete.
type windowTally struct {
	mu        sync.Mutex
	countFrom time.Time // completions from here on count toward the rate
	end       time.Time // and up to here
	counted   int
	res       windowResult
	confirmed []client.MessageID
}

// record notes one publish's outcome.
func (t *windowTally) record(started, done time.Time, id client.MessageID, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		t.confirmed = append(t.confirmed, id)
		if !done.Before(t.countFrom) && !done.After(t.end) {
			t.counted++
		}
		if !started.Before(t.countFrom) {
			t.res.latencies = append(t.res.latencies, done.Sub(started))
		}
	case errors.Is(err, client.ErrUnknownOutcome):
		t.res.unknown++
	default:
		t.res.refused++
	}
}

// drive publishes to the side's queue for one window with cfg.inFlight
// publishes outstanding, waits for every outcome, and checks that every
// confirmed message reached the subscriber.
func (s *abSide) drive(ctx context.Context, cfg throughputConfig) windowResult {
	began := time.Now()
	t := &windowTally{countFrom: began.Add(cfg.warmup), end: began.Add(cfg.window)}
	slots := make(chan struct{}, cfg.inFlight)
	var wg conc.WaitGroup
	if cfg.profile != "" && s.name == cfg.sides[0].name && !s.profiled {
		s.profiled = true
		wg.Go(func() { s.profileWindow(ctx, cfg) })
	}
	for ctx.Err() == nil && time.Now().Before(t.end) {
		slots <- struct{}{}
		started := time.Now()
		p := s.pub.PublishAsync(ctx, benchQueue, payload)
		wg.Go(func() {
			id, err := p.Wait()
			done := time.Now()
			<-slots
			t.record(started, done, id, err)
		})
	}
	wg.Wait()
	t.res.rate = float64(t.counted) / (cfg.window - cfg.warmup).Seconds()
	t.res.confirmed = len(t.confirmed)
	t.res.lost = s.col.awaitAll(ctx, t.confirmed, time.Now().Add(time.Minute))
	s.col.awaitSettled(ctx, s.sub, benchQueue, time.Now().Add(10*time.Second))
	return t.res
}

// profileWindow records the CPU profiles of the side's nodes and of this
// process (its publishing and subscribing clients) from the end of the
// window's warmup, for cfg.profileFor.
func (s *abSide) profileWindow(ctx context.Context, cfg throughputConfig) {
	if sleep(ctx, cfg.warmup) != nil {
		return
	}
	nodes := profileCluster(ctx, s.cl, cfg.profile, "publish", cfg.profileFor)
	profileSelf(cfg.profile, "publish", cfg.profileFor)()
	nodes.Wait()
}

// summary describes a window in a line.
func (w windowResult) summary() string {
	d := latencyPercentiles(w.latencies)
	return fmt.Sprintf("%.0f msg/s; confirm latency p50 %s p99 %s max %s; %d confirmed, %d unknown, %d refused, %d lost",
		w.rate, us(d.p50), us(d.p99), us(d.max), w.confirmed, w.unknown, w.refused, w.lost)
}

// percentiles are the confirm-latency figures the report gives.
type percentiles struct{ p50, p99, max time.Duration }

// latencyPercentiles computes the median, 99th percentile and maximum.
func latencyPercentiles(ds []time.Duration) percentiles {
	if len(ds) == 0 {
		return percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return percentiles{latency.Percentile(s, 50), latency.Percentile(s, 99), s[len(s)-1]}
}

// us prints a duration in milliseconds with two decimals.
func us(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// throughputReport prints each side's throughput over its windows and
// its pooled confirm latency, then B's figures as ratios of A's, and
// returns the exit code.
func throughputReport(w io.Writer, sides [2]*abSide) int {
	code := exitOK
	var rates [2]latency.Summary
	var lats [2]percentiles
	fmt.Fprintf(w, "%-6s %-34s %-34s %s\n", "side", "msg/s per window: median (min-max)", "confirm latency p50 / p99 / max", "windows, confirmed, unknown, refused, lost")
	for i, s := range sides {
		var rs []time.Duration // rates as durations, to reuse the nearest-rank summary
		var all []time.Duration
		confirmed, unknown, refused, lost := 0, 0, 0, 0
		minRate, maxRate := 0.0, 0.0
		for j, win := range s.windows {
			rs = append(rs, time.Duration(win.rate*1000))
			all = append(all, win.latencies...)
			confirmed, unknown, refused, lost = confirmed+win.confirmed, unknown+win.unknown, refused+win.refused, lost+win.lost
			if j == 0 || win.rate < minRate {
				minRate = win.rate
			}
			maxRate = max(maxRate, win.rate)
		}
		rates[i], lats[i] = latency.Summarize(rs), latencyPercentiles(all)
		fmt.Fprintf(w, "%-6s %-34s %-34s %d, %d, %d, %d, %d\n", s.name,
			fmt.Sprintf("%.0f (%.0f-%.0f)", float64(rates[i].Median)/1000, minRate, maxRate),
			fmt.Sprintf("%s / %s / %s", us(lats[i].p50), us(lats[i].p99), us(lats[i].max)),
			len(s.windows), confirmed, unknown, refused, lost)
		if lost > 0 {
			code = exitLost
		}
	}
	fmt.Fprintf(w, "B / A: throughput (median window) %.3f; confirm latency p50 %.3f, p99 %.3f\n",
		ratioF(float64(rates[1].Median), float64(rates[0].Median)),
		ratio(lats[1].p50, lats[0].p50), ratio(lats[1].p99, lats[0].p99))
	return code
}

// ratioF is a/b, or 0 when b is 0.
func ratioF(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
