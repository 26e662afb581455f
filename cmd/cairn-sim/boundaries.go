package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
	"github.com/sourcegraph/conc"
)

// cmdSweepBoundaries runs a failover baseline, then crashes each node at
// each transition boundary it met (up to the k-th hit), checking every
// invariant and liveness in each run.
func cmdSweepBoundaries(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("sweep-boundaries", stderr)
	seed := fs.Uint64("seed", 1, "the seed of the baseline scenario")
	k := fs.Int("k", 2, "crash at each of the first k hits of a boundary")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs in parallel")
	only := fs.String("only", "", "run one case, NODE:BOUNDARY:HIT (node 1-based), e.g. from a failure line")
	tracePath := fs.String("trace", "", "with --only: write the case's trace here")
	kind := fs.String("baseline", "failover", "the baseline: failover (3 nodes, owner down 3s), replace (5 nodes, owner down 7s and replaced) or handoff (3 nodes, owner stopped gracefully for 3s)")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	var baseline sim.Scenario
	switch *kind {
	case "failover":
		baseline = props.BoundaryBaseline(*seed)
	case "replace":
		baseline = props.ReplaceBaseline(*seed)
	case "handoff":
		baseline = props.HandoffBaseline(*seed)
	default:
		return 0, usageError{fmt.Sprintf("unknown baseline %q: failover, replace or handoff", *kind)}
	}
	if *only != "" {
		c, err := parseCase(*only)
		if err != nil {
			return 0, err
		}
		return runOneCase(baseline, c, *tracePath, stdout)
	}
	start := time.Now()
	base := props.RunQueue(baseline, nil)
	if base.Failed() {
		fmt.Fprintf(stdout, "the baseline itself fails:\n")
		printOutcome(stdout, outcome{res: base.Result, stats: base.Stats, scenario: baseline}, "")
		return exitSafety, nil
	}
	cases := props.BoundaryCases(base.Result, *k)
	results := runCases(baseline, cases, *workers)
	failed, covered := 0, map[string]bool{}
	for i, rep := range results {
		c := cases[i]
		covered[c.Boundary] = true
		if !rep.Failed() {
			continue
		}
		failed++
		fmt.Fprintf(stdout, "FAIL crash n%d at %s hit %d: %s\n  replay: cairn-sim sweep-boundaries --baseline %s --seed %d --only %d:%s:%d --trace trace.txt\n",
			c.Node+1, c.Boundary, c.Hit, rep.Violations[0], *kind, *seed, c.Node+1, c.Boundary, c.Hit)
	}
	fmt.Fprintf(stdout, "baseline seed %d: %d boundaries on %d (node, boundary) pairs; %d crash cases, %d failed, in %v\n",
		*seed, len(covered), len(base.NodeBoundaries), len(cases), failed, time.Since(start).Round(time.Millisecond))
	if failed > 0 {
		return exitSafety, nil
	}
	return exitOK, nil
}

func runCases(baseline sim.Scenario, cases []props.BoundaryCase, workers int) []props.Report {
	out := make([]props.Report, len(cases))
	var next atomic.Int64
	var wg conc.WaitGroup
	for range min(workers, max(len(cases), 1)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(cases)) {
					return
				}
				out[i] = props.RunQueue(props.CaseScenario(baseline, cases[i]), nil)
			}
		})
	}
	wg.Wait()
	return out
}

func parseCase(s string) (props.BoundaryCase, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return props.BoundaryCase{}, usageError{fmt.Sprintf("--only %q: want NODE:BOUNDARY:HIT", s)}
	}
	node, err1 := strconv.Atoi(parts[0])
	hit, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || node < 1 || hit < 1 {
		return props.BoundaryCase{}, usageError{fmt.Sprintf("--only %q: node and hit must be positive numbers", s)}
	}
	return props.BoundaryCase{Node: node - 1, Boundary: parts[1], Hit: hit}, nil
}

func runOneCase(baseline sim.Scenario, c props.BoundaryCase, tracePath string, stdout io.Writer) (int, error) {
	var trace io.Writer
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		trace = f
	}
	sc := props.CaseScenario(baseline, c)
	rep := props.RunQueue(sc, trace)
	o := outcome{res: rep.Result, stats: rep.Stats, scenario: sc}
	printOutcome(stdout, o, "")
	var sum summary
	sum.add(o)
	return sum.exitCode(), nil
}
