package sim_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/sim"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// Every generated scenario survives being written out and read back,
// field for field, and writing the parsed copy gives the same text.
func TestScenarioTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		sc := sim.QueueScenario(seed)
		text, err := sc.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		back, err := sim.ParseScenario(text)
		if err != nil {
			t.Fatalf("parsing what MarshalText wrote: %v\n%s", err, text)
		}
		if d := cmp.Diff(sc, back); d != "" {
			t.Fatalf("round trip changed the scenario (-want +got):\n%s\n%s", d, text)
		}
		again, _ := back.MarshalText()
		if string(again) != string(text) {
			t.Fatalf("text changed on the second round:\n%s\n---\n%s", text, again)
		}
	})
}

// A detection interval given in the text reaches the nodes' policy, in
// the mode the scenario starts with, and is written back; one not given
// is not written, so scenarios saved before the directive read back as
// they were.
func TestADetectionIntervalReachesTheNodes(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	if strings.Contains(string(base), "\ninterval ") {
		t.Fatalf("a swarm scenario wrote an interval:\n%s", base)
	}
	for _, mode := range []string{"1", "2"} {
		text := strings.Replace(string(base), "\ndetection ", "\ninterval 40ms\ndetection ", 1)
		text = regexp.MustCompile(`(?m)^detection \d+$`).ReplaceAllString(text, "detection "+mode)
		sc, err := sim.ParseScenario([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		p := sim.QueueConfig(sc).Detection
		if p.Interval != 40*time.Millisecond || p.Mode != sc.Detection {
			t.Fatalf("detection %s with interval 40ms gave the nodes %+v", mode, p)
		}
		again, _ := sc.MarshalText()
		if !strings.Contains(string(again), "\ninterval 40ms\n") {
			t.Fatalf("the interval was not written back:\n%s", again)
		}
	}
}

// A hand-edited file with a mistake is refused with the line and the
// reason, never run with a silently different meaning.
func TestScenarioTextErrorsNameTheLine(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	for _, c := range []struct{ edit, want string }{
		{"fault at=1s crash n9 for=1s", "names a node outside n1.."},
		{"fault at=1s explode n1", "unknown fault kind"},
		{"fault at=1s crash n1 for=1s colour=red", `unknown option "colour"`},
		{"fault at=soon crash n1", "at=DURATION"},
		{"net latency=1ms..2ms", ""}, // a later line changes only what it names
		{"net latency=1ms", "MIN..MAX"},
		{"nodes three", "line"},
		{"queue q9 quorum", "unknown confirmation policy"},
		{"queue q9 all dedup=500ms", "deduplication window 500ms is outside [1s, 24h0m0s]"},
		{"queue q9 all window=5s", `"window=5s": want dedup=D`},
		{"dedup 100ms", "deduplication window 100ms is outside"},
		{"teleport n1", "unknown directive"},
		{"interval 5ms", "want 10ms or more"},
		{"replicas 0", "want 1 or more"},
		{"replicas 9", "replicas=9: want 1 to the 5 founding nodes"},

		// Each kind takes exactly the keys it prints: a key it ignores
		// would be dropped the next time the scenario is saved.
		{"fault at=1s crash n1 for=1s extra=5s", `unknown option "extra" for crash (it takes for=)`},
		{"fault at=1s crash n1 for=1s hit=2", `unknown option "hit" for crash`},
		{"fault at=1s pause n1 for=1s mode=1", `unknown option "mode" for pause`},
		{"fault at=1s isolate n1 for=1s boundary=meta.after.receipt-proposed", `unknown option "boundary" for isolate`},
		{"fault at=1s spike n1->n2 extra=5ms for=1s by=1s", `unknown option "by" for spike`},
		{"fault at=1s clock-jump n1 by=1s extra=1s", `unknown option "extra" for clock-jump`},
		{"fault at=1s clock-jump n1 by=1s for=1s", `unknown option "for" for clock-jump`},
		{"fault at=1s crash-at n1 boundary=b hit=1 for=1s frames=2", `unknown option "frames" for crash-at`},
		{"fault at=1s crash-at n1 boundary=b hit=1 for=1s mode=2", `unknown option "mode" for crash-at`},
		{"fault at=1s lose-writes n1 frames=2 for=1s hit=1", `unknown option "hit" for lose-writes`},
		{"fault at=1s crash-all for=1s group=n1,n2", `unknown option "group" for crash-all`},
		{"fault at=1s set-detection mode=2 for=1s", `unknown option "for" for set-detection`},
		{"fault at=1s split group=n1 for=1s mode=1", `unknown option "mode" for split`},
		{"fault at=1s crash n1", "crash needs for="},
		{"fault at=1s crash-at n1 boundary=b for=1s", "crash-at needs hit="},
		{"fault at=1s set-detection", "set-detection needs mode="},
		{"fault at=1s crash n1 for=1s for=2s", "for given twice"},
		// A membership change's repeat is written only when drawn.
		{"fault at=1s crash n1 for=1s again=5ms", `unknown option "again" for crash`},
		{"fault at=1s remove-node n1 again=0s", "want a duration above zero"},
		{"fault at=1s remove-node n1 again=5ms for=1s", `unknown option "for" for remove-node (it takes again=)`},

		// A fault aimed at a role names no node, one aimed at a node
		// names no peer, and one aimed at a link names both ends.
		{"fault at=1s crash-leader n2 for=1s", `crash-leader is aimed at no node or link given on its line: remove "n2"`},
		{"fault at=1s crash-owner n1 for=1s", "crash-owner is aimed at no node"},
		{"fault at=1s crash-all n3 for=1s", "crash-all is aimed at no node"},
		{"fault at=1s crash-leader-owner n1 for=1s", "crash-leader-owner is aimed at no node"},
		{"fault at=1s isolate-leader n1 for=1s", "isolate-leader is aimed at no node"},
		{"fault at=1s split n1 group=n1 for=1s", "split is aimed at no node"},
		{"fault at=1s set-detection n1 mode=1", "set-detection is aimed at no node"},
		{"fault at=1s crash n1->n2 for=1s", `crash needs one node like n1 after the kind, got "n1->n2"`},
		{"fault at=1s clock-jump n1->n2 by=1s", "clock-jump needs one node"},
		{"fault at=1s crash-at n1->n2 boundary=b hit=1 for=1s", "crash-at needs one node"},
		{"fault at=1s crash for=1s", `crash needs one node like n1 after the kind, got ""`},
		{"fault at=1s one-way n1 for=1s", `one-way needs a link like n1->n2 after the kind, got "n1"`},
		{"fault at=1s spike extra=1ms for=1s", "spike needs a link"},
		{"fault at=1s clog n2->n2 for=1s", "clog needs a link between two nodes"},
		{"fault at=1s one-way n1->nine for=1s", `"nine" is not a node name`},

		// Values the printer could never write: a NaN, which does not
		// even equal itself once read back, infinities, chances outside
		// 0..1, and negative lengths, counts and modes.
		{"net loss=NaN", "loss=NaN: want a chance from 0 to 1"},
		{"net dup=+Inf", "dup=+Inf: want a chance from 0 to 1"},
		{"net reorder=-Inf", "want a chance from 0 to 1"},
		{"net loss=1.5", "want a chance from 0 to 1"},
		{"net loss=-0.1", "want a chance from 0 to 1"},
		{"net tail=NaN..1s", "want CHANCE..MAX"},
		{"net latency=-1ms..2ms", "MIN..MAX"},
		{"net bandwidth=-1", "want 0 or more"},
		{"disk eio-sync=nan", "want a chance from 0 to 1"},
		{"disk flip=2", "want a chance from 0 to 1"},
		{"disk tail=1.01..1s", "want CHANCE..MAX"},
		{"workload ack=inf", "want a chance from 0 to 1"},
		{"workload nack=-1", "want a chance from 0 to 1"},
		{"workload lease=-1s", "not negative"},
		{"workload producers=-1", "want 0 or more"},
		{"skew -1s", "not negative"},
		{"fault at=1s spike n1->n2 extra=-5ms for=1s", "extra=-5ms: want a duration that is not negative"},
		{"fault at=1s crash n1 for=-1s", "for=-1s: want a duration that is not negative"},
		{"fault at=1s set-detection mode=3", "mode=3: want 1 (heartbeat) or 2 (eager)"},
		{"fault at=1s crash-at n1 boundary=b hit=0 for=1s", "hit=0: want 1 or more"},
		{"fault at=1s misdirect n1 frames=-2 for=1s", "frames=-2: want 1 or more"},
		{"fault at=1s crash-at n1 boundary= hit=1 for=1s", "want a boundary name"},
		{"fault at=1s split group=n1,n1 for=1s", "n1 is named twice"},

		// Lines in the printed form are still taken.
		{"fault at=1s clock-jump n1 by=-2s", ""},
		{"fault at=1s split group= for=1s", ""},
		{"fault at=1s set-detection mode=2", ""},
		{"net loss=1 dup=0 tail=1..0s", ""},
	} {
		text := string(base) + c.edit + "\n"
		_, err := sim.ParseScenario([]byte(text))
		// Errors of a line name it; those of the whole scenario (a node
		// outside the cluster, more replicas than nodes) name the fault
		// or the setting instead.
		line := fmt.Sprintf("scenario line %d (%s): ", strings.Count(string(base), "\n")+1, c.edit)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: unexpected error %v", c.edit, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one mentioning %q", c.edit, err, c.want)
		case err != nil && !strings.HasPrefix(err.Error(), line) && !strings.HasPrefix(err.Error(), "scenario: fault ") &&
			!strings.HasPrefix(err.Error(), "scenario: replicas="):
			t.Errorf("%q: error %v, want one starting %q", c.edit, err, line)
		}
	}
}

// A queue whose dead-letter queue is not among the workload's queues is
// refused: no simulated client would create it, and its messages would
// wait for it to the end of the run.
func TestADeadLetterQueueOutsideTheWorkloadIsRefused(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	for _, c := range []struct{ edit, want string }{
		{"queue orders majority dead-letter=nowhere max-deliveries=2", "dead-letter queue nowhere is not a queue of the workload"},
		{"queue parked majority\nqueue orders majority dead-letter=parked max-deliveries=2", ""},
		{"queue orders majority dead-letter=orders max-deliveries=2", "cannot be its own dead-letter queue"},
		{"queue orders majority max-deliveries=2", "needs a dead-letter queue"},
	} {
		_, err := sim.ParseScenario([]byte(string(base) + c.edit + "\n"))
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.edit, err, c.want)
		}
	}
}

// A moves-only queue takes no publishes, so it cannot be the first queue,
// which producers and probes fall back on; the flag takes no value.
func TestAMovesOnlyQueueIsNeverTheFirst(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	head, _, _ := strings.Cut(string(base), "queue ")
	for _, c := range []struct{ queues, want string }{
		{"queue parked majority dedup=1s moves-only\nqueue orders majority dead-letter=parked max-deliveries=2", "cannot be moves-only"},
		{"queue orders majority dead-letter=parked max-deliveries=2\nqueue parked majority dedup=1s moves-only", ""},
		{"queue orders majority dead-letter=parked max-deliveries=2\nqueue parked majority moves-only=yes", "takes no value"},
	} {
		sc, err := sim.ParseScenario([]byte(head + c.queues + "\n"))
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.queues, err, c.want)
			continue
		}
		if err == nil && !sc.Workload.Queues[1].MovesOnly {
			t.Errorf("%q: the second queue lost its moves-only flag", c.queues)
		}
	}
}
