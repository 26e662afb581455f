package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// A sweep runs its seeds in worker processes rather than goroutines: a
// seed that exhausts memory or kills its process takes one worker down,
// not the sweep, and is reported as that seed's simulator crash. The
// parent re-executes its own binary as "sweep-worker", hands each worker
// one seed at a time on stdin, and reads one JSON line per seed back.

// workerCommand is the hidden command a sweep starts its workers with.
const workerCommand = "sweep-worker"

// cmdSweepFamily dispatches the sweep commands, so the command table in
// cli.go needs one line for all of them.
func cmdSweepFamily(args []string, stdout, stderr io.Writer) (int, error) {
	switch args[0] {
	case workerCommand:
		return cmdSweepWorker(args[1:], os.Stdin, stdout, stderr)
	case "sweep-merge":
		return cmdSweepMerge(args[1:], stdout, stderr)
	}
	return cmdSweep(args[1:], stdout, stderr)
}

// cmdSweep runs a range of seeds (or one shard of it) in worker
// processes, shows progress on stderr, and prints failures, the one-line
// summary and the coverage report on stdout.
func cmdSweep(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("sweep", stderr)
	seeds := fs.String("seeds", "1-500", "seeds to run, A-B")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "worker processes")
	shard := fs.String("shard", "1/1", "run only shard i of n (1-based) of the seeds: contiguous, disjoint, together the whole range")
	jsonPath := fs.String("json", "", "write the summary (counts, failures, coverage) as JSON to this file, for sweep-merge")
	rows := fs.Int("rows", 12, "boundary rows in the printed coverage table (the rarest first); the JSON has them all")
	fs.IntVar(&shapeNodes, "nodes", 0, "give every seed's cluster this many founding nodes (0: the seed draws 3 or 5)")
	cover := fs.String("cover", "", "build the workers with coverage of node/ and storage/, keep the counters and a profile in this directory, and report what no seed executed")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if shapeNodes < 0 || shapeNodes > sim.MaxNodes {
		return 0, usageError{fmt.Sprintf("--nodes %d: want 0 (drawn) or 1 to %d", shapeNodes, sim.MaxNodes)}
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Sprintf("sweep: unexpected argument %q", fs.Arg(0))}
	}
	whole, err := parseSeeds("", *seeds)
	if err != nil {
		return 0, err
	}
	i, n, err := parseShard(*shard)
	if err != nil {
		return 0, err
	}
	if *workers < 1 {
		return 0, usageError{"--workers must be at least 1"}
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("finding this binary to start workers: %w", err)
	}
	if *cover != "" {
		if exe, workerEnv, err = coverSetup(*cover); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	sum := newSweepSummary()
	if r, ok := shardOf(whole, i, n); ok {
		sum.Ranges = []seedSpan{{r.first, r.last}}
		prog := newProgress(stderr, r.count())
		runPool(exe, r, *workers, func(rep seedReport) {
			if rep.failed() {
				prog.clear() // the failure is printed on stdout, maybe the same terminal
			}
			sum.add(rep, stdout)
			prog.update(sum.Seeds, len(sum.Failures))
		})
		prog.finish(sum.Seeds, len(sum.Failures))
	}
	sum.Wall = time.Since(start)
	sum.printReport(stdout, *rows)
	if *cover != "" {
		if err := coverReport(*cover, stdout); err != nil {
			return 0, err
		}
	}
	if *jsonPath != "" {
		if err := sum.writeFile(*jsonPath); err != nil {
			return 0, err
		}
	}
	ret := sum.toSummary()
	return ret.exitCode(), nil
}

// parseShard reads "i/n" with 1 <= i <= n.
func parseShard(s string) (i, n uint64, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || i < 1 || i > n {
		return 0, 0, usageError{fmt.Sprintf("--shard %q is not i/n with 1 <= i <= n", s)}
	}
	return i, n, nil
}

// shardOf is shard i of n of r: the i-th of n contiguous pieces whose
// sizes differ by at most one. It reports false for an empty shard (more
// shards than seeds).
func shardOf(r seedRange, i, n uint64) (seedRange, bool) {
	count := r.last - r.first + 1
	lo := r.first + (i-1)*(count/n) + min(i-1, count%n)
	size := count / n
	if i <= count%n {
		size++
	}
	if size == 0 {
		return seedRange{}, false
	}
	return seedRange{lo, lo + size - 1}, true
}

// seedReport is what a worker sends back for one seed: enough to count,
// print a failure and aggregate coverage without the run's history.
type seedReport struct {
	Seed       uint64          `json:"seed"`
	Hash       uint64          `json:"hash"`
	Events     int             `json:"events"`
	SimTime    time.Duration   `json:"simtime_ns"`
	Summary    string          `json:"summary,omitempty"`
	Stats      props.Stats     `json:"stats"`
	Violations []sim.Violation `json:"violations,omitempty"`
	Crash      string          `json:"crash,omitempty"`
	Coverage   sim.Coverage    `json:"coverage"`
	// Faults counts the seed's scheduled faults by kind.
	Faults map[string]int `json:"faults,omitempty"`
	// Detection is the failure detection mode the seed started in;
	// Reassign counts its reassignments, and the unprovoked ones, by the
	// mode in force when each was planned.
	Detection uint8                        `json:"detection,omitempty"`
	Reassign  map[string]modeReassignments `json:"reassign,omitempty"`
}

// cmdSweepWorker reads seeds, one per line, and writes one JSON report per
// seed, until its input ends.
func cmdSweepWorker(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := newFlags(workerCommand, stderr)
	fs.IntVar(&shapeNodes, "nodes", 0, "the sweep's --nodes")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	in := bufio.NewScanner(stdin)
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		seed, err := strconv.ParseUint(strings.TrimSpace(in.Text()), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("worker: bad seed line %q", in.Text())
		}
		if err := enc.Encode(reportSeed(seed)); err != nil {
			return 0, err
		}
		// The parent waits for this line before it sends the next seed.
		if err := out.Flush(); err != nil {
			return 0, err
		}
	}
	return exitOK, in.Err()
}

// shapeNodes, when set, fixes the cluster size of every generated queue
// scenario a sweep and its workers run (sweep --nodes).
var shapeNodes int

// queueScenario is the queue scenario of seed, in the cluster shape the
// sweep asked for.
func queueScenario(seed uint64) sim.Scenario {
	if shapeNodes > 0 {
		return sim.QueueScenarioOf(seed, shapeNodes)
	}
	return sim.QueueScenario(seed)
}

// reportSeed runs one queue seed and condenses its outcome.
func reportSeed(seed uint64) seedReport {
	o := runSeed(systemQueue, seed, nil)
	res := o.res
	rep := seedReport{
		Seed: seed, Hash: res.TraceHash, Events: res.Events, SimTime: res.SimTime, Summary: res.Summary,
		Stats: o.stats, Violations: res.Violations, Crash: o.crash,
	}
	rep.Detection, rep.Reassign = o.scenario.Detection, reassignmentsByMode(res.History)
	if res.History != nil {
		rep.Coverage = res.History.Coverage
	}
	for _, f := range o.scenario.Faults {
		if f.At < o.scenario.Safety {
			if rep.Faults == nil {
				rep.Faults = make(map[string]int)
			}
			rep.Faults[f.Kind.String()]++
		}
	}
	return rep
}

func (r seedReport) failed() bool { return r.Crash != "" || len(r.Violations) > 0 }

// outcome rebuilds the outcome run.go prints and counts. The scenario is
// drawn again from the seed, which is cheap and exact, rather than sent.
func (r seedReport) outcome() outcome {
	o := outcome{
		res: sim.Result{Seed: r.Seed, TraceHash: r.Hash, Events: r.Events, SimTime: r.SimTime,
			Violations: r.Violations, Summary: r.Summary},
		stats: r.Stats, crash: r.Crash,
	}
	if o.crash != "" || o.res.Failed() {
		o.scenario = queueScenario(r.Seed)
	}
	return o
}
