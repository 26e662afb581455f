package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/wire"
)

// soakConfig is the configuration of a soak.
type soakConfig struct {
	rate     int // messages per second
	duration time.Duration
	interval time.Duration // between rows
	size     int           // payload bytes
	inFlight int           // publishes started and not yet settled, at most
	nodeBin  string
	dir      string // the cluster's directory, kept; empty for a temporary one
	json     bool
	settings string // TOML lines added to every node's configuration
}

// soakLogLevel is the nodes' log level in a soak: a production node's.
const soakLogLevel = "info"

// soakStopTimeout bounds each node's drain after the SIGTERM at the end.
const soakStopTimeout = 15 * time.Second

// parseSoak parses the soak command's flags.
func parseSoak(args []string, stderr io.Writer) (soakConfig, error) {
	var c soakConfig
	fs := flag.NewFlagSet("cairn-bench soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.rate, "rate", 1000, "messages per second the producer publishes")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long the producer publishes")
	fs.DurationVar(&c.interval, "interval", 30*time.Second, "time between printed rows")
	fs.IntVar(&c.size, "size", 1024, "payload bytes of each message")
	fs.IntVar(&c.inFlight, "in-flight", 1024, "publishes the producer keeps started and unsettled, at most")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.dir, "dir", "", "put the cluster's data, configurations and logs here, and keep them (default: a temporary directory, removed)")
	fs.BoolVar(&c.json, "json", false, "print JSON lines (a config, then one row per interval, then a summary) instead of a table")
	fs.StringVar(&c.settings, "settings", "", "TOML lines added to every node's configuration, e.g. 'checkpoint_records = -1'")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.rate < 1:
		return c, fmt.Errorf("--rate %d: need at least one message per second", c.rate)
	case c.duration <= 0 || c.interval <= 0:
		return c, errors.New("--duration and --interval must be positive")
	case c.size < 1 || c.size > wire.MaxPayloadSize:
		return c, fmt.Errorf("--size %d: want 1 to %d bytes", c.size, wire.MaxPayloadSize)
	case c.inFlight < 1:
		return c, fmt.Errorf("--in-flight %d: need at least one", c.inFlight)
	}
	return c, nil
}

// cmdSoak runs a soak and prints its rows and summary.
func cmdSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench soak", w: stderr}
	cfg, err := parseSoak(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	bin, dir, cl, cleanup, err := freshCluster(ctx, cfg.nodeBin, cfg.dir, soakLogLevel, cfg.settings)
	defer cleanup()
	if err != nil {
		return rep.failed(err)
	}
	s := &soak{cfg: cfg, cl: cl, out: stdout}
	s.header(bin, dir)
	sum, err := s.run(ctx)
	clean := stopCluster(cl, stderr)
	if cfg.dir != "" {
		fmt.Fprintf(stderr, "cairn-bench soak: data, configurations and logs kept in %s\n", dir)
	}
	if err != nil {
		return rep.failed(err)
	}
	if cfg.json {
		jsonLine(stdout, "summary", sum)
	} else {
		sum.print(stdout)
	}
	return soakExit(sum, clean)
}

// soakExit is the exit code a soak's outcome calls for: a lost
// confirmed message is the worst; a node that died or would not stop
// cleanly comes next. Duplicates and unknown outcomes are not failures.
func soakExit(sum soakSummary, clean bool) int {
	switch {
	case sum.Lost > 0:
		return exitLost
	case !clean:
		return exitIncomplete
	}
	return exitOK
}

// freshCluster starts three nodes of the binary nodeBin names (built
// from this module when empty) in the data directory dirFlag names (a
// temporary one when empty, see soakDir), with logLevel and extra
// configuration. cleanup removes what it made that the caller did not
// ask to keep; it is safe to call whatever the error.
func freshCluster(ctx context.Context, nodeBin, dirFlag, logLevel, extra string) (bin, dir string, cl *cluster, cleanup func(), err error) {
	var remove []string
	cleanup = func() {
		for _, p := range remove {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-bin-")
	if err != nil {
		return "", "", nil, cleanup, err
	}
	remove = append(remove, tmp)
	if bin, err = nodeBinary(ctx, nodeBin, tmp); err != nil {
		return "", "", nil, cleanup, err
	}
	if dir, err = soakDir(dirFlag); err != nil {
		return "", "", nil, cleanup, err
	}
	if dirFlag == "" {
		remove = append(remove, dir)
	}
	cl, err = startCluster(bin, dir, 3, logLevel, extra)
	return bin, dir, cl, cleanup, err
}

// soakDir returns the directory the cluster lives in: dir, created if
// need be and required empty so that the cluster starts fresh, or a new
// temporary one.
func soakDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "cairn-bench-soak-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("--dir: %w", err)
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("--dir %s is not empty: a soak starts a fresh cluster", dir)
	}
	return dir, nil
}

// stopCluster stops every node with SIGTERM, says on w how each ended,
// and reports whether every one drained and exited 0.
func stopCluster(cl *cluster, w io.Writer) bool {
	clean := true
	for _, m := range cl.members {
		how, ok := m.terminate(soakStopTimeout)
		if !ok {
			clean = false
			how += fmt.Sprintf("; NOT A CLEAN STOP (see %s)", m.log)
		}
		fmt.Fprintf(w, "cairn-bench soak: n%d %s\n", m.id, how)
	}
	return clean
}

// header describes the soak in one line, or one JSON object.
func (s *soak) header(bin, dir string) {
	c := s.cfg
	if c.json {
		jsonLine(s.out, "config", map[string]any{
			"rate": c.rate, "duration_s": c.duration.Seconds(), "interval_s": c.interval.Seconds(), "size": c.size,
			"in_flight": c.inFlight, "node_bin": bin, "dir": dir, "cpus": runtime.NumCPU(),
		})
		return
	}
	fmt.Fprintf(s.out, "cairn-bench soak: a fresh cluster of 3 cairn-node processes on loopback (%s, %s logs, in %s), "+
		"one majority queue; one producer at %d msg/s of %d B for %v (at most %d publishes in flight), "+
		"one subscriber acking every delivery (window 512, lease 10s); a row every %v; %d CPUs\n",
		bin, soakLogLevel, dir, c.rate, c.size, c.duration, c.inFlight, c.interval, runtime.NumCPU())
}

// soak is one soak run on a started cluster.
type soak struct {
	cfg   soakConfig
	cl    *cluster
	out   io.Writer
	pub   *steadyPublisher
	col   *collector
	began time.Time
	rows  []soakRow
	timed int // end-to-end times the rows so far have taken
}

// run waits for the cluster, creates the queue, starts the consumer and
// the producer, prints a row every interval until the duration is up or
// ctx ends, then stops the producer, drains and judges.
func (s *soak) run(ctx context.Context) (soakSummary, error) {
	if err := s.cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return soakSummary{}, err
	}
	opts := client.Options{Secret: []byte(benchSecret)}
	setup, err := client.Dial(ctx, opts, s.cl.clientAddrs()...)
	if err != nil {
		return soakSummary{}, err
	}
	err = createQueue(ctx, setup, 30*time.Second)
	setup.Close()
	if err != nil {
		return soakSummary{}, err
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, _, _, _, err = servingOwner(octx, s.cl.members, benchQueue, 0, 20*time.Millisecond)
	cancel()
	if err != nil {
		return soakSummary{}, err
	}
	subC, err := client.Dial(ctx, opts, s.cl.clientAddrs()...)
	if err != nil {
		return soakSummary{}, err
	}
	defer subC.Close()
	pubC, err := client.Dial(ctx, opts, s.cl.clientAddrs()...)
	if err != nil {
		return soakSummary{}, err
	}
	defer pubC.Close()
	// The subscription outlives ctx by the drain: an interrupted soak
	// still judges what it confirmed.
	sctx, stopSub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSub()
	// A body long enough carries its publish time, for the end-to-end
	// latency of each message.
	stamp := s.cfg.size >= stampBytes
	if stamp {
		s.col = subscribeStamped(sctx, subC, benchQueue)
	} else {
		s.col = subscribe(sctx, subC, benchQueue)
	}
	s.began = time.Now()
	s.pub = startSteady(ctx, pubC, benchQueue, s.cfg.rate, soakPayload(s.cfg.size), s.cfg.inFlight, stamp)
	interrupted := s.sampleUntilDone(ctx)
	sum := s.finish(sctx)
	sum.Interrupted = interrupted
	return sum, nil
}

// soakPayload is a body of size bytes; its content does not matter.
func soakPayload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = payload[i%len(payload)]
	}
	return b
}

// sampleUntilDone prints a row every interval and a last one when the
// duration is up. It reports whether ctx ended first.
func (s *soak) sampleUntilDone(ctx context.Context) (interrupted bool) {
	if !s.cfg.json {
		fmt.Fprintln(s.out, rowHeader(s.memberIDs()))
	}
	tick := time.NewTicker(s.cfg.interval)
	defer tick.Stop()
	end := time.NewTimer(s.cfg.duration)
	defer end.Stop()
	for {
		select {
		case <-tick.C:
			s.addRow(ctx)
		case <-end.C:
			// A last row at the end, unless a tick just printed one.
			if len(s.rows) == 0 || time.Since(s.began)-s.rows[len(s.rows)-1].elapsed > s.cfg.interval/10 {
				s.addRow(ctx)
			}
			return false
		case <-ctx.Done():
			return true
		}
	}
}

// memberIDs lists the cluster's node IDs.
func (s *soak) memberIDs() []int {
	var ids []int
	for _, m := range s.cl.members {
		ids = append(ids, m.id)
	}
	return ids
}

// addRow samples the traffic and every node, keeps the row and prints it.
func (s *soak) addRow(ctx context.Context) {
	r := soakRow{elapsed: time.Since(s.began)}
	r.ElapsedSeconds = r.elapsed.Round(time.Millisecond).Seconds()
	r.Confirmed, r.Unknown, r.Failed = s.pub.out.counts()
	r.Acked = s.col.counts().acked
	r.Backlog = r.Confirmed - r.Acked
	var fresh []time.Duration
	fresh, s.timed = s.col.endToEndSince(s.timed)
	r.setEndToEnd(fresh)
	for _, m := range s.cl.members {
		r.Nodes = append(r.Nodes, sampleNode(ctx, m))
		if _, q, ok := m.view(ctx, benchQueue); ok && q.Role == "owner" && q.Active {
			r.Owner = m.id
		}
	}
	s.rows = append(s.rows, r)
	if s.cfg.json {
		jsonLine(s.out, "row", r)
	} else {
		fmt.Fprintln(s.out, r.format())
	}
}

// finish stops the producer, waiting for the outcome of every publish in
// flight, lets the consumer drain what was confirmed, and sums up.
func (s *soak) finish(ctx context.Context) soakSummary {
	outs := s.pub.stop()
	want, unknown, failed := outs.snapshot()
	// A consumer that kept up has only the last moments to catch up on;
	// one that fell behind gets a millisecond per message still missing,
	// well below its pace, before the rest count as lost.
	began := time.Now()
	missing := s.col.missing(want)
	lost := s.col.awaitAll(ctx, want, began.Add(5*time.Second+time.Duration(missing)*time.Millisecond))
	drained := time.Since(began)
	s.awaitAcks(ctx, 2*time.Second)
	sum := summarize(s.rows)
	d := s.col.counts()
	sum.Confirmed, sum.Unknown, sum.Failed, sum.Lost = len(want), unknown, failed, lost
	sum.Delivered, sum.Duplicates, sum.Acked, sum.AckFailed = d.delivered, d.duplicates, d.acked, d.ackFailed
	sum.DrainSeconds = drained.Seconds()
	all, _ := s.col.endToEndSince(0)
	sum.setEndToEnd(all)
	if err := s.col.failed(); err != nil {
		sum.SubscribeErr = err.Error()
	}
	return sum
}

// awaitAcks gives the acks of the last deliveries up to d to settle, so
// that the summary's acked count is not short of the ones still in flight.
func (s *soak) awaitAcks(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c := s.col.counts()
		if c.acked+c.ackFailed >= c.delivered || sleep(ctx, 20*time.Millisecond) != nil {
			return
		}
	}
}
