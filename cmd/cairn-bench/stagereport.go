package main

import (
	"fmt"
	"io"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// stageChain is the failover's path to the first new confirmed publish,
// stage by stage: each stage runs from one mark to the next. Their sum
// over a trial that logged every mark is the time to that publish.
var stageChain = []struct {
	label    string
	from, to int
}{
	{"fault -> owner confirmed down", markKill, markConfirm},
	{"confirmed down -> recovery planned by the leader", markConfirm, markPlan},
	{"planned -> plan applied by the candidate", markPlan, markCandidate},
	{"plan applied -> recovery started", markCandidate, markStart},
	{"recovery started -> new owner admits publishes", markStart, markAdmit},
	{"admits publishes -> first new confirmed publish", markAdmit, markPublish},
}

// fine prints a duration in milliseconds to a tenth: stages are short,
// and whole milliseconds would round most of them away.
func fine(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// stageRow prints one row of a stage table: the distribution of ds.
func stageRow(w io.Writer, label string, ds []time.Duration) {
	d := latency.Summarize(ds)
	if d.N == 0 {
		fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", label, "-", "-", "-", 0)
		return
	}
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", label, fine(d.Median), fine(d.P95), fine(d.Max), d.N)
}

// stageReport prints the failover's breakdown over the trials: when each
// logged event first came after the fault, how long each stage of the
// chain took (over the trials that logged both its ends), and how long
// each recovery stage took by the recovery's own account.
func stageReport(w io.Writer, results []trialResult, fault string) {
	fmt.Fprintf(w, "\nstages, from the survivors' debug logs (wall clock to the millisecond; each over the trials that logged it)\n")
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7s\n", "from the "+fault+" to the first", "median", "p95", "max", "trials")
	for i := markReset; i < markPublish; i++ {
		var ds []time.Duration
		for _, res := range results {
			if res.stages.seen[i] {
				ds = append(ds, res.stages.mark[i])
			}
		}
		stageRow(w, markEvents[i], ds)
	}
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7s\n", "stage", "median", "p95", "max", "trials")
	for _, s := range stageChain {
		var ds []time.Duration
		for _, res := range results {
			st := res.stages
			if st.seen[s.from] && st.seen[s.to] {
				ds = append(ds, st.mark[s.to]-st.mark[s.from])
			}
		}
		stageRow(w, s.label, ds)
	}
	recoveryStages(w, results)
}

// recoveryStages prints each recovery stage by the name its
// recovery.stage events give, in the order they were first logged, so
// that a stage added to the recovery later shows up without a change
// here; then the whole attempt as recovery.done reports it.
func recoveryStages(w io.Writer, results []trialResult) {
	var names []string
	byName := map[string][]time.Duration{}
	var totals []time.Duration
	attempts := 0
	for _, res := range results {
		for _, s := range res.stages.recovery {
			if _, ok := byName[s.name]; !ok {
				names = append(names, s.name)
			}
			byName[s.name] = append(byName[s.name], s.took)
		}
		if res.stages.totalSeen {
			totals = append(totals, res.stages.total)
		}
		attempts += res.stages.attempts
	}
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7s\n", "recovery, as its events report it (microseconds)", "median", "p95", "max", "trials")
	for _, name := range names {
		stageRow(w, "  recovery.stage "+name, byName[name])
	}
	stageRow(w, "  the whole attempt (recovery.done)", totals)
	fmt.Fprintf(w, "recovery attempts started: %d in %d trials\n", attempts, len(results))
}
