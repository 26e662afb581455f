package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/cairnmq/cairn/bugs"
)

// exitNotCaught is hunt's exit code when the bug escaped every seed: the
// checkers have lost their teeth.
const exitNotCaught = 1

func enableBug(name string) error {
	if name == "" {
		return nil
	}
	if !bugs.Known(name) {
		return usageError{fmt.Sprintf("unknown bug %q; planted bugs are %v", name, bugs.All)}
	}
	if err := bugs.Enable(name); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// cmdHunt switches on a planted bug and sweeps seeds until one catches it.
func cmdHunt(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("hunt", stderr)
	bug := fs.String("bug", "", "the planted bug to hunt: "+fmt.Sprint(bugs.All))
	seeds := fs.String("seeds", "1-1000", "seeds to try, A-B")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "seeds run in parallel")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if *bug == "" {
		return 0, usageError{"hunt needs --bug NAME"}
	}
	r, err := parseSeeds("", *seeds)
	if err != nil {
		return 0, err
	}
	if err := enableBug(*bug); err != nil {
		return 0, err
	}
	start := time.Now()
	tried := 0
	var caught *outcome
	for caught == nil && r.first <= r.last {
		sweep(systemQueue, r, *workers, func(o outcome) bool {
			tried++
			if o.crash != "" || o.res.Failed() {
				caught = &o
				return false
			}
			return true
		})
		if caught == nil || !standing(caught.res.Seed, *bug) {
			break
		}
		// A seed that fails with the bug switched off catches nothing:
		// it is a defect of its own, reported so someone fixes it.
		fmt.Fprintf(stdout, "seed %d fails without the bug too (a standing failure, not a catch): cairn-sim replay --seed %d\n",
			caught.res.Seed, caught.res.Seed)
		r.first, caught = caught.res.Seed+1, nil
	}
	if caught == nil {
		fmt.Fprintf(stdout, "bug %s escaped all %d seeds (%s) in %v\n", *bug, tried, *seeds, time.Since(start).Round(time.Millisecond))
		return exitNotCaught, nil
	}
	fmt.Fprintf(stdout, "bug %s caught by seed %d (after %d seeds, %v)\n", *bug, caught.res.Seed, tried, time.Since(start).Round(time.Millisecond))
	printOutcome(stdout, *caught, *bug)
	return exitOK, nil
}

// standing reports whether seed fails with no bug planted. The sweep has
// stopped, so switching the bug off and on again races with no run.
func standing(seed uint64, bug string) bool {
	bugs.Enable("")
	defer bugs.Enable(bug)
	o := runSeed(systemQueue, seed, nil)
	return o.crash != "" || o.res.Failed()
}
