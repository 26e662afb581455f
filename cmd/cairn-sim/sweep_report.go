package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cairnmq/cairn/sim"
)

// printReport prints the one-line summary, then the coverage: the
// rarest boundaries with the faults seen near them, every probe's tally,
// and last what the seeds never reached.
func (s *sweepSummary) printReport(w io.Writer, rows int) {
	sum := s.toSummary()
	sum.print(w, s.Wall)
	s.printMatrix(w, rows)
	s.printProbes(w)
}

// printMatrix prints the boundaries hit in the fewest seeds first: the
// common ones are near every fault anyway, and a rare one is where a
// sweep's coverage is thin.
func (s *sweepSummary) printMatrix(w io.Writer, rows int) {
	names := sortedKeys(s.Boundaries)
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(s.Boundaries[a].Seeds, s.Boundaries[b].Seeds) })
	shown := min(rows, len(names))
	fmt.Fprintf(w, "coverage: %d boundaries hit; near = fault kinds scheduled at most %v before a hit, in seeds (the %d rarest; all with --json FILE)\n",
		len(names), sim.NearWindow, shown)
	if shown > 0 {
		fmt.Fprintf(w, "  %-32s %6s %9s  %s\n", "boundary", "seeds", "hits", "near")
	}
	for _, name := range names[:shown] {
		b := s.Boundaries[name]
		fmt.Fprintf(w, "  %-32s %6d %9d  %s\n", name, b.Seeds, b.Hits, nearText(b.Near, 4))
	}
	var missed []string
	for _, name := range sim.QueueBoundaries {
		if s.Boundaries[name] == nil {
			missed = append(missed, name)
		}
	}
	if len(missed) > 0 && s.Seeds > 0 {
		fmt.Fprintf(w, "  crash-at targets never hit: %s\n", strings.Join(missed, ", "))
	}
	var unscheduled []string
	for _, k := range sim.FaultKinds() {
		if s.Faults[k.String()] == 0 {
			unscheduled = append(unscheduled, k.String())
		}
	}
	if len(unscheduled) > 0 && s.Seeds > 0 {
		fmt.Fprintf(w, "  fault kinds no seed scheduled: %s\n", strings.Join(unscheduled, ", "))
	}
}

// nearText lists the fault kinds seen near a boundary, most seeds first,
// up to top of them, then the seeds with a hit near no fault.
func nearText(near map[string]tally, top int) string {
	kinds := sortedKeys(near)
	kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == sim.NoFault })
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(near[b].Seeds, near[a].Seeds) })
	var parts []string
	for _, k := range kinds[:min(top, len(kinds))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, near[k].Seeds))
	}
	if more := len(kinds) - top; more > 0 {
		parts = append(parts, fmt.Sprintf("+%d more", more))
	}
	return strings.Join(append(parts, fmt.Sprintf("%s %d", sim.NoFault, near[sim.NoFault].Seeds)), ", ")
}

// printProbes prints each probe's seeds and total count, two to a line,
// and ends with the probes no seed reached.
func (s *sweepSummary) printProbes(w io.Writer) {
	fmt.Fprintf(w, "probes (seeds that reached it / times in all):\n")
	var never, cells []string
	for _, p := range sim.Probes {
		t := s.Probes[p.Name]
		if t.Seeds == 0 {
			never = append(never, p.Name)
		}
		cells = append(cells, fmt.Sprintf("%-26s %6d / %-7d", p.Name, t.Seeds, t.Count))
	}
	for i := 0; i < len(cells); i += 2 {
		line := strings.Join(cells[i:min(i+2, len(cells))], "   ")
		fmt.Fprintf(w, "  %s\n", strings.TrimRight(line, " "))
	}
	if len(never) == 0 {
		fmt.Fprintf(w, "every probe was reached\n")
		return
	}
	fmt.Fprintf(w, "never reached (%d of %d probes): %s\n", len(never), len(sim.Probes), strings.Join(never, ", "))
}
