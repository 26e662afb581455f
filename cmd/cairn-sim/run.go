package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"sync/atomic"
	"time"

	"github.com/cairnmq/cairn/sim"
	"github.com/sourcegraph/conc"
)

// outcome is one seed's result, or the panic that ended it.
type outcome struct {
	res   sim.Result
	crash string
}

func runSeed(seed uint64, trace io.Writer) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{res: sim.Result{Seed: seed}, crash: fmt.Sprintf("%v\n%s", r, debug.Stack())}
		}
	}()
	sc := sim.CounterScenario(seed)
	return outcome{res: sim.NewWorld(sc, sim.NewCounterSystem(), trace).Run()}
}

// sweep runs seeds on workers and hands outcomes to report in seed order.
func sweep(r seedRange, workers int, report func(outcome)) {
	n := r.count()
	results := make([]chan outcome, n)
	for i := range results {
		results[i] = make(chan outcome, 1)
	}
	var next atomic.Int64
	var wg conc.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				results[i] <- runSeed(r.first+uint64(i), nil)
			}
		})
	}
	for i := range n {
		report(<-results[i])
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
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	r, err := parseSeeds(*seed, *seeds)
	if err != nil {
		return 0, err
	}
	if *tracePath != "" {
		if r.count() != 1 {
			return 0, usageError{"--trace needs a single --seed"}
		}
		return replayTo(r.first, *tracePath, stdout)
	}
	if *workers < 1 {
		return 0, usageError{"--workers must be at least 1"}
	}
	var sum summary
	start := time.Now()
	sweep(r, *workers, func(o outcome) {
		sum.add(o)
		if !*quiet || o.crash != "" || o.res.Failed() {
			printOutcome(stdout, o)
		}
	})
	sum.print(stdout, time.Since(start))
	return sum.exitCode(), nil
}

func printOutcome(w io.Writer, o outcome) {
	res := o.res
	if o.crash != "" {
		fmt.Fprintf(w, "seed=%d SIMULATOR CRASH: %s\n  replay: cairn-sim replay --seed %d\n", res.Seed, o.crash, res.Seed)
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
		fmt.Fprintf(w, "  replay: cairn-sim replay --seed %d --trace trace-%d.txt\n", res.Seed, res.Seed)
	}
}

// summary accumulates a sweep.
type summary struct {
	seeds, safety, liveness, crashes int
	events                           int
	simTime                          time.Duration
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
}

func (s *summary) print(w io.Writer, wall time.Duration) {
	fmt.Fprintf(w, "seeds=%d safety-violations=%d liveness-failures=%d simulator-crashes=%d events=%d simulated=%v wall=%v (%.0f simulated s per wall s)\n",
		s.seeds, s.safety, s.liveness, s.crashes, s.events, s.simTime.Round(time.Millisecond), wall.Round(time.Millisecond),
		s.simTime.Seconds()/max(wall.Seconds(), 1e-9))
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
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	r, err := parseSeeds(*seed, "")
	if err != nil {
		return 0, err
	}
	return replayTo(r.first, *tracePath, stdout)
}

// replayTo runs one seed writing its trace to path ("-" is stdout), then
// prints the one-line outcome.
func replayTo(seed uint64, path string, stdout io.Writer) (int, error) {
	trace := stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		trace = f
	}
	o := runSeed(seed, trace)
	var sum summary
	sum.add(o)
	printOutcome(stdout, o)
	return sum.exitCode(), nil
}

func cmdBoundaries(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("boundaries", stderr)
	seed := fs.String("seed", "", "one seed")
	seeds := fs.String("seeds", "1-20", "a range of seeds, A-B")
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
	hits := make(map[string]int)
	var sum summary
	sweep(r, runtime.GOMAXPROCS(0), func(o outcome) {
		sum.add(o)
		for name, n := range o.res.Boundaries {
			hits[name] += n
		}
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
