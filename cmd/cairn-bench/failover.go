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

// The faults a failover trial can inflict on the queue's owner.
const (
	// faultKill is SIGKILL: the process is gone, and the kernel resets
	// its connections, which the survivors notice at once.
	faultKill = "kill"
	// faultStop is SIGSTOP: the process stays, its sockets stay open and
	// nothing is reset, so only the heartbeats' silence gives it away, as
	// with a hung machine or a long pause.
	faultStop = "stop"
)

// The nodes a failover trial can take down.
const (
	// victimOwner is the queue's owner, wherever the metadata leader is.
	victimOwner = "owner"
	// victimOwnerLeader is an owner that also leads the metadata group,
	// so that a new leader must be elected before the recovery is planned.
	victimOwnerLeader = "owner+leader"
)

// failoverConfig is the configuration of a failover benchmark.
type failoverConfig struct {
	trials  int
	backlog int           // confirmed, unconsumed messages before the kill
	traffic string        // "idle" or "warm"
	rate    int           // warm traffic, messages per second
	warmup  time.Duration // warm traffic before the kill, and again after recovery
	// warmClient is the warm publisher's client settings: "fast" (short
	// attempts and backoffs, like the probes) or "default" (the client
	// package's defaults, as an application gets them).
	warmClient string
	// logLevel is the nodes' log level: debug (the stage breakdown is
	// read from the debug logs) or info (what a production node logs: no
	// stage breakdown and no detection instant, and none of the cost of
	// a debug line per delivery).
	logLevel string
	timeout  time.Duration // how long after the kill each instant may take
	fault    string        // faultKill or faultStop
	nodes    int           // cluster size: 3 or 5
	victim   string        // victimOwner or victimOwnerLeader
	nodeBin  string
	keep     string // which trials' directories to keep: none, failed or all
	verbose  bool
	// peer is a peer harness command whose failover runs after (or
	// before) each cairn trial, and peerTimeout how long from its kill
	// the peer may take before its trial counts as failed.
	peer        string
	peerTimeout time.Duration
}

// warm reports whether a background publisher runs during the trial.
func (c failoverConfig) warm() bool { return c.traffic == "warm" }

// stop reports whether the trials pause the owner instead of killing it.
func (c failoverConfig) stop() bool { return c.fault == faultStop }

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
	fs.StringVar(&c.logLevel, "log-level", "debug", "the nodes' log level: debug (with the stage breakdown) or info (as in production: no stage breakdown, no detection instant)")
	fs.StringVar(&c.warmClient, "warm-client", "fast", "the warm publisher's client settings: fast (short attempts and backoffs, as the probes use) or default (the client package's defaults)")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Second, "each instant must come within this long of the kill, or the trial fails")
	fs.StringVar(&c.fault, "fault", faultKill, "kill (SIGKILL the owner) or stop (SIGSTOP it: a silent failure with no connection reset; SIGCONT at the end of the trial)")
	fs.IntVar(&c.nodes, "nodes", 3, "cairn-node processes per cluster: 3 or 5")
	fs.StringVar(&c.victim, "victim", victimOwner, "owner, or owner+leader: create queues until one's owner also leads the metadata group, and fail that node")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.keep, "keep", "none", "whose data and logs to keep, printing where they are: none, failed (trials that failed or lost a message) or all")
	fs.BoolVar(&c.verbose, "v", false, "print one line per trial on stdout (they always go to stderr)")
	fs.StringVar(&c.peer, "peer", "", "a peer harness command (see bench/) whose own failover runs in turn with each cairn trial")
	fs.DurationVar(&c.peerTimeout, "peer-timeout", 30*time.Second, "how long from its kill the peer may take to publish and deliver, or its trial fails")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.validate()
}

// validate checks the flags' values and their combinations.
func (c failoverConfig) validate() error {
	switch {
	case c.trials < 1:
		return fmt.Errorf("--trials %d: need at least one", c.trials)
	case c.backlog < 0:
		return fmt.Errorf("--backlog %d: cannot be negative", c.backlog)
	case c.traffic != "idle" && c.traffic != "warm":
		return fmt.Errorf("--traffic %q: want idle or warm", c.traffic)
	case c.logLevel != "debug" && c.logLevel != "info":
		return fmt.Errorf("--log-level %q: want debug or info", c.logLevel)
	case c.warmClient != "fast" && c.warmClient != "default":
		return fmt.Errorf("--warm-client %q: want fast or default", c.warmClient)
	case c.keep != "none" && c.keep != "failed" && c.keep != "all":
		return fmt.Errorf("--keep %q: want none, failed or all", c.keep)
	case c.rate < 1 || c.timeout <= 0 || c.warmup < 0 || c.peerTimeout <= 0:
		return fmt.Errorf("--rate, --timeout, --peer-timeout and --warmup must be positive")
	case c.fault != faultKill && c.fault != faultStop:
		return fmt.Errorf("--fault %q: want kill or stop", c.fault)
	case c.nodes != 3 && c.nodes != 5:
		return fmt.Errorf("--nodes %d: want 3 or 5", c.nodes)
	case c.victim != victimOwner && c.victim != victimOwnerLeader:
		return fmt.Errorf("--victim %q: want owner or owner+leader", c.victim)
	}
	// The peer harness kills the leader of a stream on three servers; the
	// comparison means something only when cairn's trial does the same.
	if c.peer != "" && (c.fault != faultKill || c.nodes != 3 || c.victim != victimOwner) {
		return fmt.Errorf("--peer runs only with --fault kill, --nodes 3 and --victim owner, the failover the peer harness runs")
	}
	return nil
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
	var peer *peerSide
	if cfg.peer != "" {
		if peer, err = startPeerSide(ctx, cfg, stderr); err != nil {
			return rep.failed(err)
		}
		defer peer.close()
	}
	fmt.Fprintln(stdout, header(cfg, bin))
	info := cfg.logLevel == "info"
	te := &trialEnv{cfg: cfg, bin: bin, stages: !info, infoLogs: info}
	results, peerResults := runFailoverTrials(ctx, cfg, te, peer, stdout, stderr)
	code := report(stdout, results, faultName(cfg.fault))
	stageReport(stdout, results, faultName(cfg.fault))
	if peer != nil {
		peerReport(stdout, results, peerResults)
	}
	return code
}

// runFailoverTrials runs the trials, and with a peer the peer's trial of
// the same round too, alternating which goes first so that neither side
// always runs on a machine the other has just warmed up.
func runFailoverTrials(ctx context.Context, cfg failoverConfig, te *trialEnv, peer *peerSide, stdout, stderr io.Writer) ([]trialResult, []peerTrial) {
	var results []trialResult
	var peerResults []peerTrial
	for i := range cfg.trials {
		for _, side := range roundSides(peer != nil, i) {
			if ctx.Err() != nil {
				fmt.Fprintf(stdout, "interrupted after %d of %d trials\n", len(results), cfg.trials)
				return results, peerResults
			}
			var line string
			if side == "peer" {
				pt := peer.trial(ctx, cfg.backlog)
				peerResults = append(peerResults, pt)
				line = fmt.Sprintf("trial %d/%d peer: %s", i+1, cfg.trials, pt.summary())
			} else {
				res := te.runTrial(ctx)
				results = append(results, res)
				line = fmt.Sprintf("trial %d/%d: %s", i+1, cfg.trials, res.summary())
			}
			fmt.Fprintln(stderr, line)
			if cfg.verbose {
				fmt.Fprintln(stdout, line)
			}
		}
	}
	return results, peerResults
}

// roundSides lists the sides of round i in the order they run: cairn
// alone, or cairn and the peer, the peer first in odd rounds.
func roundSides(withPeer bool, i int) []string {
	switch {
	case !withPeer:
		return []string{"cairn"}
	case i%2 == 1:
		return []string{"peer", "cairn"}
	}
	return []string{"cairn", "peer"}
}

// faultName names a fault as the report prints it.
func faultName(fault string) string {
	if fault == faultStop {
		return "SIGSTOP"
	}
	return "SIGKILL"
}

// header describes the configuration in one line.
func header(c failoverConfig, bin string) string {
	traffic := "idle (no traffic but the probe)"
	if c.warm() {
		traffic = fmt.Sprintf("warm (%d msg/s from %v before the kill until %v after recovery, %s client settings)", c.rate, c.warmup, c.warmup, c.warmClient)
	}
	fault := "fault SIGKILL of the victim, never restarted"
	if c.stop() {
		fault = fmt.Sprintf("fault SIGSTOP of the victim (a silent failure: no connection reset), SIGCONT after the trial's checks, then killed; "+
			"%d publishes sent to it while stopped, on a client of its own, must not come back confirmed", staleSends)
	}
	victim := "victim the queue's owner"
	if c.victim == victimOwnerLeader {
		victim = "victim the queue's owner while it leads the metadata group (queues are created under new names until one's owner leads)"
	}
	peer := ""
	if c.peer != "" {
		peer = fmt.Sprintf("; peer %q in turn each trial (peer timeout %v)", c.peer, c.peerTimeout)
	}
	return fmt.Sprintf("cairn-bench failover: %d trials; each a fresh cluster of %d cairn-node processes on loopback "+
		"(%s, %s logs), one majority queue, node default detection; %s; %s; "+
		"backlog %d x %d B; traffic %s; fresh subscriber and probe publisher at the kill "+
		"(request timeout 1s, up to 30 attempts, backoff 20ms-200ms); timeout %v; %d CPUs%s",
		c.trials, c.nodes, bin, c.logLevel, fault, victim, c.backlog, payloadSize, traffic, c.timeout, runtime.NumCPU(), peer)
}
