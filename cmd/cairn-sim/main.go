// Command cairn-sim runs cairn's deterministic simulator: seeded sweeps,
// exact replays of one seed with its trace, and the list of transition
// boundaries a run meets.
package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target the simulator runs with
// unless GOGC says otherwise. A run allocates short-lived garbage at a
// high rate (messages, log frames, state files) and keeps little, so a
// large target trades memory the machine has for time. Measured on seeds
// 1-500 with two workers: 400 took 33.4 and 33.9 s, 800 took 30.8 and
// 30.3 s; the largest worker grew from 209 to 304 MB.
const gcPercent = 800

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}
