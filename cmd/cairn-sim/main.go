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

// lazyReturn hands the heap a run frees back to the kernel lazily
// (MADV_FREE rather than MADV_DONTNEED), so the next garbage cycle's
// allocations do not fault the same pages in again: a run's heap swings
// between its live size and many times that (gcPercent). The runtime
// reads this setting only when a process starts, so setting it in the
// environment here reaches the sweep's worker processes, which run the
// seeds, and not this one (a run with --seed or --seeds keeps the
// kernel's default unless GODEBUG says otherwise).
const lazyReturn = "madvdontneed=0"

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GODEBUG") == "" {
		os.Setenv("GODEBUG", lazyReturn)
	}
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}
