package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/latency"
)

// restartTimeout bounds how long a restarted node may take to catch up.
// Without checkpoints it replays every record it holds, so the bound is
// generous.
const restartTimeout = 3 * time.Minute

// startLong starts a long-lived cluster under dir/name and creates its
// queue. Its trials leave backlog messages unconsumed before each kill.
func startLong(ctx context.Context, name, bin, dir string, cfg historyConfig, backlog int) (*longCluster, error) {
	cdir := filepath.Join(dir, name)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, err
	}
	cl, err := startCluster(bin, cdir, 3, cfg.logLevel, cfg.nodeSettings())
	if err != nil {
		return nil, err
	}
	lc := &longCluster{name: name, cl: cl, backlog: backlog,
		te: &trialEnv{cfg: failoverConfig{timeout: cfg.timeout, traffic: "idle", keep: "none"}, bin: bin,
			stages: cfg.logLevel == "debug", infoLogs: cfg.logLevel == "info", settleAcks: true}}
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		lc.close()
		return nil, fmt.Errorf("%s cluster: %w", name, err)
	}
	if lc.setup, err = client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, cl.clientAddrs()...); err != nil {
		lc.close()
		return nil, err
	}
	if err := createQueue(ctx, lc.setup, 30*time.Second); err != nil {
		lc.close()
		return nil, fmt.Errorf("%s cluster: %w", name, err)
	}
	return lc, nil
}

// close stops the cluster.
func (lc *longCluster) close() {
	if lc.setup != nil {
		lc.setup.Close()
	}
	lc.cl.stop()
}

// buildSettled publishes n messages while one subscriber acks them, and
// returns once every one is delivered and its ack came back.
func (lc *longCluster) buildSettled(ctx context.Context, n int, out io.Writer) error {
	subC, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, lc.cl.clientAddrs()...)
	if err != nil {
		return err
	}
	defer subC.Close()
	col := subscribe(ctx, subC, benchQueue)
	began := time.Now()
	o := publishBacklog(ctx, lc.setup, benchQueue, n, 512)
	want, unknown, refused := o.snapshot()
	if refused > 0 {
		return fmt.Errorf("building the settled history: %d of %d publishes refused", refused, n)
	}
	if missing := col.awaitAll(ctx, want, time.Now().Add(10*time.Minute)); missing > 0 {
		return fmt.Errorf("building the settled history: %d of %d confirmed messages not delivered in 10 minutes", missing, len(want))
	}
	col.awaitAcks(ctx, time.Now().Add(time.Minute))
	took := time.Since(began)
	c := col.counts()
	fmt.Fprintf(out, "settled history: %d confirmed (%d unknown), %d delivered, %d acked, %d acks failed, in %v (%.0f msg/s published and acked)\n",
		len(want), unknown, c.delivered, c.acked, c.ackFailed, took.Round(time.Second), float64(len(want))/took.Seconds())
	return ctx.Err()
}

// printDisk prints each node's view of the queue's storage and the size
// of its data directory.
func (lc *longCluster) printDisk(ctx context.Context, out io.Writer, when string) {
	fmt.Fprintf(out, "%s cluster, %s:\n", lc.name, when)
	for _, m := range lc.cl.members {
		size, err := dirBytes(m.dataDir)
		_, q, ok := m.view(ctx, benchQueue)
		if !ok || err != nil {
			fmt.Fprintf(out, "  n%d: no view of the queue (%v)\n", m.id, err)
			continue
		}
		fmt.Fprintf(out, "  n%d %-8s log %d..%d, %d segments, %.1f MB retained; checkpoint at %d (%.1f MB), certified %d; data directory %.1f MB\n",
			m.id, q.Role, q.FirstIndex, q.LastIndex, q.Segments, mb(q.RetainedBytes), q.CheckpointIndex,
			mb(int64(q.CheckpointBytes)), q.CertifiedIndex, mb(size))
	}
}

// mb converts bytes to megabytes.
func mb(n int64) float64 { return float64(n) / 1e6 }

// round publishes the backlog, kills the owner and watches the recovery,
// then restarts the killed node and waits for it to catch up.
func (lc *longCluster) round(ctx context.Context, bin string) (trialResult, restartResult) {
	o := &outcomes{}
	if lc.backlog > 0 {
		o = publishBacklog(ctx, lc.setup, benchQueue, lc.backlog, 512)
	}
	if lc.touch > 0 {
		if err := touchQueue(ctx, lc.setup, lc.touch); err != nil {
			return trialResult{failure: err.Error()}, restartResult{failure: "no node was killed"}
		}
	}
	// A killed process's sockets are reset only once the kernel has
	// taken back its memory (about 35 ms for 300 MB here), so the
	// survivors learn of the kill later from a bigger process.
	rss := make([]reading, len(lc.cl.members))
	heaps := make([]heapReading, len(lc.cl.members))
	for i, m := range lc.cl.members {
		rss[i], _ = procStats(procRoot, m.cmd.Process.Pid)
		heaps[i] = readHeap(ctx, m)
	}
	var res trialResult
	if err := lc.te.killAndWatch(ctx, lc.cl, &res, o, nil); err != nil && res.failure == "" {
		res.failure = err.Error()
	}
	var rr restartResult
	if res.killed == 0 {
		rr.failure = "no node was killed"
	} else {
		rr = lc.restart(ctx, lc.cl.members[res.killed-1], bin)
		rr.killedRSS = rss[res.killed-1]
		rr.killedHeap = heaps[res.killed-1]
	}
	lc.results = append(lc.results, res)
	lc.restarts = append(lc.restarts, rr)
	return res, rr
}

// touchMessages is how many messages the empty cluster's queue takes and
// settles just before each kill, when its traffic is "touched".
const touchMessages = 16

// touchQueue publishes n messages and settles them, leaving the queue as
// empty as it was, with its owner as freshly busy as one that just took
// a backlog.
func touchQueue(ctx context.Context, c *client.Client, n int) error {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if o := publishBacklog(tctx, c, benchQueue, n, n); o.refused+o.unknown > 0 {
		return fmt.Errorf("touching the empty queue: %d of %d publishes not confirmed", o.refused+o.unknown, n)
	}
	for settled := 0; settled < n; {
		ds, err := c.Fetch(tctx, benchQueue, n-settled, time.Second)
		if err != nil {
			return fmt.Errorf("touching the empty queue: %w", err)
		}
		for _, d := range ds {
			if err := d.AckSync(tctx); err != nil {
				return fmt.Errorf("touching the empty queue: %w", err)
			}
			settled++
		}
	}
	return nil
}

// restart starts m again and measures how long it takes to answer health
// checks and to hold, as a trusted follower at the current epoch, every
// record the owner confirmed.
func (lc *longCluster) restart(ctx context.Context, m *member, bin string) restartResult {
	var rr restartResult
	began := time.Now()
	if err := m.start(bin); err != nil {
		rr.failure = err.Error()
		return rr
	}
	rctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	for !m.healthy(rctx) {
		if err := sleep(rctx, 10*time.Millisecond); err != nil {
			rr.failure = fmt.Sprintf("n%d not healthy within %v", m.id, restartTimeout)
			return rr
		}
	}
	rr.healthy = time.Since(began)
	for {
		_, _, owner, _, err := servingOwner(rctx, lc.cl.others(m), benchQueue, 0, 20*time.Millisecond)
		if err != nil {
			rr.failure = fmt.Sprintf("waiting for n%d to catch up: %v", m.id, err)
			return rr
		}
		if _, q, ok := m.view(rctx, benchQueue); ok && q.Role == "follower" && q.ReplicaEpoch == owner.Epoch &&
			q.LastIndex >= owner.Commit && !q.Suspect && q.Fenced == "" {
			rr.caughtUp = time.Since(began)
			return rr
		}
		if err := sleep(rctx, 20*time.Millisecond); err != nil {
			rr.failure = fmt.Sprintf("n%d not caught up within %v", m.id, restartTimeout)
			return rr
		}
	}
}

// summary describes a restart in a few words.
func (rr restartResult) summary() string {
	if rr.failure != "" {
		return "FAILED: " + rr.failure
	}
	rss := "-"
	if rr.killedRSS.ok {
		rss = fmt.Sprintf("%.0f", mb(rr.killedRSS.value))
	}
	return fmt.Sprintf("RSS at the kill %s MB, healthy %s, caught up %s", rss, ms(rr.healthy), ms(rr.caughtUp))
}

// historyReport prints each cluster's distributions, the ratios of the
// history cluster's to the empty one's, and the restart times, and
// returns the exit code they call for.
func historyReport(w io.Writer, empty, hist *longCluster) int {
	code := exitOK
	for _, lc := range []*longCluster{empty, hist} {
		fmt.Fprintf(w, "\n%s cluster:\n", lc.name)
		code = worse(code, report(w, lc.results, "SIGKILL"))
		if lc.te.stages {
			stageReport(w, lc.results, "SIGKILL")
		}
	}
	fmt.Fprintf(w, "\nhistory / empty%43s %10s %10s\n", "", "median", "p95")
	for _, i := range []int{instActivation, instStatusOwner, instFirstDelivery, instFirstPublish} {
		e, h := instantSummary(empty.results, i), instantSummary(hist.results, i)
		if e.N == 0 || h.N == 0 {
			continue
		}
		fmt.Fprintf(w, "%-58s %10.2f %10.2f\n", instantNames[i], ratio(h.Median, e.Median), ratio(h.P95, e.P95))
	}
	fmt.Fprintf(w, "\nrestart of the killed node, from exec to%19s %10s %10s %10s %7s\n", "", "median", "p95", "max", "runs")
	for _, lc := range []*longCluster{empty, hist} {
		var healthy, caught []time.Duration
		var rss, heapAlloc, heapIdle []int64
		for _, rr := range lc.restarts {
			if rr.killedRSS.ok {
				rss = append(rss, rr.killedRSS.value)
			}
			if h := rr.killedHeap; h.alloc.ok && h.idle.ok {
				heapAlloc, heapIdle = append(heapAlloc, h.alloc.value), append(heapIdle, h.idle.value)
			}
			if rr.failure != "" {
				fmt.Fprintf(w, "  %s: restart %s\n", lc.name, rr.summary())
				code = worse(code, exitIncomplete)
				continue
			}
			healthy, caught = append(healthy, rr.healthy), append(caught, rr.caughtUp)
		}
		for _, row := range []struct {
			what string
			v    []int64
		}{
			{"the killed node's RSS at the kill", rss},
			{"its Go heap allocated (live or uncollected)", heapAlloc},
			{"its Go heap held unused, not given back", heapIdle},
		} {
			if len(row.v) == 0 {
				continue
			}
			slices.Sort(row.v)
			fmt.Fprintf(w, "%-58s %7.0f MB %7.0f MB %7.0f MB %7d\n", lc.name+": "+row.what,
				mb(latency.Percentile(row.v, 50)), mb(latency.Percentile(row.v, 95)), mb(row.v[len(row.v)-1]), len(row.v))
		}
		for _, row := range []struct {
			what string
			ds   []time.Duration
		}{{"healthy", healthy}, {"caught up as a trusted follower", caught}} {
			d := latency.Summarize(row.ds)
			fmt.Fprintf(w, "%-58s %10s %10s %10s %7d\n", lc.name+": "+row.what, ms(d.Median), ms(d.P95), ms(d.Max), d.N)
		}
	}
	return code
}

// instantSummary summarizes instant i over the trials that saw it.
func instantSummary(results []trialResult, i int) latency.Summary {
	var ds []time.Duration
	for _, res := range results {
		if res.seen[i] {
			ds = append(ds, res.at[i])
		}
	}
	return latency.Summarize(ds)
}

// ratio is a/b.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// worse returns the more serious of two exit codes: a lost message, then
// an incomplete trial, then the rest.
func worse(a, b int) int {
	for _, c := range []int{exitLost, exitIncomplete, exitFailed} {
		if a == c || b == c {
			return c
		}
	}
	return exitOK
}
