package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// peerPublishSlack is how much longer than its window a peer may take to
// answer a publish window: creating its stream and consumer, waiting for
// the last acknowledgements and for the consumer to receive everything.
const peerPublishSlack = 3 * time.Minute

// windowFigures is what the peer comparison keeps of one window, on
// either side: the confirmation rate and that window's confirm latency.
type windowFigures struct {
	rate                    float64
	lat                     percentiles
	confirmed, failed, lost int
}

// figures reduces a cairn window to what the comparison keeps; unknown
// outcomes and refusals both count as failed.
func (w windowResult) figures() windowFigures {
	return windowFigures{rate: w.rate, lat: latencyPercentiles(w.latencies), confirmed: w.confirmed, failed: w.unknown + w.refused, lost: w.lost}
}

// publishWindow asks the harness for one publish window.
func (p *peerHarness) publishWindow(ctx context.Context, cfg throughputConfig) (windowFigures, error) {
	line := fmt.Sprintf("publish %g %g %d %d", cfg.window.Seconds(), cfg.warmup.Seconds(), cfg.inFlight, payloadSize)
	a, err := p.request(ctx, line, cfg.window+peerPublishSlack)
	if err != nil {
		return windowFigures{}, err
	}
	return windowFigures{rate: a.Rate, lat: percentiles{p50: seconds(a.P50), p99: seconds(a.P99), max: seconds(a.Max)},
		confirmed: a.Confirmed, failed: a.Failed, lost: a.Lost}, nil
}

// summary describes a window in a line.
func (w windowFigures) summary() string {
	return fmt.Sprintf("%.0f msg/s; confirm latency p50 %s p99 %s max %s; %d confirmed, %d failed, %d lost",
		w.rate, us(w.lat.p50), us(w.lat.p99), us(w.lat.max), w.confirmed, w.failed, w.lost)
}

// throughputAgainstPeer drives side A's cairn cluster and the peer
// harness in turn, window for window, and reports cairn's figures as
// ratios of the peer's.
func throughputAgainstPeer(ctx context.Context, cfg throughputConfig, tmp string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench throughput", w: stderr}
	s, err := startBuiltSide(ctx, cfg.sides[0], tmp)
	if err != nil {
		return rep.failed(err)
	}
	defer s.close()
	peer, err := startPeer(ctx, cfg.peer, stderr)
	if err != nil {
		return rep.failed(err)
	}
	defer peer.close()
	fmt.Fprintf(stdout, "cairn-bench throughput: 3 cairn-node processes on loopback (info logs, one majority queue) and the peer %q, "+
		"driven in turn: %d rounds of %v per side (the first %v of each not counted), cairn first in even rounds; "+
		"%d pipelined publishes of %d B outstanding, one consumer each acking everything fire-and-forget (cairn Ack, JetStream Ack); %d CPUs\n  cairn: %s, settings %q\n",
		cfg.peer, cfg.rounds, cfg.window, cfg.warmup, cfg.inFlight, payloadSize, runtime.NumCPU(), s.bin, s.settings)
	var cairn, other []windowFigures
	for r := range cfg.rounds {
		for i := range 2 {
			if ctx.Err() != nil {
				return rep.failed(ctx.Err())
			}
			if (r+i)%2 == 0 {
				w := s.drive(ctx, cfg).figures()
				cairn = append(cairn, w)
				fmt.Fprintf(stderr, "round %d/%d cairn: %s\n", r+1, cfg.rounds, w.summary())
				continue
			}
			w, err := peer.publishWindow(ctx, cfg)
			if err != nil {
				return rep.failed(fmt.Errorf("round %d, peer: %w", r+1, err))
			}
			other = append(other, w)
			fmt.Fprintf(stderr, "round %d/%d peer:  %s\n", r+1, cfg.rounds, w.summary())
		}
	}
	return peerThroughputReport(stdout, cairn, other)
}

// sideFigures sums up one side's windows: the median window's rate, the
// median of the windows' p50 and p99 latencies, the slowest confirmation,
// and the totals.
type sideFigures struct {
	rate, minRate, maxRate  float64
	p50, p99, max           time.Duration
	confirmed, failed, lost int
}

// summarizeWindows sums up windows.
func summarizeWindows(windows []windowFigures) sideFigures {
	var f sideFigures
	var rates, p50s, p99s []time.Duration
	for i, w := range windows {
		// Rates go through the nearest-rank summary as durations.
		rates = append(rates, time.Duration(w.rate*1000))
		p50s, p99s = append(p50s, w.lat.p50), append(p99s, w.lat.p99)
		f.max = max(f.max, w.lat.max)
		if i == 0 || w.rate < f.minRate {
			f.minRate = w.rate
		}
		f.maxRate = max(f.maxRate, w.rate)
		f.confirmed, f.failed, f.lost = f.confirmed+w.confirmed, f.failed+w.failed, f.lost+w.lost
	}
	f.rate = float64(latency.Summarize(rates).Median) / 1000
	f.p50, f.p99 = latency.Summarize(p50s).Median, latency.Summarize(p99s).Median
	return f
}

// peerThroughputReport prints both sides' figures and cairn's as ratios
// of the peer's, and returns the exit code: a confirmed message lost on
// either side is a failure.
func peerThroughputReport(w io.Writer, cairn, peer []windowFigures) int {
	c, p := summarizeWindows(cairn), summarizeWindows(peer)
	fmt.Fprintf(w, "%-6s %-34s %-44s %s\n", "side", "msg/s per window: median (min-max)", "confirm latency: median window p50 / p99, max", "windows, confirmed, failed, lost")
	for _, side := range []struct {
		name string
		f    sideFigures
		n    int
	}{{"cairn", c, len(cairn)}, {"peer", p, len(peer)}} {
		fmt.Fprintf(w, "%-6s %-34s %-44s %d, %d, %d, %d\n", side.name,
			fmt.Sprintf("%.0f (%.0f-%.0f)", side.f.rate, side.f.minRate, side.f.maxRate),
			fmt.Sprintf("%s / %s, %s", us(side.f.p50), us(side.f.p99), us(side.f.max)),
			side.n, side.f.confirmed, side.f.failed, side.f.lost)
	}
	fmt.Fprintf(w, "cairn / peer: throughput (median window) %.2f; confirm latency p50 %.2f, p99 %.2f (below 1: cairn faster)\n",
		ratioF(c.rate, p.rate), ratio(c.p50, p.p50), ratio(c.p99, p.p99))
	if c.lost > 0 || p.lost > 0 {
		return exitLost
	}
	return exitOK
}
