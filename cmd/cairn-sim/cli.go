package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Exit codes. A sweep that finds several kinds of failure exits with the
// most severe: a simulator crash, then a safety violation, then a
// liveness failure.
const (
	exitOK       = 0
	exitSafety   = 1
	exitLiveness = 2
	exitCrash    = 3
	exitUsage    = 64
)

const usage = `usage: cairn-sim <command> [flags]

commands:
  run         run seeds: --seed N or --seeds A-B [--workers K] [--trace FILE] [--system queue|counter],
              or a scenario file: --scenario FILE; [--cpu-profile FILE] profiles the whole run
  replay      rerun one seed or scenario exactly and write its trace: --seed N | --scenario FILE [--trace FILE]
              [--html FILE] also writes a self-contained timeline page of the run
  scenario    print the scenario a seed generates, in the text format --scenario reads:
              --seed N [--system queue|counter] [--out FILE]
  boundaries  list the transition boundaries met: [--seed N | --seeds A-B]
  sweep-boundaries  run a failover baseline, then crash each node at each boundary it met:
              [--seed N] [--k K] [--baseline failover|replace|handoff] [--only NODE:BOUNDARY:HIT [--trace FILE]]
  election-report  crash the metadata leader once per seed and report election latency
              per detection mode: [--seeds A-B]
  failover-report  kill a queue's owner once per seed and report times to suspicion,
              activation, first delivery, first confirmed publish: [--seeds A-B]
              [--backlogs 0,10000] [--detection heartbeat|eager] [--cases owner,owner+leader]
              [--checkpoint-records N] (0: checkpoints off, as before)
  shrink      minimize a failing scenario while the same checker fails, and write it:
              (--seed N | --scenario FILE) [--bug NAME] --out FILE [--max-runs N]
  sweep       run seeds in worker processes with a progress bar, then print failures, the summary
              and coverage (boundary x fault matrix, probes never reached): --seeds A-B
              [--workers K] [--shard i/n] [--json FILE] [--rows N] [--nodes N]
  sweep-merge sum the --json summaries of a sharded sweep and report the whole: FILE... [--json FILE]
  hunt        switch on a planted bug and find the first seed that catches it:
              --bug NAME [--seeds A-B] (needs a binary built with -tags cairn_bugs)

exit codes: 0 ok, 1 safety violation, 2 liveness failure, 3 simulator crash, 64 usage
`

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	code := exitOK
	switch args[0] {
	case "run":
		code, err = cmdRun(args[1:], stdout, stderr)
	case "replay":
		code, err = cmdReplay(args[1:], stdout, stderr)
	case "scenario":
		code, err = cmdScenario(args[1:], stdout, stderr)
	case "shrink":
		code, err = cmdShrink(args[1:], stdout, stderr)
	case "boundaries":
		code, err = cmdBoundaries(args[1:], stdout, stderr)
	case "hunt":
		code, err = cmdHunt(args[1:], stdout, stderr)
	case "sweep-boundaries":
		code, err = cmdSweepBoundaries(args[1:], stdout, stderr)
	case "election-report":
		code, err = cmdElectionReport(args[1:], stdout, stderr)
	case "failover-report":
		code, err = cmdFailoverReport(args[1:], stdout, stderr)
	case "sweep", "sweep-merge", workerCommand:
		code, err = cmdSweepFamily(args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "cairn-sim: %v\n\n%s", err, usage)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "cairn-sim: %v\n", err)
		return exitCrash
	}
	return code
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// seedRange is an inclusive range of seeds.
type seedRange struct{ first, last uint64 }

func (r seedRange) count() int { return int(r.last - r.first + 1) }

// parseSeeds reads --seed N or --seeds A-B; exactly one must be given.
func parseSeeds(seed, seeds string) (seedRange, error) {
	switch {
	case seed != "" && seeds != "":
		return seedRange{}, usageError{"give --seed or --seeds, not both"}
	case seed != "":
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return seedRange{}, usageError{fmt.Sprintf("--seed %q is not a number", seed)}
		}
		return seedRange{n, n}, nil
	case seeds != "":
		a, b, ok := strings.Cut(seeds, "-")
		first, err1 := strconv.ParseUint(a, 10, 64)
		last, err2 := strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || last < first {
			return seedRange{}, usageError{fmt.Sprintf("--seeds %q is not a range A-B with A <= B", seeds)}
		}
		return seedRange{first, last}, nil
	}
	return seedRange{}, usageError{"give --seed N or --seeds A-B"}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
