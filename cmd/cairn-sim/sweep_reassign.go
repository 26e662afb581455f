package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// reassignTally counts, for one failure detection mode, the
// reassignments the metadata planned while that mode was in force and
// those of them that nothing but the network's noise provoked (see sim's
// reassign.go for the ground truth they are judged by). A set-detection
// fault can switch a seed's mode mid-run, so a reassignment counts under
// the mode in force when it was planned; Seeds counts the seeds that
// started in the mode.
type reassignTally struct {
	Seeds         int `json:"seeds"`
	Reassignments int `json:"reassignments"`
	Unprovoked    int `json:"unprovoked"`
	// UnprovokedSeeds lists, ascending, the seeds with an unprovoked
	// reassignment in this mode and how many each had, so they can be
	// replayed.
	UnprovokedSeeds []seedCount `json:"unprovoked_seeds"`
}

// modeReassignments counts one seed's reassignments planned while one
// detection mode was in force, and the unprovoked ones among them.
type modeReassignments struct {
	Total      int `json:"total"`
	Unprovoked int `json:"unprovoked"`
}

// seedCount is how many times something happened in one seed.
type seedCount struct {
	Seed  uint64 `json:"seed"`
	Count int    `json:"count"`
}

// reassignCounts holds one tally per detection mode, by mode name. It
// holds sums and a sorted list only, so the counts of disjoint seed
// ranges merge into the counts of their union.
type reassignCounts map[string]reassignTally

// detectionName names a scenario's detection mode; zero is the node's
// default, heartbeat.
func detectionName(mode uint8) string {
	if mode == node.DetectEager {
		return "eager"
	}
	return "heartbeat"
}

// addSeed counts one seed that started in mode start, with its
// reassignments by the mode in force when each was planned.
func (c reassignCounts) addSeed(seed uint64, start uint8, byMode map[string]modeReassignments) {
	t := c[detectionName(start)]
	t.Seeds++
	c[detectionName(start)] = t
	for _, mode := range sortedKeys(byMode) {
		t, n := c[mode], byMode[mode]
		t.Reassignments += n.Total
		t.Unprovoked += n.Unprovoked
		if n.Unprovoked > 0 {
			t.UnprovokedSeeds = append(t.UnprovokedSeeds, seedCount{seed, n.Unprovoked})
			slices.SortFunc(t.UnprovokedSeeds, func(a, b seedCount) int { return cmp.Compare(a.Seed, b.Seed) })
		}
		c[mode] = t
	}
}

// reassignmentsByMode counts a run's reassignments by the detection mode
// in force when each was planned; nil for a run without a history (one
// that crashed the simulator) or without reassignments.
func reassignmentsByMode(h *sim.History) map[string]modeReassignments {
	if h == nil || len(h.Reassignments) == 0 {
		return nil
	}
	out := make(map[string]modeReassignments)
	for _, r := range h.Reassignments {
		n := out[detectionName(r.Mode)]
		n.Total++
		if r.Unprovoked() {
			n.Unprovoked++
		}
		out[detectionName(r.Mode)] = n
	}
	return out
}

// merge adds the counts of a disjoint seed range.
func (c reassignCounts) merge(o reassignCounts) {
	for _, mode := range sortedKeys(o) {
		t, u := c[mode], o[mode]
		t.Seeds += u.Seeds
		t.Reassignments += u.Reassignments
		t.Unprovoked += u.Unprovoked
		t.UnprovokedSeeds = append(t.UnprovokedSeeds, u.UnprovokedSeeds...)
		slices.SortFunc(t.UnprovokedSeeds, func(a, b seedCount) int { return cmp.Compare(a.Seed, b.Seed) })
		c[mode] = t
	}
}

// text is the summary line's part: the unprovoked reassignments in all,
// then per mode how many, in how many of its seeds, out of how many
// reassignments. Modes no seed started in are left out.
func (c reassignCounts) text() string {
	total := 0
	var parts []string
	for _, mode := range sortedKeys(c) {
		t := c[mode]
		total += t.Unprovoked
		parts = append(parts, fmt.Sprintf("%s: %d of %d reassignments, in %d of %d seeds", mode, t.Unprovoked,
			t.Reassignments, len(t.UnprovokedSeeds), t.Seeds))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("unprovoked-reassignments=%d", total)
	}
	return fmt.Sprintf("unprovoked-reassignments=%d (%s)", total, strings.Join(parts, "; "))
}

// seedsText lists, per mode, the first limit seeds with an unprovoked
// reassignment, for the line under the summary; "" if there are none.
func (c reassignCounts) seedsText(limit int) string {
	var parts []string
	for _, mode := range sortedKeys(c) {
		seeds := c[mode].UnprovokedSeeds
		if len(seeds) == 0 {
			continue
		}
		var list []string
		for _, s := range seeds[:min(limit, len(seeds))] {
			list = append(list, fmt.Sprintf("%d(%d)", s.Seed, s.Count))
		}
		if more := len(seeds) - limit; more > 0 {
			list = append(list, fmt.Sprintf("+%d more", more))
		}
		parts = append(parts, mode+": "+strings.Join(list, " "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "unprovoked reassignments, seed(count): " + strings.Join(parts, "; ")
}
