package main

import (
	"io"
	"os"

	"github.com/cairnmq/cairn/sim"
)

// cmdScenario writes out the scenario a seed generates, so it can be
// edited (a fault removed, a duration changed) and run with --scenario.
func cmdScenario(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("scenario", stderr)
	seed := fs.String("seed", "", "the seed whose scenario to print")
	system := fs.String("system", systemQueue, "what to simulate: queue or counter")
	out := fs.String("out", "", "write the scenario to this file instead of standard output")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if err := checkSystem(*system); err != nil {
		return 0, err
	}
	r, err := parseSeeds(*seed, "")
	if err != nil {
		return 0, err
	}
	sc := sim.QueueScenario(r.first)
	if *system == systemCounter {
		sc = sim.CounterScenario(r.first)
	}
	text, err := sc.MarshalText()
	if err != nil {
		return 0, err
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return exitOK, err
	}
	return exitOK, os.WriteFile(*out, text, 0o644)
}
