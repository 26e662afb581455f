package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cairnmq/cairn/client"
)

// throughputConfig is the configuration of the A/B throughput benchmark.
type throughputConfig struct {
	rounds   int
	window   time.Duration // how long each side is driven per round
	warmup   time.Duration // the start of each window, not counted
	inFlight int           // publishes outstanding at once, over all producers
	sides    [2]sideConfig
	peer     string // a peer harness command: side B is then that system
	// profile is where side A's nodes' and this process's CPU profiles of
	// side A's first window (from the end of its warmup, for profileFor)
	// go; empty for none.
	profile    string
	profileFor time.Duration
}

// sideConfig is one side of the comparison: a node binary and settings
// added to every node's configuration.
type sideConfig struct {
	name     string
	bin      string
	settings string
}

// parseThroughput parses the throughput command's flags.
func parseThroughput(args []string, stderr io.Writer) (throughputConfig, error) {
	var c throughputConfig
	fs := flag.NewFlagSet("cairn-bench throughput", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.rounds, "rounds", 6, "rounds; each drives side A then side B (B then A in odd rounds) for one window")
	fs.DurationVar(&c.window, "window", 15*time.Second, "how long each side is driven per round")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "the start of each window, driven but not counted")
	fs.IntVar(&c.inFlight, "in-flight", 256, "publishes outstanding at once (pipelined)")
	for i, side := range []string{"a", "b"} {
		c.sides[i].name = side
		fs.StringVar(&c.sides[i].bin, side+"-bin", "", "side "+side+"'s cairn-node binary (default: build it from this module)")
		fs.StringVar(&c.sides[i].settings, side+"-settings", "", "TOML lines added to side "+side+"'s node configurations, e.g. 'checkpoint_records = -1'")
	}
	fs.StringVar(&c.peer, "peer", "", "a peer harness command (see bench/): side B is then that system, driven with the same windows, instead of a second cairn cluster")
	fs.StringVar(&c.profile, "cpu-profile", "", "write side A's nodes' and this process's (the clients') CPU profiles of side A's first window, from the end of its warmup, into this directory")
	fs.DurationVar(&c.profileFor, "profile-for", 10*time.Second, "how long --cpu-profile records")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.profile != "" {
		// Go's profiles are served to the admin only.
		c.sides[0].settings = fmt.Sprintf("admin_secret = %q\n%s", benchAdminSecret, c.sides[0].settings)
	}
	switch {
	case c.profile != "" && (c.profileFor < time.Second || c.warmup+c.profileFor > c.window):
		return c, fmt.Errorf("--profile-for %v: need at least a second, and within the window after the warmup (%v)", c.profileFor, c.window-c.warmup)
	case c.peer != "" && (c.sides[1].bin != "" || c.sides[1].settings != ""):
		return c, fmt.Errorf("--peer replaces side B: it cannot go with --b-bin or --b-settings")
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: need at least one", c.rounds)
	case c.window <= c.warmup || c.warmup < 0:
		return c, fmt.Errorf("--window %v must be longer than --warmup %v", c.window, c.warmup)
	case c.inFlight < 1:
		return c, fmt.Errorf("--in-flight %d: need at least one", c.inFlight)
	}
	return c, nil
}

// abSide is one side's cluster and what its windows measured.
type abSide struct {
	sideConfig
	cl      *cluster
	pub     *client.Client
	sub     *client.Client
	col     *collector
	windows []windowResult
	// profiled is set once the side's window has been profiled
	// (--cpu-profile profiles one window).
	profiled bool
}

// cmdThroughput runs the A/B throughput benchmark.
func cmdThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench throughput", w: stderr}
	cfg, err := parseThroughput(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-throughput-")
	if err != nil {
		return rep.failed(err)
	}
	defer os.RemoveAll(tmp)
	if cfg.peer != "" {
		return throughputAgainstPeer(ctx, cfg, tmp, stdout, stderr)
	}
	var sides [2]*abSide
	for i, sc := range cfg.sides {
		s, err := startBuiltSide(ctx, sc, tmp)
		if err != nil {
			return rep.failed(err)
		}
		defer s.close()
		sides[i] = s
	}
	fmt.Fprintf(stdout, "cairn-bench throughput: two clusters of 3 cairn-node processes on loopback (info logs), one majority queue each, "+
		"driven in turn: %d rounds of %v per side (the first %v of each not counted), A then B in even rounds and B then A in odd ones; "+
		"%d pipelined publishes of %d B outstanding, one subscriber acking everything with Ack (fire and forget); %d CPUs\n",
		cfg.rounds, cfg.window, cfg.warmup, cfg.inFlight, payloadSize, runtime.NumCPU())
	for _, s := range sides {
		fmt.Fprintf(stdout, "  %s: %s, settings %q\n", s.name, s.bin, s.settings)
	}
	for r := range cfg.rounds {
		order := []*abSide{sides[0], sides[1]}
		if r%2 == 1 {
			order = []*abSide{sides[1], sides[0]}
		}
		for _, s := range order {
			if ctx.Err() != nil {
				return rep.failed(ctx.Err())
			}
			w := s.drive(ctx, cfg)
			s.windows = append(s.windows, w)
			fmt.Fprintf(stderr, "round %d/%d %s: %s\n", r+1, cfg.rounds, s.name, w.summary())
		}
	}
	return throughputReport(stdout, sides)
}

// startBuiltSide builds the side's node binary unless it names one, and
// starts its cluster in a directory of its own under tmp.
func startBuiltSide(ctx context.Context, sc sideConfig, tmp string) (*abSide, error) {
	var err error
	if sc.bin, err = nodeBinary(ctx, sc.bin, tmp); err != nil {
		return nil, err
	}
	return startSide(ctx, sc, filepath.Join(tmp, sc.name))
}

// startSide starts one side's cluster under dir, creates its queue and
// subscribes to it.
func startSide(ctx context.Context, sc sideConfig, dir string) (*abSide, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cl, err := startCluster(sc.bin, dir, 3, "info", sc.settings)
	if err != nil {
		return nil, err
	}
	s := &abSide{sideConfig: sc, cl: cl}
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		s.close()
		return nil, fmt.Errorf("side %s: %w", sc.name, err)
	}
	opts := client.Options{Secret: []byte(benchSecret)}
	if s.pub, err = client.Dial(ctx, opts, cl.clientAddrs()...); err == nil {
		s.sub, err = client.Dial(ctx, opts, cl.clientAddrs()...)
	}
	if err == nil {
		err = createQueue(ctx, s.pub, 30*time.Second)
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("side %s: %w", sc.name, err)
	}
	s.col = subscribeFiring(ctx, s.sub, benchQueue)
	return s, nil
}

// close stops the side's clients and cluster.
func (s *abSide) close() {
	for _, c := range []*client.Client{s.pub, s.sub} {
		if c != nil {
			c.Close()
		}
	}
	s.cl.stop()
}
