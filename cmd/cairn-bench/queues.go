package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/latency"
)

// queuesConfig is the configuration of the many-queues benchmark.
type queuesConfig struct {
	queues      int
	concurrency int
	idle        time.Duration // between the last create and the idle sample
	nodeBin     string
	dir         string // the cluster's directory, kept; empty for a temporary one
	settings    string // TOML lines added to every node's configuration
	profile     string // where the nodes' CPU profiles of the creation go; empty for none
	profileFor  time.Duration
	logLevel    string
	peer        string // a peer harness command; empty for none
	rounds      int    // with a peer: rounds of cairn then the peer
}

// benchAdminSecret is the admin credential of the clusters that need
// one: the many-queues benchmark's (Go's profiles are served to the
// admin only) and the handoff benchmark's (only an admin moves an owner).
const benchAdminSecret = "cairn-bench-queues-admin-secret"

// parseQueues parses the queues command's flags.
func parseQueues(args []string, stderr io.Writer) (queuesConfig, error) {
	var c queuesConfig
	fs := flag.NewFlagSet("cairn-bench queues", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.queues, "queues", 500, "queues to create")
	fs.IntVar(&c.concurrency, "concurrency", 1, "creators working at once, each waiting for its create before the next")
	fs.DurationVar(&c.idle, "idle", 15*time.Second, "how long the cluster idles after the last create before it is measured")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.dir, "dir", "", "put the cluster's data, configurations and logs here, and keep them (default: a temporary directory, removed)")
	fs.StringVar(&c.settings, "settings", "", "TOML lines added to every node's configuration")
	fs.StringVar(&c.profile, "cpu-profile", "", "write each node's CPU profiles of the first --profile-for of the creation and of the idle, and its heap profile after the idle, into this directory")
	fs.StringVar(&c.logLevel, "log-level", soakLogLevel, "the nodes' log level (debug logs every node event with its time)")
	fs.DurationVar(&c.profileFor, "profile-for", 20*time.Second, "how long the CPU profiles run")
	fs.StringVar(&c.peer, "peer", "", "a peer harness command (bench/README.md): after each cairn round, it creates as many streams with as many creators on a fresh cluster of its own")
	fs.IntVar(&c.rounds, "rounds", 1, "rounds, each a fresh cairn cluster and then, with --peer, the peer's")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.queues < 1:
		return c, fmt.Errorf("--queues %d: need at least one", c.queues)
	case c.concurrency < 1:
		return c, fmt.Errorf("--concurrency %d: need at least one", c.concurrency)
	case c.idle < 0:
		return c, errors.New("--idle must not be negative")
	case c.profileFor < time.Second:
		return c, fmt.Errorf("--profile-for %v: need at least a second", c.profileFor)
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: need at least one", c.rounds)
	case c.rounds > 1 && c.dir != "":
		return c, errors.New("--dir keeps one cluster: use it with --rounds 1")
	}
	return c, nil
}

// cmdQueues runs the many-queues benchmark: create, idle, measure; with
// a peer, each round is followed by the peer's creation of as many
// streams, and the rates are compared at the end.
func cmdQueues(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench queues", w: stderr}
	cfg, err := parseQueues(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	var peer *peerHarness
	if cfg.peer != "" {
		if peer, err = startPeer(ctx, cfg.peer, stderr); err != nil {
			return rep.failed(err)
		}
		defer peer.close()
	}
	var ours, theirs []float64
	for round := 1; round <= cfg.rounds; round++ {
		if cfg.rounds > 1 {
			fmt.Fprintf(stdout, "round %d of %d\n", round, cfg.rounds)
		}
		rate, code := queuesRound(ctx, cfg, stdout, stderr)
		if code != exitOK {
			return code
		}
		ours = append(ours, rate)
		if peer == nil {
			continue
		}
		a, err := peer.request(ctx, fmt.Sprintf("create %d %d", cfg.queues, cfg.concurrency), peerCreateTimeout(cfg.queues))
		if err != nil {
			return rep.failed(err)
		}
		fmt.Fprintf(stdout, "peer: created %d streams at %.1f/s with %d creators; per-create latency: median %.1f ms, p95 %.1f ms, max %.1f ms\n",
			a.Created, a.CreateRate, cfg.concurrency, 1000*a.CreateP50, 1000*a.CreateP95, 1000*a.CreateMax)
		theirs = append(theirs, a.CreateRate)
	}
	if peer != nil {
		printCreateRatio(stdout, ours, theirs)
	}
	return exitOK
}

// peerCreateTimeout bounds a peer's create run of n streams: a generous
// 10 streams a second, plus its cluster's start and stop.
func peerCreateTimeout(n int) time.Duration {
	return time.Duration(n)*100*time.Millisecond + 2*time.Minute
}

// printCreateRatio prints the rounds' creation rates side by side and
// the ratio of their medians.
func printCreateRatio(w io.Writer, ours, theirs []float64) {
	fmt.Fprintf(w, "creation rates, cairn: %s queues/s; peer: %s streams/s\n", rateList(ours), rateList(theirs))
	a, b := medianOf(ours), medianOf(theirs)
	if b > 0 {
		fmt.Fprintf(w, "median %.1f against %.1f: cairn / peer = %.2f\n", a, b, a/b)
	}
}

// rateList lists rates with one decimal.
func rateList(rs []float64) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%.1f", r))
	}
	return strings.Join(out, ", ")
}

// medianOf is the median of rs (the lower middle of an even count).
func medianOf(rs []float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	s := slices.Clone(rs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// queuesRound runs one round on a fresh cluster and returns its creation
// rate and the exit code so far.
func queuesRound(ctx context.Context, cfg queuesConfig, stdout, stderr io.Writer) (float64, int) {
	rep := reporter{name: "cairn-bench queues", w: stderr}
	extra := fmt.Sprintf("admin_secret = %q\n%s", benchAdminSecret, cfg.settings)
	bin, dir, cl, cleanup, err := freshCluster(ctx, cfg.nodeBin, cfg.dir, cfg.logLevel, extra)
	defer cleanup()
	if err != nil {
		return 0, rep.failed(err)
	}
	fmt.Fprintf(stdout, "cairn-bench queues: a fresh cluster of 3 cairn-node processes on loopback (%s, in %s); "+
		"%d majority queues created by %d concurrent creators, then %v idle; %d CPUs\n",
		bin, dir, cfg.queues, cfg.concurrency, cfg.idle, runtime.NumCPU())
	res, err := runQueues(ctx, cfg, cl)
	clean := stopCluster(cl, stderr)
	if cfg.dir != "" {
		fmt.Fprintf(stderr, "cairn-bench queues: data, configurations and logs kept in %s\n", dir)
	}
	if err != nil {
		return 0, rep.failed(err)
	}
	res.print(stdout)
	if res.failed > 0 || !clean {
		return 0, exitIncomplete
	}
	return res.rate(), exitOK
}

// queuesResult is what one run measured.
type queuesResult struct {
	n           int
	concurrency int
	took        time.Duration // from the first create sent to the last answered
	latencies   []time.Duration
	failed      int
	firstErr    error
	idle        time.Duration
	before      []queuesSample // each node after the warm-up queue, before the creates
	created     []queuesSample // each node right after the last create
	after       []queuesSample // each node after the idle
}

// runQueues waits for the cluster, creates one queue to be sure the
// metadata has a leader, measures each node, creates the queues, idles,
// and measures each node again.
func runQueues(ctx context.Context, cfg queuesConfig, cl *cluster) (queuesResult, error) {
	res := queuesResult{n: cfg.queues, concurrency: cfg.concurrency, idle: cfg.idle}
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return res, err
	}
	c, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, cl.clientAddrs()...)
	if err != nil {
		return res, err
	}
	defer c.Close()
	if err := createQueueNamed(ctx, c, "warm-up", 30*time.Second); err != nil {
		return res, err
	}
	// Let the warm-up settle, so the baseline holds one serving queue.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return res, err
	}
	for _, m := range cl.members {
		res.before = append(res.before, sampleQueuesNode(ctx, m))
	}
	profiles := profileCluster(ctx, cl, cfg.profile, "create", cfg.profileFor)
	began := time.Now()
	res.latencies, res.failed, res.firstErr = createMany(ctx, c, cfg.queues, cfg.concurrency)
	res.took = time.Since(began)
	profiles.Wait()
	for _, m := range cl.members {
		s := queuesSample{CPU: procCPU(procRoot, m.cmd.Process.Pid), cpuAt: time.Now()}
		if text, err := fetchBigMetrics(ctx, m.httpAddr); err == nil {
			s.Syncs = metricValue(text, metricSyncs)
		}
		res.created = append(res.created, s)
	}
	profiles = profileCluster(ctx, cl, cfg.profile, "idle", min(cfg.profileFor, cfg.idle))
	if err := sleep(ctx, cfg.idle); err != nil {
		return res, err
	}
	profiles.Wait()
	for _, m := range cl.members {
		res.after = append(res.after, sampleQueuesNode(ctx, m))
		if cfg.profile != "" {
			if err := fetchHeapProfile(ctx, m, cfg.profile); err != nil {
				fmt.Fprintf(os.Stderr, "cairn-bench queues: n%d's heap profile: %v\n", m.id, err)
			}
		}
	}
	return res, nil
}

// profileCluster starts recording every node's CPU profile of a phase
// for d into dir, unless dir is empty; the caller waits for them.
func profileCluster(ctx context.Context, cl *cluster, dir, phase string, d time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	if dir == "" || d < time.Second {
		return &wg
	}
	for _, m := range cl.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fetchProfile(ctx, m, dir, phase, d); err != nil {
				fmt.Fprintf(os.Stderr, "cairn-bench: n%d's CPU profile: %v\n", m.id, err)
			}
		}()
	}
	return &wg
}

// queueName is the name of the i-th created queue.
func queueName(i int) string { return fmt.Sprintf("q-%06d", i) }

// createMany creates n queues with concurrency creators, each timing its
// creates one at a time, and returns the latency of every create that
// succeeded, how many failed and the first error.
func createMany(ctx context.Context, c *client.Client, n, concurrency int) ([]time.Duration, int, error) {
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				err := c.CreateQueue(ctx, queueName(i), client.PolicyMajority)
				took := time.Since(start)
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", queueName(i), err)
					}
				} else {
					lat = append(lat, took)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return lat, failed, firstErr
}

// rate is the run's creation rate, in queues a second.
func (res queuesResult) rate() float64 { return float64(len(res.latencies)) / res.took.Seconds() }

// print writes the creation figures and each node's footprint.
func (res queuesResult) print(w io.Writer) {
	d := latency.Summarize(res.latencies)
	rate := res.rate()
	fmt.Fprintf(w, "created %d of %d queues in %.2f s: %.1f queues/s with %d creators\n",
		len(res.latencies), res.n, res.took.Seconds(), rate, res.concurrency)
	if d.N > 0 {
		fmt.Fprintf(w, "per-create latency: median %.1f ms, p95 %.1f ms, max %.1f ms (%d creates)\n",
			msf(d.Median), msf(d.P95), msf(d.Max), d.N)
	}
	if res.failed > 0 {
		fmt.Fprintf(w, "FAILED: %d creates; the first: %v\n", res.failed, res.firstErr)
	}
	fmt.Fprintf(w, "each node before the creates (one queue) and after %v idle with %d more:\n", res.idle, res.n)
	fmt.Fprintf(w, "%-5s %-7s %12s %12s %10s %8s %14s %9s\n", "node", "when", "rss", "heap", "goroutines", "fds", "data-dir", "files")
	for i := range res.after {
		for _, s := range []struct {
			when string
			s    queuesSample
		}{{"before", res.before[i]}, {"after", res.after[i]}} {
			fmt.Fprintf(w, "n%-4d %-7s %12s %12s %10s %8s %14s %9s\n", s.s.ID, s.when, s.s.RSSBytes, s.s.HeapBytes,
				s.s.Goroutines, s.s.FDs, s.s.DiskBytes, s.s.Files)
		}
		b, a := res.before[i], res.after[i]
		fmt.Fprintf(w, "n%-4d per queue: rss %s, heap %s, data-dir %s in %s files, goroutines %s, fds %s\n", a.ID,
			perQueue(b.RSSBytes, a.RSSBytes, res.n, "B"), perQueue(b.HeapBytes, a.HeapBytes, res.n, "B"),
			perQueue(b.DiskBytes, a.DiskBytes, res.n, "B"), perQueue(b.Files, a.Files, res.n, ""),
			perQueue(b.Goroutines, a.Goroutines, res.n, ""), perQueue(b.FDs, a.FDs, res.n, ""))
		fmt.Fprintf(w, "n%-4d fsyncs per create: %s\n", a.ID, perQueue(b.Syncs, res.created[i].Syncs, res.n, ""))
		if c := res.created[i]; c.CPU.ok && a.CPU.ok && a.cpuAt.After(c.cpuAt) {
			busy := float64(a.CPU.value-c.CPU.value) / procClockTicksPerSecond
			span := a.cpuAt.Sub(c.cpuAt)
			fmt.Fprintf(w, "n%-4d idle CPU: %.1f%% of one core over %.1f s\n", a.ID, 100*busy/span.Seconds(), span.Seconds())
		}
	}
}

// msf prints a duration in fractional milliseconds.
func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// perQueue is the growth from before to after, divided by n queues.
func perQueue(before, after reading, n int, unit string) string {
	if !before.ok || !after.ok {
		return "-"
	}
	return fmt.Sprintf("%.2f%s", float64(after.value-before.value)/float64(n), unit)
}
