// Command cairn-sim runs cairn's deterministic simulator: seeded sweeps,
// exact replays of one seed with its trace, and the list of transition
// boundaries a run meets.
package main

import "os"

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }
