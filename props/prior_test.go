package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// laggingCandidateScenario stages the one case where a replacement's
// seal evidence must come from the prior replica set. On five nodes, the
// owner O stops reaching follower A (one way, so A stays healthy in the
// metadata's eyes and lags), then follower B dies: the records O and B
// confirmed last are on no other node. O dies for good just as B has been
// down for ReplaceAfter, so the leader's plan both replaces B with a
// newcomer and makes the lagging A the candidate. A's seal quorum must
// come from {O, A, B}: it waits until O or B returns. Two rules keep the
// newcomer's empty witness from counting: seal evidence comes from the
// prior set, and a replica prepared for a queue that already has a
// history is suspect. Either suffices here; with both removed, A recovers
// its short history and confirmed message p1.20 is lost (checked by
// mutation on seed 1's workload, before the generator's draws changed).
//
// The staging depends on when the owner dies relative to B's
// ReplaceAfter, which shifts whenever boot or detection timing changes, so
// the test tries the owner's death at several instants: every run must
// pass every checker, and at least one must stage the case. It runs on
// seed 11's workload, whose runs from 5.4 s to 5.65 s stage it. Seeds
// move in and out of staging it: on seed 2's, used until new queues
// became active sooner (a replica records epoch 1 when it is prepared),
// the queue now activates just before the one-way cut, A leads the
// metadata and confirms the owner it cannot hear from down long before B
// may be replaced, and the case never arises; seeds 1, 4, 5, 6, 7, 10
// and 11 of 1-12 stage it at some instant between 4 and 7 s.
func laggingCandidateScenario(ownerDies time.Duration) sim.Scenario {
	ns := NamedScenario{Name: "lagging-candidate", Nodes: 5, Build: func(owner int, others []int) []sim.Fault {
		a, b := others[0], others[1]
		return []sim.Fault{
			{At: 1500 * time.Millisecond, Kind: sim.FaultOneWay, Node: owner, Peer: a, Length: 6 * time.Second},
			{At: 2500 * time.Millisecond, Kind: sim.FaultCrash, Node: b, Length: 10 * time.Second},
			{At: ownerDies, Kind: sim.FaultCrash, Node: owner, Length: 10 * time.Second},
		}
	}, Expect: []string{expect(event.MetaPlanReplace), expect(event.MetaReplicaReplaced)}}
	return ns.Scenario(11)
}

func TestReplacementSealEvidenceComesFromThePriorSet(t *testing.T) {
	staged := 0
	for ownerDies := 5300 * time.Millisecond; ownerDies <= 6100*time.Millisecond; ownerDies += 50 * time.Millisecond {
		var trace strings.Builder
		rep := RunQueue(laggingCandidateScenario(ownerDies), &trace)
		for _, v := range rep.Violations {
			t.Errorf("owner dies at %v: %s", ownerDies, v)
		}
		if stagesLaggingCandidate(trace.String()) {
			staged++
		}
	}
	if staged == 0 {
		t.Fatal("no run's replacement plan for q0 named a candidate other than the owner; retune the fault times")
	}
}

// stagesLaggingCandidate reports whether the plan that replaced B named a
// candidate other than the dead owner: without it the run tests nothing.
func stagesLaggingCandidate(trace string) bool {
	lines := strings.Split(trace, "\n")
	for i, l := range lines {
		if plan := emitted(l); plan.Name == event.MetaPlanReplace && plan.Queue() == "q0" && i+1 < len(lines) {
			next := emitted(lines[i+1])
			if next.Name == event.MetaPlanRecovery && next.Queue() == "q0" && next.FromNode() != next.ToNode() {
				return true
			}
		}
	}
	return false
}

// emitted reads back the node event a trace line records, or returns the
// zero Event for a line of another kind.
func emitted(line string) event.Event {
	_, text, ok := strings.Cut(line, " emit ")
	if !ok {
		return event.Event{}
	}
	return event.Parse(text)
}
