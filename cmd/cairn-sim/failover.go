package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/cairnmq/cairn/latency"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/trials"
)

// cmdFailoverReport kills a queue's owner once per seed, per case, and
// reports the virtual time from the kill to each instant that matters.
func cmdFailoverReport(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("failover-report", stderr)
	seeds := fs.String("seeds", "1-30", "one trial per seed, A-B (30 or more for a p95); a case whose kill can\n"+
		"take two of the queue's replicas skips those seeds and goes on past B for as many trials")
	backlogs := fs.String("backlogs", "0,10000", "comma-separated backlogs of unconsumed messages before the kill")
	settled := fs.String("settled", "", "comma-separated settled histories: messages published and acked before\n"+
		"the kill, a case each beside the backlogs (with --backlogs \"\", instead of them)")
	checkpoint := fs.Int("checkpoint-records", 0, "checkpoint every N confirmed records (0: checkpoints off)")
	detection := fs.String("detection", "heartbeat", "failure detection mode: heartbeat or eager")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "trials run in parallel")
	losses := fs.String("cases", "owner,owner+leader", "which losses to measure: owner, owner+leader, or both")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	var ownerOnly, withLeader bool
	for _, l := range strings.Split(*losses, ",") {
		switch strings.TrimSpace(l) {
		case "owner":
			ownerOnly = true
		case "owner+leader":
			withLeader = true
		default:
			return 0, usageError{fmt.Sprintf("--cases: %q is not owner or owner+leader", l)}
		}
	}
	r, err := parseSeeds("", *seeds)
	if err != nil {
		return 0, err
	}
	mode := node.DetectHeartbeat
	switch *detection {
	case "heartbeat":
	case "eager":
		mode = node.DetectEager
	default:
		return 0, usageError{fmt.Sprintf("--detection %q: want heartbeat or eager", *detection)}
	}
	if *checkpoint < 0 {
		return 0, usageError{fmt.Sprintf("--checkpoint-records %d: want a count, or 0 for none", *checkpoint)}
	}
	var histories []trials.FailoverCase
	for _, list := range []struct {
		flag, text string
		set        func(*trials.FailoverCase, int)
	}{
		{"--backlogs", *backlogs, func(c *trials.FailoverCase, n int) { c.Backlog = n }},
		{"--settled", *settled, func(c *trials.FailoverCase, n int) { c.Settled = n }},
	} {
		if list.text == "" {
			continue
		}
		for _, b := range strings.Split(list.text, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(b))
			if err != nil || n < 0 {
				return 0, usageError{fmt.Sprintf("%s: %q is not a count", list.flag, b)}
			}
			c := trials.FailoverCase{Checkpoint: *checkpoint}
			list.set(&c, n)
			histories = append(histories, c)
		}
	}
	var cases []trials.FailoverCase
	for _, c := range histories {
		if ownerOnly {
			cases = append(cases, c)
		}
		if withLeader {
			c.WithLeader = true
			cases = append(cases, c)
		}
	}
	code := exitOK
	fmt.Fprintf(stdout, "virtual time from the kill, %s detection, %d trials per case from seed %d (median / p95 / max)\n",
		*detection, r.count(), r.first)
	for _, c := range cases {
		measured, skipped := failoverTrials(r.first, r.count(), c, mode, *workers)
		if reportCase(stdout, c, measured, skipped) {
			code = exitSafety
		}
	}
	return code, nil
}

// failoverTrials runs consecutive seeds until n trials measure the case,
// and returns them with the unrecoverable trials it passed over (those
// where the kill took two of the queue's replicas).
func failoverTrials(first uint64, n int, c trials.FailoverCase, mode uint8, workers int) (measured, skipped []trials.FailoverTrial) {
	for next := first; len(measured) < n; {
		batch := runTrials(next, n-len(measured), c, mode, workers)
		next += uint64(len(batch))
		for _, t := range batch {
			if t.Unrecoverable {
				skipped = append(skipped, t)
			} else {
				measured = append(measured, t)
			}
		}
	}
	return measured, skipped
}

// runTrials runs seeds first..first+count-1 in parallel, in seed order.
func runTrials(first uint64, count int, c trials.FailoverCase, mode uint8, workers int) []trials.FailoverTrial {
	out := make([]trials.FailoverTrial, count)
	var next atomic.Int64
	var wg conc.WaitGroup
	for range min(workers, count) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(out)) {
					return
				}
				out[i] = trials.RunFailoverTrial(first+uint64(i), c, mode)
			}
		})
	}
	wg.Wait()
	return out
}

// reportCase prints one case and reports whether a trial broke a promise.
func reportCase(w io.Writer, c trials.FailoverCase, measured, skipped []trials.FailoverTrial) bool {
	var sus, act, del, pub []time.Duration
	var stages [trials.StageCount][]time.Duration
	failed, extra, replacements, led, broken := 0, 0, 0, 0, false
	for _, t := range skipped {
		if len(t.Violations) > 0 {
			broken = true
			fmt.Fprintf(w, "  seed %d broke a promise: %s\n", t.Seed, t.Violations[0])
		}
	}
	for _, t := range measured {
		if len(t.Violations) > 0 {
			broken = true
			fmt.Fprintf(w, "  seed %d broke a promise: %s\n", t.Seed, t.Violations[0])
		}
		if !t.Complete {
			failed++
			continue
		}
		if t.OwnerLed {
			led++
		}
		sus, act, del, pub = append(sus, t.Suspicion), append(act, t.Activation), append(del, t.FirstDelivery), append(pub, t.FirstPublish)
		for i, d := range t.Stages {
			stages[i] = append(stages[i], d)
		}
		extra += max(0, t.Failovers-t.Replacements-1)
		replacements += t.Replacements
	}
	loss := "owner"
	if c.WithLeader {
		loss = "owner+metadata leader"
	}
	history := fmt.Sprintf("backlog %-7d", c.Backlog)
	if c.Settled > 0 {
		history = fmt.Sprintf("settled %-7d", c.Settled)
	}
	if c.Checkpoint > 0 {
		history += fmt.Sprintf(" checkpoint/%d", c.Checkpoint)
	}
	fmt.Fprintf(w, "%-22s %s suspicion %s | activation %s | first delivery %s | first confirmed publish %s | incomplete %d, extra reassignments %d, replacements %d, owner also led metadata in %d\n",
		loss, history, dist(sus), dist(act), dist(del), dist(pub), failed, extra, replacements, led)
	var parts []string
	for i, name := range trials.StageNames {
		parts = append(parts, name+" "+dist(stages[i]))
	}
	fmt.Fprintf(w, "%-22s stages to the first new confirmed publish: %s\n", "", strings.Join(parts, " | "))
	if c.Settled > 0 {
		var rebuilt, compacted []int
		for _, t := range measured {
			rebuilt, compacted = append(rebuilt, int(t.Rebuilt)), append(compacted, int(t.Compacted))
		}
		fmt.Fprintf(w, "%-22s records the new owner replayed %s | every surviving replica had dropped its log up to index %s at the kill\n",
			"", countDist(rebuilt), countDist(compacted))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "%-22s %d more seeds lost two of the queue's three replicas and were not measured (no promise broken)\n", "", len(skipped))
	}
	return broken
}

// countDist renders counts as min-max.
func countDist(ns []int) string {
	if len(ns) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d-%d", slices.Min(ns), slices.Max(ns))
}

func dist(ds []time.Duration) string {
	d := latency.Summarize(ds)
	r := func(x time.Duration) string { return x.Round(time.Millisecond).String() }
	return fmt.Sprintf("%s/%s/%s", r(d.Median), r(d.P95), r(d.Max))
}
