// Command cairn-mutate measures how much of what could go wrong in node
// and storage code the simulator catches: it makes one small change at a
// time (a comparison's edge moved, a condition negated, a sync or persist
// step dropped), builds the simulator with it, runs a sweep, and reports
// which mutants were killed and which survived.
//
//	cairn-mutate [--sample 40] [--seed 1] [--seeds 1-500] [--tests ./node,./storage] [--list] [FILES...]
//
// FILES default to every non-test Go file of node, node/recovery and
// storage. The tree is never changed: each mutant is overlaid on the
// build (go build -overlay).
package main

import (
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
