package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// failoverConfig is the configuration of a failover benchmark.
type failoverConfig struct {
	trials  int
	backlog int           // confirmed, unconsumed messages before the kill
	traffic string        // "idle" or "warm"
	rate    int           // warm traffic, messages per second
	warmup  time.Duration // warm traffic before the kill, and again after recovery
	timeout time.Duration // how long after the kill each instant may take
	nodeBin string
	keep    string // which trials' directories to keep: none, failed or all
	verbose bool
}

// warm reports whether a background publisher runs during the trial.
func (c failoverConfig) warm() bool { return c.traffic == "warm" }

// parseFailover parses the failover command's flags.
func parseFailover(args []string, stderr io.Writer) (failoverConfig, error) {
	var c failoverConfig
	fs := flag.NewFlagSet("cairn-bench failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.trials, "trials", 30, "trials to run, each on a fresh cluster")
	fs.IntVar(&c.backlog, "backlog", 0, "confirmed 1 KiB messages left unconsumed in the queue before the kill (e.g. 0, 10000, 100000)")
	fs.StringVar(&c.traffic, "traffic", "idle", "idle, or warm: a background publisher runs before, during and after the kill")
	fs.IntVar(&c.rate, "rate", 500, "messages per second of the warm traffic")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "warm traffic runs this long before the kill, and this long past the recovery")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Second, "each instant must come within this long of the kill, or the trial fails")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.keep, "keep", "none", "whose data and logs to keep, printing where they are: none, failed (trials that failed or lost a message) or all")
	fs.BoolVar(&c.verbose, "v", false, "print one line per trial on stdout (they always go to stderr)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.trials < 1:
		return c, fmt.Errorf("--trials %d: need at least one", c.trials)
	case c.backlog < 0:
		return c, fmt.Errorf("--backlog %d: cannot be negative", c.backlog)
	case c.traffic != "idle" && c.traffic != "warm":
		return c, fmt.Errorf("--traffic %q: want idle or warm", c.traffic)
	case c.keep != "none" && c.keep != "failed" && c.keep != "all":
		return c, fmt.Errorf("--keep %q: want none, failed or all", c.keep)
	case c.rate < 1 || c.timeout <= 0 || c.warmup < 0:
		return c, fmt.Errorf("--rate, --timeout and --warmup must be positive")
	}
	return c, nil
}

// cmdFailover runs the failover benchmark and prints its report.
func cmdFailover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench failover", w: stderr}
	cfg, err := parseFailover(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-bin-")
	if err != nil {
		return rep.failed(err)
	}
	defer os.RemoveAll(tmp)
	bin, err := nodeBinary(ctx, cfg.nodeBin, tmp)
	if err != nil {
		return rep.failed(err)
	}
	fmt.Fprintln(stdout, header(cfg, bin))
	te := &trialEnv{cfg: cfg, bin: bin}
	var results []trialResult
	for i := range cfg.trials {
		if ctx.Err() != nil {
			fmt.Fprintf(stdout, "interrupted after %d of %d trials\n", len(results), cfg.trials)
			break
		}
		res := te.runTrial(ctx)
		results = append(results, res)
		line := fmt.Sprintf("trial %d/%d: %s", i+1, cfg.trials, res.summary())
		fmt.Fprintln(stderr, line)
		if cfg.verbose {
			fmt.Fprintln(stdout, line)
		}
	}
	return report(stdout, results)
}

// header describes the configuration in one line.
func header(c failoverConfig, bin string) string {
	traffic := "idle (no traffic but the probe)"
	if c.warm() {
		traffic = fmt.Sprintf("warm (%d msg/s from %v before the kill until %v after recovery)", c.rate, c.warmup, c.warmup)
	}
	return fmt.Sprintf("cairn-bench failover: %d trials; each a fresh cluster of 3 cairn-node processes on loopback "+
		"(%s, debug logs), one majority queue, node default detection; SIGKILL the queue's owner, never restarted; "+
		"backlog %d x %d B; traffic %s; fresh subscriber and probe publisher at the kill "+
		"(request timeout 1s, up to 30 attempts, backoff 20ms-200ms); timeout %v; %d CPUs",
		c.trials, bin, c.backlog, payloadSize, traffic, c.timeout, runtime.NumCPU())
}
