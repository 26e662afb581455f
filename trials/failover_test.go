package trials

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
)

// Killing a queue's owner for good hands the queue to a survivor: every
// trial sees suspicion, one recovery, a delivery to a fresh subscriber and
// a confirmed publish, in that order of cause, and no checker objects.
func TestFailoverTrialsComplete(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		for _, c := range []FailoverCase{{}, {Backlog: 2000}, {WithLeader: true}} {
			tr := RunFailoverTrial(seed, c, node.DetectHeartbeat)
			if len(tr.Violations) > 0 {
				t.Fatalf("seed %d %+v: %s", seed, c, tr.Violations[0])
			}
			if tr.Unrecoverable {
				continue // the kill took two replicas; nothing to measure
			}
			if !tr.Complete {
				t.Fatalf("seed %d %+v: trial incomplete: %+v", seed, c, tr)
			}
			if tr.Failovers-tr.Replacements != 1 {
				t.Errorf("seed %d %+v: %d recoveries of which %d replacements, want exactly one other", seed, c, tr.Failovers, tr.Replacements)
			}
			if c.WithLeader && tr.Replacements != 1 {
				t.Errorf("seed %d %+v: the owner stayed dead on five nodes, but %d replacements", seed, c, tr.Replacements)
			}
			// Nothing can be delivered or confirmed before a survivor
			// holds the queue, and nothing is recovered before suspicion.
			// An owner admits publishes once activated, and delivers
			// once it outwaited the old owner's quorum.
			if tr.Admission < tr.Suspicion || tr.Activation < tr.Admission || tr.FirstDelivery < tr.Activation || tr.FirstPublish < tr.Admission {
				t.Errorf("seed %d %+v: instants out of causal order: %+v", seed, c, tr)
			}
			// The detection and recovery timeouts add up to well under
			// five seconds; a trial beyond that has stalled somewhere.
			if tr.FirstPublish > 5*time.Second || tr.FirstDelivery > 5*time.Second {
				t.Errorf("seed %d %+v: service came back only after %v / %v", seed, c, tr.FirstDelivery, tr.FirstPublish)
			}
		}
	}
}

// A kill that takes two of the queue's three replicas leaves no seal
// quorum; the trial must say so rather than measure it.
func TestFailoverTrialClassifiesDoubleReplicaLoss(t *testing.T) {
	seen := false
	for seed := uint64(1); seed <= 10 && !seen; seed++ {
		tr := RunFailoverTrial(seed, FailoverCase{WithLeader: true}, node.DetectHeartbeat)
		if len(tr.Violations) > 0 {
			t.Fatalf("seed %d: %s", seed, tr.Violations[0])
		}
		seen = tr.Unrecoverable
	}
	if !seen {
		t.Fatal("no seed in 1-10 lost two replicas; the classification never fires")
	}
}

// A queue that has carried a long settled history fails over without
// replaying it: with checkpoints, the new owner starts from the state its
// last build kept and replays only the records after that cut, and every
// surviving replica had already dropped most of the history. Without
// checkpoints the same trial replays the whole log, which is what makes
// the first half a measurement and not a constant.
func TestALongSettledHistoryIsNotReplayed(t *testing.T) {
	const settled, cadence = 20000, 2000
	for seed := uint64(1); seed <= 2; seed++ {
		with := RunFailoverTrial(seed, FailoverCase{Settled: settled, Checkpoint: cadence}, node.DetectHeartbeat)
		without := RunFailoverTrial(seed, FailoverCase{Settled: settled}, node.DetectHeartbeat)
		for _, tr := range []FailoverTrial{with, without} {
			if len(tr.Violations) > 0 {
				t.Fatalf("seed %d: %s", seed, tr.Violations[0])
			}
			if !tr.Complete || tr.Failovers != 1 {
				t.Fatalf("seed %d: trial incomplete or not one recovery: %+v", seed, tr)
			}
		}
		// A cut can trail the log by a cadence (scaled by up to 1.1) plus
		// what was confirmed while it was certified.
		if with.Rebuilt > 2*cadence {
			t.Errorf("seed %d: with checkpoints every %d records the new owner replayed %d", seed, cadence, with.Rebuilt)
		}
		if with.Compacted < settled*4/5 {
			t.Errorf("seed %d: the survivors had dropped their logs only up to %d of a %d-message history", seed, with.Compacted, settled)
		}
		if without.Rebuilt < settled || without.Compacted != 0 {
			t.Errorf("seed %d: without checkpoints the new owner replayed %d records and the survivors dropped up to %d; want the whole history and nothing",
				seed, without.Rebuilt, without.Compacted)
		}
	}
}
