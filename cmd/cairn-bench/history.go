package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/cairnmq/cairn/client"
)

// historyConfig is the configuration of the settled-history benchmark.
type historyConfig struct {
	trials      int
	settled     int    // messages published and acked before the first kill
	backlog     int    // confirmed, unconsumed messages before each kill
	checkpoints string // "on" (the default node settings) or "off"
	timeout     time.Duration
	nodeBin     string
	keep        bool
	logLevel    string // the nodes' log level: info, or debug for the stage breakdown
	// heapProfiles, when set, is a directory for each history node's heap
	// profile, taken just before the middle round's kill.
	heapProfiles string
	// emptyTraffic is what the empty cluster's queue sees before each
	// kill: "touched" (a few messages published and settled, so its owner
	// is as freshly busy as the history cluster's, whose backlog is
	// published just before the kill) or "idle" (nothing: its owner may
	// have rested, and a rested owner's successor need not wait out its
	// grant).
	emptyTraffic string
}

// parseHistory parses the history command's flags.
func parseHistory(args []string, stderr io.Writer) (historyConfig, error) {
	var c historyConfig
	fs := flag.NewFlagSet("cairn-bench history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.trials, "trials", 30, "kills per cluster")
	fs.IntVar(&c.settled, "settled", 1000000, "1 KiB messages published and acked on the history cluster before the first kill")
	fs.IntVar(&c.backlog, "backlog", 10000, "confirmed 1 KiB messages left unconsumed on the history cluster before each kill")
	fs.StringVar(&c.checkpoints, "checkpoints", "on", "on: the nodes' default checkpoints; off: checkpoint_records = -1 on both clusters")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Second, "each instant must come within this long of the kill, or the trial fails")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.BoolVar(&c.keep, "keep", false, "keep both clusters' data and logs, printing where they are")
	fs.StringVar(&c.heapProfiles, "heap-profiles", "", "a directory for each history node's heap profile (n<id>.heap.pprof), taken just before the middle round's kill")
	fs.StringVar(&c.logLevel, "log-level", "info", "the nodes' log level: info (as in production) or debug (each cluster's failover stage breakdown, read from the survivors' logs)")
	fs.StringVar(&c.emptyTraffic, "empty-traffic", "touched", "before each kill of the empty cluster's owner: touched (a few messages published and settled, so the owner is as freshly busy as the history cluster's) or idle (nothing, so the owner may have rested)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.emptyTraffic != "touched" && c.emptyTraffic != "idle":
		return c, fmt.Errorf("--empty-traffic %q: want touched or idle", c.emptyTraffic)
	case c.trials < 1:
		return c, fmt.Errorf("--trials %d: need at least one", c.trials)
	case c.settled < 0 || c.backlog < 0:
		return c, fmt.Errorf("--settled and --backlog cannot be negative")
	case c.checkpoints != "on" && c.checkpoints != "off":
		return c, fmt.Errorf("--checkpoints %q: want on or off", c.checkpoints)
	case c.timeout <= 0:
		return c, fmt.Errorf("--timeout must be positive")
	case c.logLevel != "debug" && c.logLevel != "info":
		return c, fmt.Errorf("--log-level %q: want debug or info", c.logLevel)
	}
	return c, nil
}

// nodeSettings is the configuration both clusters' nodes get.
func (c historyConfig) nodeSettings() string {
	var s string
	if c.heapProfiles != "" {
		// Go's profiles are served to the admin only.
		s = fmt.Sprintf("admin_secret = %q\n", benchAdminSecret)
	}
	if c.checkpoints == "off" {
		s += "checkpoint_records = -1\n"
	}
	return s
}

// longCluster is one cluster that lives for the whole benchmark: its
// owner is killed and restarted once per trial.
type longCluster struct {
	name     string
	cl       *cluster
	te       *trialEnv
	backlog  int
	touch    int // messages published and settled just before each kill
	setup    *client.Client
	results  []trialResult
	restarts []restartResult
}

// restartResult is how long a killed node took, once started again, to
// answer health checks and to hold the queue's history as a follower.
type restartResult struct {
	healthy, caughtUp time.Duration
	killedRSS         reading // the killed process's resident set just before the kill
	// killedHeap is the killed process's Go heap just before the kill:
	// what it had allocated (live or not yet collected) and what it held
	// unused without handing it back to the kernel.
	killedHeap heapReading
	failure    string
}

// cmdHistory runs the settled-history benchmark: two clusters side by
// side, one with an empty queue and one whose queue carried a long
// settled history and holds a backlog, whose owners are killed in turn.
func cmdHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench history", w: stderr}
	cfg, err := parseHistory(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-history-")
	if err != nil {
		return rep.failed(err)
	}
	if cfg.keep {
		defer fmt.Fprintf(stderr, "cairn-bench history: data, configurations and logs kept in %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	bin, err := nodeBinary(ctx, cfg.nodeBin, tmp)
	if err != nil {
		return rep.failed(err)
	}
	fmt.Fprintf(stdout, "cairn-bench history: two clusters of 3 cairn-node processes on loopback (%s, %s logs, checkpoints %s), "+
		"one majority queue each. empty: no history, no backlog (%s before each kill). history: %d x %d B published and acked first, then %d left unconsumed before each kill. "+
		"%d rounds; each round kills the owner of each cluster in turn (SIGKILL; fresh subscriber and probe publisher at the kill), "+
		"waits until every confirmed message is delivered, then restarts the killed node and waits until it has caught up as a follower; "+
		"timeout %v; %d CPUs\n", bin, cfg.logLevel, cfg.checkpoints, cfg.emptyTraffic, cfg.settled, payloadSize, cfg.backlog, cfg.trials, cfg.timeout, runtime.NumCPU())
	empty, err := startLong(ctx, "empty", bin, tmp, cfg, 0)
	if err != nil {
		return rep.failed(err)
	}
	defer empty.close()
	if cfg.emptyTraffic == "touched" {
		empty.touch = touchMessages
	}
	hist, err := startLong(ctx, "history", bin, tmp, cfg, cfg.backlog)
	if err != nil {
		return rep.failed(err)
	}
	defer hist.close()
	if err := hist.buildSettled(ctx, cfg.settled, stdout); err != nil {
		return rep.failed(err)
	}
	hist.printDisk(ctx, stdout, "after the settled history")
	for i := range cfg.trials {
		order := []*longCluster{empty, hist}
		if i%2 == 1 {
			order = []*longCluster{hist, empty}
		}
		for _, lc := range order {
			if ctx.Err() != nil {
				break
			}
			if lc == hist && cfg.heapProfiles != "" && i == cfg.trials/2 {
				hist.saveHeapProfiles(ctx, cfg.heapProfiles, stderr)
			}
			res, rr := lc.round(ctx, bin)
			fmt.Fprintf(stderr, "round %d/%d %s: %s; restart: %s\n", i+1, cfg.trials, lc.name, res.summary(), rr.summary())
		}
	}
	hist.printDisk(ctx, stdout, "after the last round")
	return historyReport(stdout, empty, hist)
}

// saveHeapProfiles writes each running node's heap profile into dir,
// saying on w which it could not.
func (lc *longCluster) saveHeapProfiles(ctx context.Context, dir string, w io.Writer) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(w, "cairn-bench history: heap profiles: %v\n", err)
		return
	}
	for _, m := range lc.cl.members {
		if !m.running() {
			continue
		}
		if err := fetchHeapProfile(ctx, m, dir); err != nil {
			fmt.Fprintf(w, "cairn-bench history: heap profile of n%d: %v\n", m.id, err)
		}
	}
}
