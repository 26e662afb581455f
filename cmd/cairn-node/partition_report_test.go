//go:build linux

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// partitionMeasure gathers one scenario's timings over its runs.
type partitionMeasure struct {
	name                                  string
	runs, failed, stopped                 int
	failover, firstConfirm, firstDelivery []time.Duration
	longestGap, confirmOverFailover       []time.Duration
	confirmGoalMet, gapGoalMet            int
}

// add records one run's timings; failed says the run failed a check,
// and a nil pr that it stopped before the end.
func (m *partitionMeasure) add(pr *partitionRun, failed bool) {
	m.runs++
	if failed {
		m.failed++
	}
	if pr == nil {
		m.stopped++
		return
	}
	pt := pr.times()
	if pt.hasFailover {
		m.failover = append(m.failover, pt.failover)
	}
	if pt.hasConfirm {
		m.firstConfirm = append(m.firstConfirm, pt.firstConfirm)
	}
	if pt.hasDelivery {
		m.firstDelivery = append(m.firstDelivery, pt.firstDelivery)
	}
	if pt.hasFailover && pt.hasConfirm {
		m.confirmOverFailover = append(m.confirmOverFailover, pt.firstConfirm-pt.failover)
	}
	m.longestGap = append(m.longestGap, pt.longestGap)
	if pt.confirmGoalMet() {
		m.confirmGoalMet++
	}
	if pt.longestGap <= longestGapGoal {
		m.gapGoalMet++
	}
}

// partitionTable renders every scenario's distributions, one line per
// timing: median, p95 and max by nearest rank, and how many runs had it.
func partitionTable(ms []partitionMeasure) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s: %d runs, %d failed a check (%d of them stopped before the end)\n", m.name, m.runs, m.failed, m.stopped)
		for _, row := range []struct {
			what string
			ds   []time.Duration
		}{
			{"failover (another node serving)", m.failover},
			{"first confirmed publish", m.firstConfirm},
			{"first confirm - failover", m.confirmOverFailover},
			{"first fresh delivery", m.firstDelivery},
			{"longest gap between confirmations", m.longestGap},
		} {
			s := latency.Summarize(row.ds)
			if s.N == 0 {
				fmt.Fprintf(&b, "  %-34s none\n", row.what)
				continue
			}
			fmt.Fprintf(&b, "  %-34s p50 %v  p95 %v  max %v  (%d runs)\n", row.what,
				s.Median.Round(time.Millisecond), s.P95.Round(time.Millisecond), s.Max.Round(time.Millisecond), s.N)
		}
		fmt.Fprintf(&b, "  goals: first confirm <= failover + %v in %d of %d runs with a failover; longest gap <= %v in %d of %d runs\n",
			confirmOverFailoverGoal, m.confirmGoalMet, len(m.confirmOverFailover), longestGapGoal, m.gapGoalMet, m.runs)
	}
	return b.String()
}
