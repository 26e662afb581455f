package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cairnmq/cairn/shrink"
	"github.com/cairnmq/cairn/sim"
)

// cmdShrink minimizes a failing scenario (a seed's, or one from a file)
// while the same checker keeps failing, and writes the result in the
// scenario text format.
func cmdShrink(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("shrink", stderr)
	seed := fs.String("seed", "", "shrink the scenario of this seed")
	file := fs.String("scenario", "", "shrink the scenario in this file")
	bug := fs.String("bug", "", "switch on a planted bug (binaries built with -tags cairn_bugs)")
	out := fs.String("out", "", "file for the minimized scenario (required)")
	maxRuns := fs.Int("max-runs", 500, "stop after this many simulations")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if *out == "" {
		return 0, usageError{"shrink needs --out FILE for the minimized scenario"}
	}
	if *maxRuns < 1 {
		return 0, usageError{"--max-runs must be at least 1"}
	}
	if err := enableBug(*bug); err != nil {
		return 0, err
	}
	sc, err := shrinkInput(*seed, *file)
	if err != nil {
		return 0, err
	}
	res, failed := shrink.Scenario(sc, *maxRuns)
	if !failed {
		fmt.Fprintln(stdout, "the scenario passes: nothing to shrink")
		return exitOK, nil
	}
	text, err := res.Scenario.MarshalText()
	if err != nil {
		return 0, err
	}
	head := fmt.Sprintf("# shrunk from %s by cairn-sim shrink: still fails %s\n", shrinkSource(*seed, *file), res.Checker)
	if *bug != "" {
		head += "# (with planted bug " + *bug + " switched on)\n"
	}
	if err := os.WriteFile(*out, append([]byte(head), text...), 0o644); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "%d faults → %d, in %d runs; still fails %s:\n  %s\nwrote %s (replay: cairn-sim replay --scenario %s",
		len(sc.Faults), len(res.Scenario.Faults), res.Runs, res.Checker, res.Violation, *out, *out)
	if *bug != "" {
		fmt.Fprintf(stdout, " --bug %s", *bug)
	}
	fmt.Fprintln(stdout, ")")
	return exitSafety, nil
}

// shrinkInput reads the scenario to shrink from exactly one source.
func shrinkInput(seed, file string) (sim.Scenario, error) {
	switch {
	case (seed == "") == (file == ""):
		return sim.Scenario{}, usageError{"shrink needs exactly one of --seed N and --scenario FILE"}
	case file != "":
		sc, err := readScenario(file)
		if err != nil {
			return sim.Scenario{}, usageError{err.Error()}
		}
		return sc, nil
	}
	r, err := parseSeeds(seed, "")
	if err != nil {
		return sim.Scenario{}, err
	}
	return sim.QueueScenario(r.first), nil
}

func shrinkSource(seed, file string) string {
	if file != "" {
		return file
	}
	return "seed " + seed
}
