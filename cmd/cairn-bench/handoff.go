package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"
)

// handoffConfig is the configuration of the handoff benchmark.
type handoffConfig struct {
	trials   int           // planned moves, or rolls with roll
	roll     bool          // roll the cluster trials times instead of moves and kills
	kills    int           // failovers, in the same run, to compare with
	fault    string        // faultKill or faultStop: how each failover fails the owner
	rate     int           // the steady publisher's messages per second
	inFlight int           // its publishes started and not yet settled, at most
	settle   time.Duration // traffic after each new owner serves, before the next trial
	timeout  time.Duration // each trial's new owner must serve within this long
	nodeBin  string
	dir      string // where the cluster's data and logs go, kept; empty: a temporary directory
	logLevel string // the nodes' log level
}

// parseHandoff parses the handoff command's flags.
func parseHandoff(args []string, stderr io.Writer) (handoffConfig, error) {
	var c handoffConfig
	fs := flag.NewFlagSet("cairn-bench handoff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.trials, "trials", 30, "planned moves (MoveOwner to the next replica in turn)")
	fs.BoolVar(&c.roll, "roll", false, "instead of moves and kills, roll the cluster --trials times: SIGTERM each node in turn (it hands the queue off if it owns it), restart it and wait until it follows, caught up")
	fs.IntVar(&c.kills, "kills", 10, "failovers of the owner in the same run, each failed node restarted (or resumed) before the next")
	fs.StringVar(&c.fault, "fault", faultKill, "how each failover fails the owner: kill (SIGKILL, then a restart) or stop (SIGSTOP, then SIGCONT once another node serves)")
	fs.IntVar(&c.rate, "rate", 1000, "messages per second of the steady publisher")
	fs.IntVar(&c.inFlight, "in-flight", 1024, "publishes the steady publisher keeps started and unsettled, at most")
	fs.DurationVar(&c.settle, "settle", 500*time.Millisecond, "traffic after each new owner serves, before the gap is measured and the next trial starts")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Second, "each trial's new owner must serve within this long")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.dir, "dir", "", "an empty or new directory for the cluster's data and logs, kept after the run (default: a temporary one, removed)")
	fs.StringVar(&c.logLevel, "log-level", "info", "the nodes' log level (debug logs every node event, the recovery's stage times among them; use with --dir)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.trials < 1:
		return c, fmt.Errorf("--trials %d: need at least one", c.trials)
	case c.kills < 0:
		return c, fmt.Errorf("--kills %d: cannot be negative", c.kills)
	case c.rate < 1 || c.inFlight < 1:
		return c, fmt.Errorf("--rate and --in-flight must be positive")
	case c.fault != faultKill && c.fault != faultStop:
		return c, fmt.Errorf("--fault %q: want kill or stop", c.fault)
	case c.settle <= 0 || c.timeout <= 0:
		return c, fmt.Errorf("--settle and --timeout must be positive")
	}
	return c, nil
}

// cmdHandoff runs the handoff benchmark and prints its report.
func cmdHandoff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench handoff", w: stderr}
	cfg, err := parseHandoff(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	extra := fmt.Sprintf("admin_secret = %q\n", benchAdminSecret)
	bin, dir, cl, cleanup, err := freshCluster(ctx, cfg.nodeBin, cfg.dir, cfg.logLevel, extra)
	defer cleanup()
	if err != nil {
		return rep.failed(err)
	}
	defer cl.stop()
	fmt.Fprintln(stdout, handoffHeader(cfg, bin))
	hr, err := startHandoffRun(ctx, cfg, bin, cl)
	if err != nil {
		return rep.failed(fmt.Errorf("%w (logs in %s)", err, dir))
	}
	defer hr.close()
	if cfg.roll {
		return handoffReport(stdout, hr.baseline, hr.phase(ctx, "roll", cfg.trials, hr.roll, stderr))
	}
	moves := hr.phase(ctx, "move", cfg.trials, hr.move, stderr)
	kills := hr.phase(ctx, "kill", cfg.kills, hr.kill, stderr)
	kills.label = faultName(cfg.fault) + " failovers of the owner"
	return handoffReport(stdout, hr.baseline, moves, kills)
}

// handoffHeader describes the run in one line.
func handoffHeader(c handoffConfig, bin string) string {
	if c.roll {
		return fmt.Sprintf("cairn-bench handoff --roll: one cluster of 3 cairn-node processes on loopback (%s, %s logs, shutdown_handoff 10s), "+
			"one majority queue; a steady publisher of %d msg/s x %d B (pipelined, at most %d in flight, default client options) "+
			"and one subscriber acking each delivery (window 512); %d rolling restarts (SIGTERM each node in turn, the owner first, "+
			"which must exit 0 within %v having handed off what it owned; restart; wait until it follows, caught up); "+
			"gap = the longest time between two consecutive publish confirmations from the roll's start until %v after its end; "+
			"latency = the longest time from a publish call to its confirmation in the same span; timeout %v per restart; %d CPUs",
			bin, c.logLevel, c.rate, payloadSize, c.inFlight, c.trials, rollHandoffBound+rollExitMargin, c.settle, c.timeout, runtime.NumCPU())
	}
	return fmt.Sprintf("cairn-bench handoff: one cluster of 3 cairn-node processes on loopback (%s, %s logs), one majority queue; "+
		"a steady publisher of %d msg/s x %d B (pipelined, at most %d in flight, default client options) and one subscriber "+
		"acking each delivery (window 512); %d planned moves (MoveOwner to the next replica in turn, default drain), "+
		"then %d %ss of the owner (each failed node restarted, or resumed, and following again before the next); "+
		"gap = the longest time between two consecutive publish confirmations from the trial's start until %v after the "+
		"new owner serves; timeout %v; %d CPUs",
		bin, c.logLevel, c.rate, payloadSize, c.inFlight, c.trials, c.kills, faultName(c.fault), c.settle, c.timeout, runtime.NumCPU())
}
