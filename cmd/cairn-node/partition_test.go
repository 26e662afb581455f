//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"
)

// partitionRuns switches the suite to its measuring mode: each scenario
// runs this many times at full length and the suite prints the
// distribution of its timings. Zero, the default, runs each once, short
// enough for CI.
var partitionRuns = flag.Int("partition.runs", 0, "run each partition scenario this many times at full length and print p50/p95/max of its timings")

// partitionDetection is the failure detection the suite's clusters start
// with: heartbeat (the nodes' default) or eager.
var partitionDetection = flag.String("partition.detection", "heartbeat", "failure detection of the partition suite's clusters: heartbeat or eager")

// suiteLengths are how long a scenario keeps its partitions.
type suiteLengths struct {
	hold    time.Duration // least time a single cut lasts
	tail    time.Duration // time a cut lasts past the failover
	flapFor time.Duration // how long the flapping goes on
	flapOn  time.Duration
	flapOff time.Duration
}

// lengths are the CI lengths by default, the in measuring mode.
func lengths() suiteLengths {
	l := suiteLengths{hold: 3 * time.Second, tail: time.Second, flapFor: 8 * time.Second, flapOn: 2 * time.Second, flapOff: 2 * time.Second}
	if *partitionRuns > 0 {
		l.flapFor = 30 * time.Second
	}
	return l
}

// partitionScenario is one scenario of the suite.
type partitionScenario struct {
	name  string
	nodes int
	place placement
	act   func(sr *scenarioRun, l suiteLengths)
}

var partitionScenarios = []partitionScenario{
	{"OwnerCutFromPeers", 3, anyOwner, actCutOwner(cutPeers)},
	{"OwnerIsolated", 3, anyOwner, actCutOwner(cutAll)},
	{"OwnerDeafToPeers", 3, anyOwner, actCutOwner(cutPeersInbound)},
	{"OwnerMuteToPeers", 3, anyOwner, actCutOwner(cutPeersOutbound)},
	{"MetaLeaderIsolated", 3, ownerNotLeader, actIsolateLeader},
	{"OwnerLeaderIsolatedFiveNodes", 5, ownerLeader, actCutOwner(cutAll)},
	{"FlappingOwner", 3, anyOwner, actFlapOwner},
	{"CutDuringRecovery", 3, anyOwner, actCutDuringRecovery},
}

// TestPartition runs real cairn-node processes, each in a network
// namespace of its own, partitions them silently while a client in the
// test's namespace publishes 200 messages a second and a subscriber
// settles each delivery, and checks after healing: every confirmed
// publish is delivered (RPO 0), a cut-off owner confirmed nothing once
// cut, no message was delivered again after its settle was confirmed
// (other redeliveries are counted), the replicas converge, and no two
// nodes reported serving the queue in the same sampling of their
// status. It needs root, iproute2 and iptables, and skips without them.
func TestPartition(t *testing.T) {
	if err := labPrerequisites(); err != nil {
		t.Skipf("the partition suite needs network namespaces: %v", err)
	}
	if *partitionDetection != "heartbeat" && *partitionDetection != "eager" {
		t.Fatalf("-partition.detection %q: want heartbeat or eager", *partitionDetection)
	}
	bin := t.TempDir()
	buildBinaries(t, bin)
	runs := max(1, *partitionRuns)
	var measured []partitionMeasure
	for _, sc := range partitionScenarios {
		t.Run(sc.name, func(t *testing.T) {
			m := partitionMeasure{name: sc.name}
			for i := range runs {
				t.Run(fmt.Sprintf("run%d", i+1), func(t *testing.T) {
					// A run that stops at a fatal check has no timings,
					// but it counts; deferred calls run after t.Fatal.
					var pr *partitionRun
					defer func() { m.add(pr, t.Failed()) }()
					pr = runScenario(t, bin, sc)
				})
			}
			measured = append(measured, m)
		})
	}
	if *partitionRuns > 0 {
		t.Logf("partition suite, %d runs per scenario, %s detection:\n%s", runs, *partitionDetection, partitionTable(measured))
	}
}

// runScenario runs sc once and returns what it observed.
func runScenario(t *testing.T, bin string, sc partitionScenario) *partitionRun {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := startScenario(t, ctx, bin, sc.nodes, sc.place)
	sc.act(sr, lengths())
	return sr.finish()
}

// actCutOwner cuts the queue's owner as kind says, holds the cut past
// the failover, and heals it.
func actCutOwner(kind linkCut) func(*scenarioRun, suiteLengths) {
	return func(sr *scenarioRun, l suiteLengths) {
		sr.cut(sr.owner, kind)
		sr.holdCut(sr.episodes[0], l.hold, l.tail)
		sr.heal(sr.owner)
	}
}

// actIsolateLeader isolates the metadata leader, which does not own the
// queue: the queue should go on serving throughout.
func actIsolateLeader(sr *scenarioRun, l suiteLengths) {
	sr.cut(sr.leader, cutAll)
	sr.holdCut(sr.episodes[0], l.hold, l.tail)
	sr.heal(sr.leader)
}

// actFlapOwner cuts whoever serves the queue from its peers for flapOn,
// heals it for flapOff, and again, for flapFor.
func actFlapOwner(sr *scenarioRun, l suiteLengths) {
	began := time.Now()
	for time.Since(began) < l.flapFor {
		id := sr.current()
		sr.cut(id, cutPeers)
		time.Sleep(l.flapOn)
		sr.heal(id)
		time.Sleep(l.flapOff)
	}
}

// actCutDuringRecovery cuts the owner from its peers and, as soon as
// another node is recovering the queue (the metadata names it the owner
// at a newer epoch), isolates that node and heals the first: the
// recovery must start over with the old owner and the third node, the
// one majority left. A recovery takes some tens of milliseconds, so the
// survivors are polled without pause and both their cuts are armed in
// advance; whether the cut landed before the candidate activated is
// logged after the run.
func actCutDuringRecovery(sr *scenarioRun, l suiteLengths) {
	first := sr.owner
	armed := map[int]*armedCut{}
	for _, nd := range sr.pc.others(sr.pc.nodes[first-1]) {
		a, err := sr.lab.arm(nd.id-1, cutAll)
		if err != nil {
			sr.t.Fatal(err)
		}
		armed[nd.id] = a
	}
	sr.cut(first, cutPeers)
	ep := sr.episodes[0]
	candidate, epoch := sr.waitRecovering(first, ep.epoch)
	if candidate == 0 {
		for _, a := range armed {
			a.disarm()
		}
		sr.t.Fatalf("no recovery of %s began within %v of n%d being cut", sr.queue, serviceBound, first)
	}
	sr.fireArmed(candidate, armed[candidate])
	for id, a := range armed {
		if id != candidate {
			a.disarm()
		}
	}
	sr.heal(first)
	// The candidate may activate in the moment before its cut: its
	// episode is judged as an owner's at the recovery's epoch, and the
	// queue must then be served above that epoch.
	second := &sr.episodes[1]
	second.owner, second.epoch = true, max(second.epoch, epoch)
	sr.waitServedElsewhere(*second)
	time.Sleep(max(time.Until(second.at.Add(l.hold)), l.tail))
	sr.heal(candidate)
	// Logs are written as events happen; the candidate's, read after the
	// heal, says whether it activated before the cut took hold.
	when := "during its recovery"
	if sr.activatedBefore(candidate, epoch, second.at) {
		when = "just after it activated (the cut came too late)"
	}
	sr.t.Logf("n%d was isolated %s at epoch %d", candidate, when, epoch)
}
