package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// TestReassignCountsSumPerModeAndMerge checks that the unprovoked
// reassignments of a sweep add up per detection mode, name their seeds in
// order, and that counting two halves and merging them gives the same
// counts as counting the whole.
func TestReassignCountsSumPerModeAndMerge(t *testing.T) {
	type seed struct {
		n      uint64
		start  uint8
		byMode map[string]modeReassignments
	}
	hb, eager := detectionName(node.DetectHeartbeat), detectionName(node.DetectEager)
	seeds := []seed{
		{1, node.DetectHeartbeat, map[string]modeReassignments{hb: {4, 0}}},
		{2, node.DetectEager, map[string]modeReassignments{eager: {3, 2}}},
		{3, 0, map[string]modeReassignments{hb: {1, 0}}},
		{4, node.DetectEager, map[string]modeReassignments{eager: {9, 5}}},
		// Started in heartbeat, switched to eager mid-run: its unprovoked
		// reassignment counts under eager, its seed under heartbeat.
		{5, node.DetectHeartbeat, map[string]modeReassignments{hb: {2, 0}, eager: {1, 1}}},
		{6, node.DetectEager, nil},
		{7, node.DetectHeartbeat, map[string]modeReassignments{hb: {3, 1}}},
	}
	whole, first, second := make(reassignCounts), make(reassignCounts), make(reassignCounts)
	for i, s := range seeds {
		whole.addSeed(s.n, s.start, s.byMode)
		half := first
		if i%2 == 1 {
			half = second // interleaved, so the merge must sort the seeds
		}
		half.addSeed(s.n, s.start, s.byMode)
	}
	first.merge(second)
	if !reflect.DeepEqual(whole, first) {
		t.Fatalf("merged halves differ from the whole:\n%+v\n%+v", first, whole)
	}
	want := "unprovoked-reassignments=9 (eager: 8 of 13 reassignments, in 3 of 3 seeds; heartbeat: 1 of 10 reassignments, in 1 of 4 seeds)"
	if got := whole.text(); got != want {
		t.Fatalf("text\n  %s\nwant\n  %s", got, want)
	}
	if got := whole.seedsText(2); got != "unprovoked reassignments, seed(count): eager: 2(2) 4(5) +1 more; heartbeat: 7(1)" {
		t.Fatalf("seeds text %q", got)
	}
	if got := make(reassignCounts).seedsText(10); got != "" {
		t.Fatalf("seeds text with none: %q", got)
	}
	var sum summary
	sum.reassign = whole
	var b strings.Builder
	sum.print(&b, 0)
	if !strings.Contains(b.String(), " failovers=0 "+want+" safety-violations=0 ") {
		t.Fatalf("summary line does not carry the count:\n%s", b.String())
	}
}

// TestReassignmentsByModeUsesTheModeInForce checks that a run's
// reassignments count under the detection mode each was planned in.
func TestReassignmentsByModeUsesTheModeInForce(t *testing.T) {
	h := &sim.History{Reassignments: []sim.Reassignment{
		{Mode: node.DetectHeartbeat, Cause: "owner down"}, {Mode: node.DetectHeartbeat},
		{Mode: node.DetectEager}, {Mode: node.DetectEager, Cause: "pause 1s before"},
	}}
	want := map[string]modeReassignments{"heartbeat": {2, 1}, "eager": {2, 1}}
	if got := reassignmentsByMode(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("by mode %+v, want %+v", got, want)
	}
	if got := reassignmentsByMode(nil); got != nil {
		t.Fatalf("a run without a history counts %+v", got)
	}
}
