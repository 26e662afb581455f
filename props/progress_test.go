package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

const ms = time.Millisecond

// calmRun builds a history for the progress checkers: n nodes start at
// zero, and the calm phase begins at 8s with every node up.
func calmRun(n int) *sim.History {
	h := &sim.History{LivenessAt: 8 * time.Second, Live: true}
	for _, id := range sim.NodeIDs(n) {
		h.Processes = append(h.Processes, sim.ProcessChange{Node: id, Up: true})
	}
	return h
}

// change records a process stopping or starting.
func change(h *sim.History, at time.Duration, id node.NodeID, up bool) {
	h.Processes = append(h.Processes, sim.ProcessChange{At: at, Node: id, Up: up})
}

// wantViolation checks that vs holds exactly one violation containing
// want, or none if want is empty.
func wantViolation(t *testing.T, vs []sim.Violation, want string) {
	t.Helper()
	switch {
	case want == "" && len(vs) > 0:
		t.Fatalf("unexpected violation: %v", vs[0])
	case want != "" && len(vs) != 1:
		t.Fatalf("got %d violations, want one containing %q: %v", len(vs), want, vs)
	case want != "" && !strings.Contains(vs[0].Detail, want):
		t.Fatalf("violation %q does not say %q", vs[0].Detail, want)
	case want != "" && vs[0].Kind != sim.Liveness:
		t.Fatalf("violation is not a liveness one: %v", vs[0])
	}
}

// TestFailoverBoundChecker holds checkFailoverBound to its rule: in the
// calm phase, with a quorum up, a queue is served within the bound of the
// latest of the calm phase's start, the span's start and the last process
// start or stop.
func TestFailoverBoundChecker(t *testing.T) {
	lim := progressLimits{failover: 2 * time.Second}
	cases := []struct {
		name  string
		build func(h *sim.History)
		want  string
	}{
		{"served within the bound", func(h *sim.History) {
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 8 * time.Second, Until: 9500 * ms}}
		}, ""},
		{"served late", func(h *sim.History) {
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 8 * time.Second, Until: 10500 * ms}}
		}, "queue q0 went unserved in the calm phase from 8s and was first served again at 10.5s: 2.5s after 8s"},
		{"never served", func(h *sim.History) {
			h.Unserved = []sim.UnservedSpan{{Queue: "q1", From: 8 * time.Second, Until: 16 * time.Second, Open: true}}
		}, "was still unserved when the run ended at 16s"},
		{"late within a span that began in the calm phase", func(h *sim.History) {
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 11 * time.Second, Until: 13100 * ms}}
		}, "2.1s after 11s"},
		{"a node falling in the calm phase starts the clock again", func(h *sim.History) {
			change(h, 9*time.Second, 2, false)
			change(h, 9200*ms, 2, true)
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 8 * time.Second, Until: 10500 * ms}}
		}, ""},
		{"no quorum up: nothing is owed", func(h *sim.History) {
			change(h, 7*time.Second, 2, false)
			change(h, 7*time.Second, 3, false)
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 8 * time.Second, Until: 16 * time.Second, Open: true}}
		}, ""},
		{"spans of the safety phase are not judged here", func(h *sim.History) {
			h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 2 * time.Second, Until: 7 * time.Second}}
			h.LivenessAt = 8 * time.Second
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := calmRun(3)
			c.build(h)
			wantViolation(t, checkFailoverBound(lim, h), c.want)
		})
	}
	t.Run("a run without a calm phase", func(t *testing.T) {
		h := calmRun(3)
		h.Live = false
		h.Unserved = []sim.UnservedSpan{{Queue: "q0", From: 0, Until: 16 * time.Second, Open: true}}
		wantViolation(t, checkFailoverBound(lim, h), "")
	})
}

// TestRedundancyChecker holds checkRedundancy to its rule: a replacement
// is due ReplaceAfter plus one silence after the member fell or the last
// leader was announced, and must be done within settle of the later of
// that and the last disturbance.
func TestRedundancyChecker(t *testing.T) {
	lim := progressLimits{silence: 500 * ms, replaceAfter: 3 * time.Second, settle: time.Second}
	// Node 1 falls at 1s; the replacement is due at 4.5s.
	deficit := func(until time.Duration, open bool) []sim.ReplicaDeficit {
		return []sim.ReplicaDeficit{{Queue: "q0", Down: 1, From: time.Second, Until: until, Open: open}}
	}
	leader := func(h *sim.History, at time.Duration) {
		h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: at, Node: 2, Name: event.MetaLeader, Value: 2, Term: 3})
	}
	cases := []struct {
		name  string
		build func(h *sim.History, sc *sim.Scenario)
		want  string
	}{
		{"replaced soon after it fell due", func(h *sim.History, _ *sim.Scenario) {
			h.Deficits = deficit(5400*ms, false)
		}, ""},
		{"a slow network widens the bound by the replacement's hops", func(h *sim.History, _ *sim.Scenario) {
			// Seed 666754: every message between nodes from 4.5s on took
			// up to 100ms, so each of the 15 hops may have: the bound is
			// 1s + 15 x 100ms.
			slowNetwork(h, 4500*ms, 7*time.Second, 100*ms)
			h.Deficits = deficit(6900*ms, false)
		}, ""},
		{"it is still a bound", func(h *sim.History, _ *sim.Scenario) {
			slowNetwork(h, 4500*ms, 8*time.Second, 100*ms)
			h.Deficits = deficit(7100*ms, false)
		}, "later still had not restored it (bound 2.5s)"},
		{"a network slow only before the replacement fell due widens nothing", func(h *sim.History, _ *sim.Scenario) {
			slowNetwork(h, 0, 4300*ms, 100*ms)
			h.Deficits = deficit(6900*ms, false)
		}, "later still had not restored it (bound 1s)"},
		{"never replaced", func(h *sim.History, _ *sim.Scenario) {
			h.Deficits = deficit(8*time.Second, false)
		}, "queue q0 lost replica n1 at 1s while a node outside its set was up, and was restored at 8s: the replacement was due by 4.5s"},
		{"still short at the end", func(h *sim.History, _ *sim.Scenario) {
			h.Deficits = deficit(16*time.Second, true)
		}, "was still short when the run ended at 16s"},
		{"a new leader counts afresh", func(h *sim.History, _ *sim.Scenario) {
			leader(h, 4*time.Second)
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"a new leader's count runs out too", func(h *sim.History, _ *sim.Scenario) {
			leader(h, 2*time.Second)
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 5.5s"},
		{"the leader's confirmation starts the count", func(h *sim.History, _ *sim.Scenario) {
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(5200*ms, false)
		}, "the replacement was due by 4.05s"},
		{"a member back and confirmed down again counts afresh", func(h *sim.History, _ *sim.Scenario) {
			// Seed 148945: the member came back while the queue recovered
			// and fell again before it activated; the leader confirmed it
			// down anew at 3.05s, so the replacement is due at 6.05s.
			change(h, time.Second, 1, false)
			change(h, 2*time.Second, 1, true)
			change(h, 3*time.Second, 1, false)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1},
				sim.NodeEvent{At: 3050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(6900*ms, false)
		}, ""},
		{"its new count runs out too", func(h *sim.History, _ *sim.Scenario) {
			change(h, time.Second, 1, false)
			change(h, 2*time.Second, 1, true)
			change(h, 3*time.Second, 1, false)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1},
				sim.NodeEvent{At: 3050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 6.05s"},
		{"a return the leader never confirmed away keeps the first count", func(h *sim.History, _ *sim.Scenario) {
			change(h, time.Second, 1, false)
			change(h, 2*time.Second, 1, true)
			change(h, 2100*ms, 1, false)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1050 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(6900*ms, false)
		}, "the replacement was due by 4.05s"},
		{"a member back from a crash and paused later counts from its confirmation", func(h *sim.History, _ *sim.Scenario) {
			// Seed 325619: the member crashed and came back before the
			// deficit, which its pause opened at 1s; the leader confirmed
			// it down at 1.4s, so the replacement is due at 4.4s, not
			// three seconds after the crash it had come back from.
			change(h, 200*ms, 1, false)
			change(h, 500*ms, 1, true)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1400 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(5200*ms, false)
		}, ""},
		{"its count from the confirmation runs out too", func(h *sim.History, _ *sim.Scenario) {
			change(h, 200*ms, 1, false)
			change(h, 500*ms, 1, true)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1400 * ms, Node: 2, Name: event.DetectConfirm, Value: 1})
			h.Deficits = deficit(5600*ms, false)
		}, "the replacement was due by 4.4s"},
		{"without one, a silence after the pause", func(h *sim.History, _ *sim.Scenario) {
			change(h, 200*ms, 1, false)
			change(h, 500*ms, 1, true)
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 4.5s"},
		{"without one, a silence after the fall", func(h *sim.History, _ *sim.Scenario) {
			h.Deficits = deficit(5200*ms, false)
		}, ""},
		{"a fault ending late holds the work up", func(h *sim.History, sc *sim.Scenario) {
			sc.Faults = []sim.Fault{{At: 5 * time.Second, Kind: sim.FaultIsolate, Node: 3, Length: 2500 * ms}}
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"a fault long over does not", func(h *sim.History, sc *sim.Scenario) {
			sc.Faults = []sim.Fault{{At: 2 * time.Second, Kind: sim.FaultIsolate, Node: 3, Length: time.Second}}
			h.Deficits = deficit(8*time.Second, false)
		}, "after the last disturbance at 3s"},
		{"the member's own crash is no disturbance", func(h *sim.History, sc *sim.Scenario) {
			sc.Faults = []sim.Fault{{At: time.Second, Kind: sim.FaultCrashOwner, Length: 7 * time.Second}}
			change(h, time.Second, 1, false)
			change(h, 8*time.Second, 1, true)
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 4.5s"},
		{"another node's broken replicas hold the work up", func(h *sim.History, sc *sim.Scenario) {
			sc.Faults = []sim.Fault{{At: 4800 * ms, Kind: sim.FaultMisdirect, Node: 4, Hit: 30, Length: 10 * ms}}
			change(h, 4800*ms, 5, false)
			change(h, 4810*ms, 5, true)
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"an owner-only queue is never replaced", func(h *sim.History, sc *sim.Scenario) {
			sc.Workload = &sim.Workload{Queues: []sim.QueueSpec{{Name: "q0", Policy: wire.PolicyOwnerOnly}}}
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"a majority queue is", func(h *sim.History, sc *sim.Scenario) {
			sc.Workload = &sim.Workload{Queues: []sim.QueueSpec{{Name: "q0", Policy: wire.PolicyMajority}}}
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 4.5s"},
		{"a reopened replica no owner verified holds the work up", func(h *sim.History, _ *sim.Scenario) {
			change(h, 1900*ms, 2, false)
			change(h, 1950*ms, 2, true)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1960 * ms, Node: 2, Name: event.QueueOpen, Queue: "q0"})
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"one verified again does not", func(h *sim.History, _ *sim.Scenario) {
			change(h, 1900*ms, 2, false)
			change(h, 1950*ms, 2, true)
			h.NodeEvents = append(h.NodeEvents, sim.NodeEvent{At: 1960 * ms, Node: 2, Name: event.QueueOpen, Queue: "q0"},
				sim.NodeEvent{At: 2 * time.Second, Node: 2, Name: event.QueueTrusted, Queue: "q0"})
			h.Deficits = deficit(8*time.Second, false)
		}, "after the last disturbance at 2s"},
		{"another node's graceful stop under way holds the work up", func(h *sim.History, sc *sim.Scenario) {
			// The stop was asked for at 7s; its process had not exited by
			// the end of the deficit, so no process record shows it.
			sc.Faults = []sim.Fault{{At: 7 * time.Second, Kind: sim.FaultStop, Node: 3, Length: 2 * time.Second}}
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"the member's own stop does not", func(h *sim.History, sc *sim.Scenario) {
			sc.Faults = []sim.Fault{{At: 7 * time.Second, Kind: sim.FaultStop, Node: 0, Length: 2 * time.Second}}
			h.Deficits = deficit(8*time.Second, false)
		}, "the replacement was due by 4.5s"},
		{"another node staying down holds the work up", func(h *sim.History, _ *sim.Scenario) {
			change(h, time.Second, 1, false)
			change(h, 2*time.Second, 3, false)
			h.Deficits = deficit(8*time.Second, false)
		}, ""},
		{"another node back in time does not", func(h *sim.History, _ *sim.Scenario) {
			change(h, time.Second, 1, false)
			change(h, 2*time.Second, 3, false)
			change(h, 3*time.Second, 3, true)
			h.Deficits = deficit(8*time.Second, false)
		}, "after the last disturbance at 3s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, sc := calmRun(5), sim.Scenario{Nodes: 5}
			c.build(h, &sc)
			wantViolation(t, checkRedundancy(sc, lim, h), c.want)
		})
	}
}

// TestProgressLimits checks the bounds follow the configuration: each
// policy's slowest confirmation of a silent peer lengthens both, and a
// run that may switch policies is judged by the slower one.
func TestProgressLimits(t *testing.T) {
	eager := sim.Scenario{Detection: node.DetectEager}
	heartbeat := sim.Scenario{Detection: node.DetectHeartbeat}
	switched := sim.Scenario{Detection: node.DetectHeartbeat, Faults: []sim.Fault{{Kind: sim.FaultSetDetection, Hit: int(node.DetectEager)}}}
	e, hb, sw := limitsFor(eager), limitsFor(heartbeat), limitsFor(switched)
	// Heartbeat lets a ping sent up to a quarter of the 100ms interval
	// after the silence began go unanswered for the 300ms grace, its
	// verification included; eager lets one sent up to half the interval
	// after go unanswered for up to three intervals (when the peer's link
	// stalled lately), then verifies for three ticks: 355ms against 390ms.
	if e.failover-hb.failover != 35*ms || e.silence-hb.silence != 35*ms {
		t.Fatalf("heartbeat bounds %+v, eager %+v: heartbeat's ping period and grace should be 35ms short of eager's three intervals and a half", hb, e)
	}
	if sw != e {
		t.Fatalf("a run that switches to eager detection is bounded by %+v, not the eager %+v", sw, e)
	}
	times := sim.QueueConfig(heartbeat).ProgressTimes()
	if hb.replaceAfter != times.ReplaceAfter || times.ReplaceAfter != sim.QueueNodeConfig().ReplaceAfter {
		t.Fatalf("replace-after %v, configured %v", hb.replaceAfter, sim.QueueNodeConfig().ReplaceAfter)
	}
	if want := 2355 * ms; hb.failover != want {
		t.Fatalf("heartbeat failover bound %v, want %v (1.55s election, 200ms retry, 355ms silence, 250ms margin)", hb.failover, want)
	}
	// The simulated nodes tick every 20ms: an owner asks again for
	// receipts after 25 ticks and gives a cut up after 250.
	if want := 7900 * ms; ckptProgressBound(hb) != want {
		t.Fatalf("checkpoint-progress bound %v, want %v (5s give-up, 0.5s resend, 1.4s settle, 1s margin)", ckptProgressBound(hb), want)
	}
}

// slowNetwork records that messages between nodes sent in [from, until)
// took d to arrive.
func slowNetwork(h *sim.History, from, until, d time.Duration) {
	for at := from; at < until; at += 10 * ms {
		h.NotePeerDelay(at, at+d)
	}
}
