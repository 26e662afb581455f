package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/latency"
)

// drainConfig is the configuration of the drain benchmark.
type drainConfig struct {
	messages int
	rounds   int
	modes    []string // "async" (Ack) and/or "sync" (AckSync)
	window   uint
	// concurrency is how many handler calls the subscriber runs at once
	// (WithConcurrency); 0 leaves the client's default of one.
	concurrency int
	bin         string
	settings    string // TOML lines added to every node's configuration
	peer        string // a peer harness command run side by side, or ""
	// keep keeps the cluster's directory (configurations, data and the
	// nodes' logs, where warnings such as a lapsed delivery lease are)
	// and prints its path.
	keep bool
	// profile is where each node's and the subscriber's CPU profiles of
	// the first second of every cairn drain go; empty for none.
	profile string
	// profileFor is how long each profile runs from the drain's start.
	profileFor time.Duration
	// maxDeliveries, when positive, gives the queue a dead-letter queue
	// and this delivery limit, so the owner tells its followers its
	// delivery counts: what that costs a drain.
	maxDeliveries int
}

// drainModes are the ways a handler can ack.
var drainModes = []string{"async", "sync"}

// parseDrain parses the drain command's flags.
func parseDrain(args []string, stderr io.Writer) (drainConfig, error) {
	var c drainConfig
	var modes string
	fs := flag.NewFlagSet("cairn-bench drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.messages, "messages", 20000, "messages published before each drain")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each drains once per ack mode (and once on the peer)")
	fs.StringVar(&modes, "ack", "async,sync", "ack modes, comma-separated: async (Delivery.Ack) and sync (Delivery.AckSync)")
	fs.UintVar(&c.window, "window", 0, "the subscription window (default: the client's)")
	fs.IntVar(&c.concurrency, "concurrency", 0, "handler calls the subscriber runs at once (default: the client's, one)")
	fs.StringVar(&c.bin, "node-bin", "", "the cairn-node binary (default: build it from this module)")
	fs.StringVar(&c.settings, "settings", "", "TOML lines added to every node's configuration, e.g. 'checkpoint_records = -1'")
	fs.StringVar(&c.peer, "peer", "", "a peer harness command that drains the same workload on another system (see bench/)")
	fs.BoolVar(&c.keep, "keep", false, "keep the cluster's directory (configurations, data, logs) and print its path")
	fs.StringVar(&c.profile, "cpu-profile", "", "write each node's and the subscriber's CPU profile of the start of every cairn drain (see --profile-for) into this directory")
	fs.DurationVar(&c.profileFor, "profile-for", time.Second, "how long each --cpu-profile runs from the drain's start")
	fs.IntVar(&c.maxDeliveries, "max-deliveries", 0, "give the queue a dead-letter queue and this delivery limit (0: none)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for m := range strings.SplitSeq(modes, ",") {
		if !slices.Contains(drainModes, m) {
			return c, fmt.Errorf("--ack %q: want async, sync or both", modes)
		}
		c.modes = append(c.modes, m)
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.messages < 1:
		return c, fmt.Errorf("--messages %d: need at least one", c.messages)
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: need at least one", c.rounds)
	case c.concurrency < 0:
		return c, fmt.Errorf("--concurrency %d: need at least zero", c.concurrency)
	case c.window > 1<<20:
		return c, fmt.Errorf("--window %d: at most %d", c.window, 1<<20)
	case c.profileFor < time.Second:
		return c, fmt.Errorf("--profile-for %v: need at least 1s (a node profiles whole seconds)", c.profileFor)
	}
	return c, nil
}

// drainResult is one drain: how long the handler took to see every
// message, and how long until the owner held none unsettled.
type drainResult struct {
	handled time.Duration
	settled time.Duration
	// cpu is the CPU time each node's process, and then this one (the
	// subscriber's), spent per message until every message was handled;
	// empty where /proc cannot tell.
	cpu []time.Duration
}

// cmdDrain runs the drain benchmark.
func cmdDrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench drain", w: stderr}
	cfg, err := parseDrain(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-drain-")
	if err != nil {
		return rep.failed(err)
	}
	if cfg.keep {
		defer fmt.Fprintf(stderr, "cairn-bench drain: the cluster's directory is kept in %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if cfg.bin, err = nodeBinary(ctx, cfg.bin, tmp); err != nil {
		return rep.failed(err)
	}
	settings := cfg.settings
	if cfg.profile != "" {
		// Go's profiles are served to the admin only.
		settings = fmt.Sprintf("admin_secret = %q\n%s", benchAdminSecret, settings)
	}
	cl, err := startCluster(cfg.bin, tmp, 3, "info", settings)
	if err != nil {
		return rep.failed(err)
	}
	defer cl.stop()
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return rep.failed(err)
	}
	opts := client.Options{Secret: []byte(benchSecret)}
	pub, err := client.Dial(ctx, opts, cl.clientAddrs()...)
	if err != nil {
		return rep.failed(err)
	}
	defer pub.Close()
	if err := createQueue(ctx, pub, 30*time.Second); err != nil {
		return rep.failed(err)
	}
	if cfg.maxDeliveries > 0 {
		if err := createQueueNamed(ctx, pub, benchQueue+"-dead", 30*time.Second); err != nil {
			return rep.failed(err)
		}
		if err := pub.SetDeadLetter(ctx, benchQueue, benchQueue+"-dead", cfg.maxDeliveries); err != nil {
			return rep.failed(fmt.Errorf("setting the delivery limit: %w", err))
		}
	}
	var peer *peerHarness
	if cfg.peer != "" {
		if peer, err = startPeer(ctx, cfg.peer, stderr); err != nil {
			return rep.failed(err)
		}
		defer peer.close()
	}
	fmt.Fprintf(stdout, "cairn-bench drain: 3 cairn-node processes on loopback, one majority queue; each round publishes %d messages of %d B "+
		"(256 in flight), then one subscriber drains them, its handler acking each delivery before it returns; %d rounds; %d CPUs\n",
		cfg.messages, payloadSize, cfg.rounds, runtime.NumCPU())
	results := map[string][]drainResult{}
	for r := range cfg.rounds {
		for _, side := range drainOrder(cfg, r) {
			res, err := drainSide(ctx, cfg, cl, pub, peer, side, r)
			if err != nil {
				return rep.failed(fmt.Errorf("round %d, %s: %w", r+1, side, err))
			}
			results[side] = append(results[side], res)
			fmt.Fprintf(stderr, "round %d/%d %-14s %s\n", r+1, cfg.rounds, side, res.summary(cfg.messages))
		}
	}
	drainReport(stdout, cfg, results)
	return exitOK
}

// drainOrder lists the sides a round drains, rotated each round so no
// side always runs first on a machine warming up.
func drainOrder(cfg drainConfig, round int) []string {
	var sides []string
	for _, m := range cfg.modes {
		sides = append(sides, "cairn "+m)
		if cfg.peer != "" {
			sides = append(sides, "peer "+m)
		}
	}
	k := round % len(sides)
	return append(sides[k:], sides[:k]...)
}

// drainSide runs one drain on one side.
func drainSide(ctx context.Context, cfg drainConfig, cl *cluster, pub *client.Client, peer *peerHarness, side string, round int) (drainResult, error) {
	system, mode, _ := strings.Cut(side, " ")
	if system == "peer" {
		return peer.drain(ctx, cfg.messages, payloadSize, mode)
	}
	out := publishBacklog(ctx, pub, benchQueue, cfg.messages, 256)
	if confirmed, unknown, refused := out.counts(); confirmed != cfg.messages {
		return drainResult{}, fmt.Errorf("published %d: %d confirmed, %d unknown, %d refused", cfg.messages, confirmed, unknown, refused)
	}
	return drainCairn(ctx, cfg, cl, mode, fmt.Sprintf("drain-%s-r%d", mode, round+1), out.confirmed)
}

// drainCairn subscribes a fresh client and times the drain of a queue
// holding cfg.messages messages; phase names its profiles.
func drainCairn(ctx context.Context, cfg drainConfig, cl *cluster, mode, phase string, published []client.MessageID) (drainResult, error) {
	c, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, cl.clientAddrs()...)
	if err != nil {
		return drainResult{}, err
	}
	defer c.Close()
	h, err := newDrainHandler(published, mode == "sync")
	if err != nil {
		return drainResult{}, err
	}
	var opts []client.SubscribeOption
	if cfg.window > 0 {
		opts = append(opts, client.WithWindow(uint32(cfg.window)))
	}
	if cfg.concurrency > 0 {
		opts = append(opts, client.WithConcurrency(cfg.concurrency))
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	profiles := profileCluster(ctx, cl, cfg.profile, phase, cfg.profileFor)
	defer profiles.Wait()
	stopSelf := profileSelf(cfg.profile, phase, cfg.profileFor)
	defer stopSelf()
	cpuBefore := drainCPU(cl)
	start := time.Now()
	sub, err := c.Subscribe(dctx, benchQueue, h.handle, opts...)
	if err != nil {
		return drainResult{}, err
	}
	defer sub.Stop()
	select {
	case <-h.all:
	case <-dctx.Done():
		return drainResult{}, fmt.Errorf("%d of %d handled: %w", h.count(), cfg.messages, dctx.Err())
	}
	res := drainResult{handled: time.Since(start)}
	res.cpu = cpuPerMessage(cpuBefore, drainCPU(cl), cfg.messages)
	if err := awaitSettled(dctx, cl); err != nil {
		return res, err
	}
	res.settled = time.Since(start)
	if err := h.problems(); err != nil {
		return res, err
	}
	return res, nil
}

// drainHandler is the subscriber's handler: it acks every delivery, as
// the README's example does, and notes when it has seen every message.
type drainHandler struct {
	sync bool

	// The messages a round published come from one client, numbered in
	// one run, so the handler counts them by sequence number in a slice,
	// as the JetStream harness counts by stream sequence: a map of IDs
	// cost the subscriber an eighth of its CPU, which JetStream's side
	// did not pay. producer is the run's producer, first its first
	// number.
	producer, first uint64

	mu       sync.Mutex
	seen     []bool
	distinct int
	failed   int
	stray    int // deliveries of messages the round did not publish
	all      chan struct{}
}

// newDrainHandler is a handler for a drain of the messages published,
// which one client published in one run of sequence numbers.
func newDrainHandler(published []client.MessageID, sync bool) (*drainHandler, error) {
	h := &drainHandler{sync: sync, seen: make([]bool, len(published)), all: make(chan struct{})}
	if len(published) > 0 {
		h.producer = published[0].Producer
		h.first = slices.MinFunc(published, func(a, b client.MessageID) int { return cmp.Compare(a.Seq, b.Seq) }).Seq
	}
	for _, id := range published {
		if id.Producer != h.producer || id.Seq-h.first >= uint64(len(published)) {
			return nil, fmt.Errorf("published %s outside the run of %d from %d by producer %d", id, len(published), h.first, h.producer)
		}
	}
	return h, nil
}

// handle acks d, with Ack or AckSync, and counts it once by its ID.
func (h *drainHandler) handle(ctx context.Context, d *client.Delivery) {
	var err error
	if h.sync {
		err = d.AckSync(ctx)
	} else {
		err = d.Ack(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failed++
	}
	h.note(d.ID)
}

// note counts a delivery of id; h.mu is held.
func (h *drainHandler) note(id client.MessageID) {
	i := id.Seq - h.first
	if id.Producer != h.producer || id.Seq < h.first || i >= uint64(len(h.seen)) {
		h.stray++
		return
	}
	if !h.seen[i] {
		h.seen[i] = true
		if h.distinct++; h.distinct == len(h.seen) {
			close(h.all)
		}
	}
}

// problems reports acks that failed and deliveries of messages the round
// did not publish.
func (h *drainHandler) problems() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failed > 0:
		return fmt.Errorf("%d acks failed", h.failed)
	case h.stray > 0:
		return fmt.Errorf("%d deliveries of messages this round did not publish", h.stray)
	}
	return nil
}

// count returns the distinct messages handled so far.
func (h *drainHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.distinct
}

// awaitSettled polls the cluster until the queue's serving owner reports
// nothing unsettled.
func awaitSettled(ctx context.Context, cl *cluster) error {
	for {
		for _, m := range cl.members {
			if _, q, ok := m.view(ctx, benchQueue); ok && q.Depth != nil && q.Depth.Backlog() == 0 {
				return nil
			}
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the owner to hold nothing unsettled: %w", err)
		}
	}
}

// summary renders one drain.
func (r drainResult) summary(n int) string {
	text := fmt.Sprintf("%8.0f msg/s handled, %8.0f msg/s settled (%v, %v)", rate(n, r.handled), rate(n, r.settled),
		r.handled.Round(time.Millisecond), r.settled.Round(time.Millisecond))
	if len(r.cpu) > 0 {
		var parts []string
		for i, d := range r.cpu {
			who := fmt.Sprintf("n%d", i+1)
			if i == len(r.cpu)-1 {
				who = "subscriber"
			}
			parts = append(parts, fmt.Sprintf("%s %.1f", who, float64(d)/float64(time.Microsecond)))
		}
		text += "; CPU us/msg " + strings.Join(parts, ", ")
	}
	return text
}

// drainCPU reads the CPU time, in clock ticks, of each node's process
// and then of this one.
func drainCPU(cl *cluster) []reading {
	var out []reading
	for _, m := range cl.members {
		r := reading{}
		if m.running() {
			r = procCPU(procRoot, m.cmd.Process.Pid)
		}
		out = append(out, r)
	}
	return append(out, procCPU(procRoot, os.Getpid()))
}

// cpuPerMessage turns two readings of drainCPU into CPU time per message
// of n; nil if any reading is missing.
func cpuPerMessage(before, after []reading, n int) []time.Duration {
	var out []time.Duration
	for i := range before {
		if !before[i].ok || !after[i].ok {
			return nil
		}
		ticks := after[i].value - before[i].value
		out = append(out, time.Duration(ticks)*time.Second/procClockTicksPerSecond/time.Duration(n))
	}
	return out
}

// rate is n per d, in messages per second.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// rates renders the median rate of drains that took ds, and the slowest
// and fastest.
func rates(n int, ds []time.Duration) string {
	return fmt.Sprintf("%.0f (%.0f-%.0f)", rate(n, latency.Summarize(ds).Median), rate(n, slices.Max(ds)), rate(n, slices.Min(ds)))
}

// drainReport prints each side's drain rates over the rounds and, for
// each ack mode, cairn's rate as a ratio of the peer's.
func drainReport(w io.Writer, cfg drainConfig, results map[string][]drainResult) {
	medians := map[string]float64{}
	fmt.Fprintf(w, "%-14s %-36s %s\n", "side", "handled msg/s: median (min-max)", "settled msg/s: median (min-max)")
	for _, side := range slices.Sorted(maps.Keys(results)) {
		var handled, settled []time.Duration
		for _, r := range results[side] {
			handled, settled = append(handled, r.handled), append(settled, r.settled)
		}
		medians[side] = rate(cfg.messages, latency.Summarize(handled).Median)
		fmt.Fprintf(w, "%-14s %-36s %s\n", side, rates(cfg.messages, handled), rates(cfg.messages, settled))
	}
	for _, m := range cfg.modes {
		if p, ok := medians["peer "+m]; ok && p > 0 {
			fmt.Fprintf(w, "cairn / peer, %s acks (median handled rate): %.2f\n", m, medians["cairn "+m]/p)
		}
	}
	if a, s := medians["cairn async"], medians["cairn sync"]; a > 0 && s > 0 {
		fmt.Fprintf(w, "cairn async / cairn sync (median handled rate): %.2f\n", a/s)
	}
}

// profileSelf records this process's CPU profile (the subscriber's
// client) into dir/bench.<phase>.cpu.pprof for d, unless dir is empty;
// the returned function waits for it to end.
func profileSelf(dir, phase string, d time.Duration) func() {
	if dir == "" {
		return func() {}
	}
	var f *os.File
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		f, err = os.Create(filepath.Join(dir, "bench."+phase+".cpu.pprof"))
	}
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cairn-bench: the subscriber's CPU profile: %v\n", err)
		return func() {}
	}
	stopped := make(chan struct{})
	go func() {
		time.Sleep(d)
		pprof.StopCPUProfile()
		f.Close()
		close(stopped)
	}()
	return func() { <-stopped }
}
