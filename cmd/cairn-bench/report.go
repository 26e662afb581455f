package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// ms prints a duration in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// summary describes one trial in a line.
func (res trialResult) summary() string {
	var b strings.Builder
	if res.killed != 0 {
		led := ""
		if res.ownerLed {
			led = " (it led the metadata group)"
		}
		if res.next != 0 {
			fmt.Fprintf(&b, "killed n%d%s, n%d took over;", res.killed, led, res.next)
		} else {
			fmt.Fprintf(&b, "killed n%d%s, no node took over;", res.killed, led)
		}
	}
	short := [numInstants]string{"detection", "activation", "status", "delivery", "publish"}
	for i := range numInstants {
		if res.seen[i] {
			fmt.Fprintf(&b, " %s %s", short[i], ms(res.at[i]))
		} else {
			fmt.Fprintf(&b, " %s -", short[i])
		}
	}
	fmt.Fprintf(&b, "; %d confirmed, %d unknown, %d lost", res.confirmed, res.unknown, res.lost)
	if res.failure != "" {
		fmt.Fprintf(&b, "; FAILED: %s", res.failure)
	}
	if res.dir != "" {
		fmt.Fprintf(&b, "; kept in %s", res.dir)
	}
	return b.String()
}

// report prints the distributions and the failures over the trials, and
// returns the exit code they call for.
func report(w io.Writer, results []trialResult) int {
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7s\n", "from the SIGKILL to", "median", "p95", "max", "trials")
	for i := range numInstants {
		var ds []time.Duration
		for _, res := range results {
			if res.seen[i] {
				ds = append(ds, res.at[i])
			}
		}
		d := latency.Summarize(ds)
		if d.N == 0 {
			fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", instantNames[i], "-", "-", "-", 0)
			continue
		}
		fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", instantNames[i], ms(d.Median), ms(d.P95), ms(d.Max), d.N)
	}
	failed, lostTrials, lost, confirmed, unknown, led := 0, 0, 0, 0, 0, 0
	for _, res := range results {
		if res.failure != "" {
			failed++
		}
		if res.lost > 0 {
			lostTrials++
		}
		lost += res.lost
		confirmed += res.confirmed
		unknown += res.unknown
		if res.ownerLed {
			led++
		}
	}
	fmt.Fprintf(w, "failures: %d of %d trials did not complete within the timeout\n", failed, len(results))
	fmt.Fprintf(w, "RPO: %d confirmed messages lost, in %d trials (%d confirmed publishes checked; %d unknown outcomes, not checked)\n",
		lost, lostTrials, confirmed, unknown)
	fmt.Fprintf(w, "the killed owner also led the metadata group in %d of %d trials\n", led, len(results))
	for i, res := range results {
		if res.failure != "" || res.lost > 0 {
			fmt.Fprintf(w, "  trial %d: %s\n", i+1, res.summary())
		}
	}
	switch {
	case lost > 0:
		return exitLost
	case failed > 0:
		return exitIncomplete
	}
	return exitOK
}
