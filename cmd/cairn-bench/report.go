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
	if res.queue != "" && res.queue != benchQueue {
		fmt.Fprintf(&b, "queue %s (%d created); ", res.queue, res.queues)
	}
	if res.killed != 0 {
		led := ""
		if res.ownerLed {
			led = " (it led the metadata group)"
		}
		if res.next != 0 {
			fmt.Fprintf(&b, "failed n%d%s, n%d took over;", res.killed, led, res.next)
		} else {
			fmt.Fprintf(&b, "failed n%d%s, no node took over;", res.killed, led)
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
	if s := res.stale.summary(); s != "" {
		fmt.Fprintf(&b, "; %s", s)
	}
	if res.failure != "" {
		fmt.Fprintf(&b, "; FAILED: %s", res.failure)
	}
	if res.dir != "" {
		fmt.Fprintf(&b, "; kept in %s", res.dir)
	}
	return b.String()
}

// report prints the distributions and the failures over the trials, and
// returns the exit code they call for. fault names what was done to the
// owner (SIGKILL, SIGSTOP).
func report(w io.Writer, results []trialResult, fault string) int {
	fmt.Fprintf(w, "%-72s %10s %10s %10s %7s\n", "from the "+fault+" to", "median", "p95", "max", "trials")
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
	t := tally(results)
	fmt.Fprintf(w, "failures: %d of %d trials did not complete within the timeout\n", t.failed, len(results))
	fmt.Fprintf(w, "RPO: %d confirmed messages lost, in %d trials (%d confirmed publishes checked; %d unknown outcomes, not checked)\n",
		t.lost, t.lostTrials, t.confirmed, t.unknown)
	if t.stale.sent > 0 {
		fmt.Fprintf(w, "stopped owner: %d publishes sent to it after the stop, %d confirmed (must be 0), %d refused, %d unanswered %v after the SIGCONT\n",
			t.stale.sent, t.stale.confirmed, t.stale.refused, t.stale.unanswered, staleAnswerWait)
	}
	fmt.Fprintf(w, "the failed owner also led the metadata group in %d of %d trials\n", t.led, len(results))
	if t.queues > len(results) {
		fmt.Fprintf(w, "queues created to find an owner leading the metadata group: %d in %d trials\n", t.queues, len(results))
	}
	for i, res := range results {
		if res.failure != "" || res.lost > 0 || res.stale.confirmed > 0 {
			fmt.Fprintf(w, "  trial %d: %s\n", i+1, res.summary())
		}
	}
	switch {
	case t.lost > 0 || t.stale.confirmed > 0:
		return exitLost
	case t.failed > 0:
		return exitIncomplete
	}
	return exitOK
}

// trialTally adds up the trials' outcomes.
type trialTally struct {
	failed, lostTrials, lost, confirmed, unknown, led, queues int
	stale                                                     staleOutcome
}

// tally adds up results.
func tally(results []trialResult) trialTally {
	var t trialTally
	for _, res := range results {
		if res.failure != "" {
			t.failed++
		}
		if res.lost > 0 {
			t.lostTrials++
		}
		t.lost += res.lost
		t.confirmed += res.confirmed
		t.unknown += res.unknown
		t.queues += res.queues
		if res.ownerLed {
			t.led++
		}
		t.stale.sent += res.stale.sent
		t.stale.confirmed += res.stale.confirmed
		t.stale.refused += res.stale.refused
		t.stale.unanswered += res.stale.unanswered
	}
	return t
}
