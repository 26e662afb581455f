package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
	"github.com/sourcegraph/conc"
)

// outcome is one seed's result, or the panic that ended it.
type outcome struct {
	res      sim.Result
	stats    props.Stats
	scenario sim.Scenario
	crash    string
	// file is the scenario file the run came from, if not from a seed.
	file string
}

// systems the simulator can run.
const (
	systemQueue   = "queue"
	systemCounter = "counter"
)

func runSeed(system string, seed uint64, trace io.Writer) outcome {
	if system == systemCounter {
		return runScenario(system, sim.CounterScenario(seed), trace)
	}
	return runScenario(system, queueScenario(seed), trace)
}

// runScenario runs one scenario and judges it; a panic of the simulator
// itself becomes the outcome's crash.
func runScenario(system string, sc sim.Scenario, trace io.Writer) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{res: sim.Result{Seed: sc.Seed}, scenario: sc, crash: fmt.Sprintf("%v\n%s", r, debug.Stack())}
		}
	}()
	if system == systemCounter {
		return outcome{res: sim.NewWorld(sc, sim.NewCounterSystem(), trace).Run(), scenario: sc}
	}
	rep := props.RunQueue(sc, trace)
	return outcome{res: rep.Result, stats: rep.Stats, scenario: sc}
}

// readScenario reads a scenario file.
func readScenario(path string) (sim.Scenario, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return sim.Scenario{}, err
	}
	sc, err := sim.ParseScenario(text)
	if err != nil {
		return sim.Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// sweep runs seeds on workers and hands outcomes to report in seed order.
// report returns false to stop the sweep early.
func sweep(system string, r seedRange, workers int, report func(outcome) bool) {
	n := r.count()
	results := make([]chan outcome, n)
	for i := range results {
		results[i] = make(chan outcome, 1)
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg conc.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for !stop.Load() {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				results[i] <- runSeed(system, r.first+uint64(i), nil)
			}
		})
	}
	for i := range n {
		if !report(<-results[i]) {
			stop.Store(true)
			break
		}
	}
	wg.Wait()
}

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("run", stderr)
	seed := fs.String("seed", "", "run one seed")
	seeds := fs.String("seeds", "", "run a range of seeds, A-B")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "seeds run in parallel")
	tracePath := fs.String("trace", "", "write the full trace of a single seed to this file")
	quiet := fs.Bool("quiet", false, "print only failures and the summary")
	system := fs.String("system", systemQueue, "what to simulate: queue or counter")
	bug := fs.String("bug", "", "switch on a planted bug (binaries built with -tags cairn_bugs)")
	scenario := fs.String("scenario", "", "run the scenario in this file instead of a seed's")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return 0, err
		}
		defer stop()
	}
	if err := checkSystem(*system); err != nil {
		return 0, err
	}
	if err := enableBug(*bug); err != nil {
		return 0, err
	}
	if *scenario != "" {
		if *seed != "" || *seeds != "" {
			return 0, usageError{"give --scenario or --seed/--seeds, not both"}
		}
		path := *tracePath
		if path == "" {
			path = os.DevNull
		}
		return replayFile(*system, *scenario, path, "", *bug, stdout)
	}
	r, err := parseSeeds(*seed, *seeds)
	if err != nil {
		return 0, err
	}
	if *tracePath != "" {
		if r.count() != 1 {
			return 0, usageError{"--trace needs a single --seed"}
		}
		return replayTo(*system, r.first, *tracePath, "", *bug, stdout)
	}
	if *workers < 1 {
		return 0, usageError{"--workers must be at least 1"}
	}
	var sum summary
	start := time.Now()
	sweep(*system, r, *workers, func(o outcome) bool {
		sum.add(o)
		if r.count() == 1 && !*quiet {
			printSwarm(stdout, o.scenario)
		}
		if !*quiet || o.crash != "" || o.res.Failed() {
			printOutcome(stdout, o, *bug)
		}
		return true
	})
	sum.print(stdout, time.Since(start))
	return sum.exitCode(), nil
}

// startCPUProfile starts profiling the process into a new file at path
// and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func checkSystem(system string) error {
	if system != systemQueue && system != systemCounter {
		return usageError{fmt.Sprintf("--system %q: want queue or counter", system)}
	}
	return nil
}

func printOutcome(w io.Writer, o outcome, bug string) {
	res := o.res
	replay := fmt.Sprintf("cairn-sim replay --seed %d", res.Seed)
	if o.file != "" {
		replay = "cairn-sim replay --scenario " + o.file
	}
	if bug != "" {
		replay += " --bug " + bug
	}
	if o.crash != "" {
		fmt.Fprintf(w, "seed=%d SIMULATOR CRASH: %s\n  replay: %s\n", res.Seed, o.crash, replay)
		return
	}
	status := "ok"
	if res.Failed() {
		status = "FAIL"
	}
	fmt.Fprintf(w, "seed=%d hash=%016x events=%d simtime=%v %s %s\n", res.Seed, res.TraceHash, res.Events, res.SimTime, res.Summary, status)
	for _, v := range res.Violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	if res.Failed() {
		fmt.Fprintf(w, "  replay: %s --trace trace-%d.txt\n", replay, res.Seed)
		fmt.Fprintf(w, "  scenario (save it to a file to edit and rerun it with --scenario):\n")
		text, _ := o.scenario.MarshalText()
		for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}

// summary accumulates a sweep.
type summary struct {
	seeds, safety, liveness, crashes int
	events                           int
	simTime                          time.Duration
	stats                            props.Stats
	// reassign counts reassignments, and the unprovoked ones, per
	// detection mode.
	reassign reassignCounts
}

func (s *summary) add(o outcome) {
	s.seeds++
	switch {
	case o.crash != "":
		s.crashes++
	case o.res.SafetyFailed():
		s.safety++
	case o.res.Failed():
		s.liveness++
	}
	s.events += o.res.Events
	s.simTime += o.res.SimTime
	st := &s.stats
	st.Published += o.stats.Published
	st.Confirmed += o.stats.Confirmed
	st.Unknown += o.stats.Unknown
	st.Failed += o.stats.Failed
	st.Delivered += o.stats.Delivered
	st.Duplicates += o.stats.Duplicates
	st.Acked += o.stats.Acked
	st.Failovers += o.stats.Failovers
	if s.reassign == nil {
		s.reassign = make(reassignCounts)
	}
	s.reassign.addSeed(o.res.Seed, o.scenario.Detection, reassignmentsByMode(o.res.History))
}

func (s *summary) print(w io.Writer, wall time.Duration) {
	fmt.Fprintf(w, "seeds=%d %s %s safety-violations=%d liveness-failures=%d simulator-crashes=%d events=%d simulated=%v wall=%v (%.0f simulated s per wall s)\n",
		s.seeds, s.stats, s.reassign.text(), s.safety, s.liveness, s.crashes, s.events, s.simTime.Round(time.Millisecond),
		wall.Round(time.Millisecond), s.simTime.Seconds()/max(wall.Seconds(), 1e-9))
	if seeds := s.reassign.seedsText(10); seeds != "" {
		fmt.Fprintf(w, "%s\n", seeds)
	}
}

func (s *summary) exitCode() int {
	switch {
	case s.crashes > 0:
		return exitCrash
	case s.safety > 0:
		return exitSafety
	case s.liveness > 0:
		return exitLiveness
	}
	return exitOK
}

func cmdReplay(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("replay", stderr)
	seed := fs.String("seed", "", "the seed to replay")
	tracePath := fs.String("trace", "-", "file for the full trace; - for standard output")
	system := fs.String("system", systemQueue, "what to simulate: queue or counter")
	bug := fs.String("bug", "", "switch on a planted bug (binaries built with -tags cairn_bugs)")
	scenario := fs.String("scenario", "", "replay the scenario in this file instead of a seed's")
	htmlPath := fs.String("html", "", "write a self-contained HTML timeline of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if err := checkSystem(*system); err != nil {
		return 0, err
	}
	if err := enableBug(*bug); err != nil {
		return 0, err
	}
	if *htmlPath != "" && !flagGiven(fs, "trace") {
		*tracePath = os.DevNull // the page replaces the trace on stdout
	}
	if *scenario != "" {
		if *seed != "" {
			return 0, usageError{"give --scenario or --seed, not both"}
		}
		return replayFile(*system, *scenario, *tracePath, *htmlPath, *bug, stdout)
	}
	r, err := parseSeeds(*seed, "")
	if err != nil {
		return 0, err
	}
	return replayTo(*system, r.first, *tracePath, *htmlPath, *bug, stdout)
}

// replayFile runs the scenario in file, writing its trace to path and,
// if htmlPath is set, its timeline there.
func replayFile(system, file, path, htmlPath, bug string, stdout io.Writer) (int, error) {
	sc, err := readScenario(file)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	trace, done, err := openTrace(path, stdout)
	if err != nil {
		return 0, err
	}
	defer done()
	rec, trace := recordTimeline(htmlPath, trace)
	o := runScenario(system, sc, trace)
	o.file = file
	var sum summary
	sum.add(o)
	printSwarm(stdout, o.scenario)
	printOutcome(stdout, o, bug)
	return sum.exitCode(), rec.save(htmlPath, o, bug)
}

// printSwarm shows what a single run is made of before its outcome: the
// cluster, the swarm's profile, classes and rates, and how many faults.
func printSwarm(w io.Writer, sc sim.Scenario) {
	fmt.Fprintf(w, "nodes=%d faults=%d swarm %s\n", sc.Nodes, len(sc.Faults), sc.Swarm)
}

// openTrace opens the trace destination: a file, or stdout for "-".
func openTrace(path string, stdout io.Writer) (io.Writer, func(), error) {
	if path == "-" {
		return stdout, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// replayTo runs one seed writing its trace to path ("-" is stdout) and,
// if htmlPath is set, its timeline there, then prints the one-line
// outcome.
func replayTo(system string, seed uint64, path, htmlPath, bug string, stdout io.Writer) (int, error) {
	trace, done, err := openTrace(path, stdout)
	if err != nil {
		return 0, err
	}
	defer done()
	rec, trace := recordTimeline(htmlPath, trace)
	o := runSeed(system, seed, trace)
	var sum summary
	sum.add(o)
	printSwarm(stdout, o.scenario)
	printOutcome(stdout, o, bug)
	return sum.exitCode(), rec.save(htmlPath, o, bug)
}

func cmdBoundaries(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("boundaries", stderr)
	seed := fs.String("seed", "", "one seed")
	seeds := fs.String("seeds", "1-20", "a range of seeds, A-B")
	system := fs.String("system", systemQueue, "what to simulate: queue or counter")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if *seed != "" {
		*seeds = ""
	}
	r, err := parseSeeds(*seed, *seeds)
	if err != nil {
		return 0, err
	}
	if err := checkSystem(*system); err != nil {
		return 0, err
	}
	hits := make(map[string]int)
	var sum summary
	sweep(*system, r, runtime.GOMAXPROCS(0), func(o outcome) bool {
		sum.add(o)
		for name, n := range o.res.Boundaries {
			hits[name] += n
		}
		return true
	})
	names := make([]string, 0, len(hits))
	for name := range hits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(stdout, "%-40s %d\n", name, hits[name])
	}
	fmt.Fprintf(stdout, "%d boundaries over %d seeds\n", len(names), sum.seeds)
	return sum.exitCode(), nil
}
