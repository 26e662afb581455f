package main

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// phaseNames describe each phase as the report prints it.
var phaseNames = map[string]string{
	"move": "planned moves (MoveOwner)",
	"kill": "failovers of the owner",
	"roll": "rolling restarts (SIGTERM, shutdown handoff, restart; each node in turn)",
}

// handoffReport prints each phase's distributions, the failover's median
// gap as a multiple of a move's, and a summary line per phase that
// parseSummary reads back; it returns the exit code. A lost message is
// the worst outcome; a move that failed a publish, left one unknown or
// did not complete comes next, and so does a roll's. A failover may fail
// publishes: that is what it is compared against.
func handoffReport(w io.Writer, baseline time.Duration, phases ...phaseResult) int {
	code := exitOK
	fmt.Fprintf(w, "baseline: longest gap between confirmations in 1s of traffic before the first trial: %s\n", ms(baseline))
	gaps := map[string]latency.Summary{}
	for _, p := range phases {
		if p.trials == 0 {
			continue
		}
		var gs, calls, lats []time.Duration
		for _, o := range p.outcomes {
			gs, calls, lats = append(gs, o.gap), append(calls, o.call), append(lats, o.latency)
		}
		g, c, l := latency.Summarize(gs), latency.Summarize(calls), latency.Summarize(lats)
		gaps[p.name] = g
		fmt.Fprintf(w, "%s: %d of %d completed\n", cmp.Or(p.label, phaseNames[p.name]), len(p.outcomes), p.trials)
		fmt.Fprintf(w, "  unavailability gap: median %s, p95 %s, max %s\n", ms(g.Median), ms(g.P95), ms(g.Max))
		if p.name == "move" {
			fmt.Fprintf(w, "  MoveOwner call:     median %s, p95 %s, max %s\n", ms(c.Median), ms(c.P95), ms(c.Max))
		}
		rollFields := ""
		if p.name == "roll" {
			fmt.Fprintf(w, "  max publish latency: median %s, p95 %s, max %s\n", ms(l.Median), ms(l.P95), ms(l.Max))
			rollFields = fmt.Sprintf(" latency_median_ms=%d latency_p95_ms=%d latency_max_ms=%d", msecs(l.Median), msecs(l.P95), msecs(l.Max))
		}
		fmt.Fprintf(w, "  publishes: %d confirmed, %d failed, %d unknown; deliveries: %d duplicate; %d confirmed never delivered\n",
			p.confirmed, p.failed, p.unknown, p.duplicates, p.lost)
		for _, f := range p.failures {
			fmt.Fprintf(w, "  incomplete: %s\n", f)
		}
		fmt.Fprintf(w, "summary phase=%s trials=%d completed=%d gap_median_ms=%d gap_p95_ms=%d gap_max_ms=%d "+
			"call_median_ms=%d call_p95_ms=%d call_max_ms=%d confirmed=%d failed=%d unknown=%d duplicates=%d lost=%d%s\n",
			p.name, p.trials, len(p.outcomes), msecs(g.Median), msecs(g.P95), msecs(g.Max),
			msecs(c.Median), msecs(c.P95), msecs(c.Max), p.confirmed, p.failed, p.unknown, p.duplicates, p.lost, rollFields)
		code = max(code, phaseCode(p))
	}
	if m, k := gaps["move"], gaps["kill"]; m.N > 0 && k.N > 0 && m.Median > 0 {
		fmt.Fprintf(w, "failover / planned move: median gap %.1fx, p95 %.1fx\n",
			float64(k.Median)/float64(m.Median), float64(k.P95)/float64(max(m.P95, 1)))
	}
	return code
}

// msecs is d in whole milliseconds, rounded as ms rounds them.
func msecs(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// phaseCode is the exit code a phase calls for; exitIncomplete ranks
// above exitLost numerically, so it is mapped explicitly.
func phaseCode(p phaseResult) int {
	switch {
	case p.lost > 0:
		return exitLost
	case len(p.failures) > 0, p.name != "kill" && p.failed+p.unknown > 0:
		return exitIncomplete
	}
	return exitOK
}

// parseSummary reads the summary line of a phase back from a report:
// its key=value fields as integers (phase is left out).
func parseSummary(report, phase string) (map[string]int, error) {
	for _, line := range strings.Split(report, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "summary" || fields[1] != "phase="+phase {
			continue
		}
		out := map[string]int{}
		for _, f := range fields[2:] {
			k, v, ok := strings.Cut(f, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return nil, fmt.Errorf("summary field %q is not key=integer", f)
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("no summary line for phase %s", phase)
}
