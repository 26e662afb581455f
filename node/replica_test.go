package node

import "testing"

// A replica knows the epoch of an entry only from its epoch runs: with
// none (a log compacted past its cut, read back after a restart), no
// entry past the origin has a known epoch, and it says so rather than
// looking for a run that is not there.
func TestEpochKnownOnlyWithinTheRuns(t *testing.T) {
	r := &replica{}
	if !r.epochKnown(0) {
		t.Fatal("the origin's epoch is always known")
	}
	if r.epochKnown(5) {
		t.Fatal("with no epoch runs, entry 5's epoch was taken as known")
	}
	r.runs = []epochRun{{start: 4, epoch: 2}}
	if r.epochKnown(3) || !r.epochKnown(4) || !r.epochKnown(9) {
		t.Fatalf("runs from 4: known at 3 %t, 4 %t, 9 %t; want false, true, true", r.epochKnown(3), r.epochKnown(4), r.epochKnown(9))
	}
}
