package event

import (
	"slices"
	"testing"
	"time"
)

// accessors are every typed accessor, by name, so a test can compare an
// event with what Parse reads back of it.
var accessors = map[string]func(Event) any{
	"Queue": func(e Event) any { return e.Queue() }, "Epoch": func(e Event) any { return e.Epoch() },
	"Inc": func(e Event) any { return e.Inc() }, "Term": func(e Event) any { return e.Term() },
	"Node": func(e Event) any { return e.Node() }, "Last": func(e Event) any { return e.Last() },
	"Index": func(e Event) any { return e.Index() }, "After": func(e Event) any { return e.After() },
	"Durable": func(e Event) any { return e.Durable() }, "Commit": func(e Event) any { return e.Commit() },
	"Counted": func(e Event) any { return e.Counted() }, "TransferTo": func(e Event) any { return e.TransferTo() },
	"Next": func(e Event) any { return e.Next() }, "Out": func(e Event) any { return e.Out() },
	"In": func(e Event) any { return e.In() }, "From": func(e Event) any { return e.From() },
	"FromNode": func(e Event) any { return e.FromNode() }, "To": func(e Event) any { return e.To() },
	"ToNode": func(e Event) any { return e.ToNode() }, "Why": func(e Event) any { return e.Why() },
	"Err": func(e Event) any { return e.Err() }, "ID": func(e Event) any { return e.ID() },
	"Lease": func(e Event) any { return e.Lease() }, "Members": func(e Event) any { return e.Members() },
	"Replicas": func(e Event) any { return e.Replicas() }, "Kind": func(e Event) any { return e.Kind() },
	"Attempt": func(e Event) any { return e.Attempt() }, "Witnesses": func(e Event) any { return e.Witnesses() },
	"Bytes": func(e Event) any { return e.Bytes() }, "RPCs": func(e Event) any { return e.RPCs() },
	"Syncs": func(e Event) any { return e.Syncs() }, "Elapsed": func(e Event) any { return e.Elapsed() },
	"Stage": func(e Event) any { return e.Stage() }, "Outcome": func(e Event) any { return e.Outcome() },
	"Source": func(e Event) any { return e.Source() }, "SourceLast": func(e Event) any { return e.SourceLast() },
	"SourceEpoch": func(e Event) any { return e.SourceEpoch() }, "Marker": func(e Event) any { return e.Marker() },
	"Confirmed": func(e Event) any { return e.Confirmed() }, "Best": func(e Event) any { return e.Best() },
	"BestNode": func(e Event) any { return e.BestNode() }, "Digest": func(e Event) any { return e.Digest() },
	"Witnessed": func(e Event) any { return e.Witnessed() }, "Silent": func(e Event) any { return e.Silent() },
	"WasConfirmed": func(e Event) any { return e.WasConfirmed() }, "Mode": func(e Event) any { return e.Mode() },
	"Flaps":    func(e Event) any { return e.Flaps() },
	"Interval": func(e Event) any { return e.Interval() }, "Grace": func(e Event) any { return e.Grace() },
	"Dir": func(e Event) any { return e.Dir() }, "Queues": func(e Event) any { return e.Queues() },
	"Cluster": func(e Event) any { return e.Cluster() }, "Peer": func(e Event) any { return e.Peer() },
}

// What Parse reads back of a trace line answers every accessor as the
// event itself does: tools that read traces see what checkers see.
func TestParseReadsBackWhatAccessorsSee(t *testing.T) {
	for _, s := range samples {
		back := Parse(s.e.String())
		if back.Name != s.e.Name {
			t.Errorf("%s: parsed name %q", s.e.Name, back.Name)
		}
		for name, get := range accessors {
			want, got := get(s.e), get(back)
			if ws, ok := want.([]uint32); ok {
				if !slices.Equal(ws, got.([]uint32)) {
					t.Errorf("%s: %s = %v after parsing, %v before", s.e.Name, name, got, want)
				}
				continue
			}
			if got != want {
				t.Errorf("%s: %s = %v after parsing, %v before", s.e.Name, name, got, want)
			}
		}
	}
}

// The accessors give back what the constructors took, in the argument's
// own type, whatever rendering the event carries.
func TestAccessorsReturnWhatConstructorsTook(t *testing.T) {
	checks := []struct {
		what      string
		got, want any
	}{
		{"suspect node", NewDetectSuspect(2, 410*time.Millisecond).Node(), uint32(2)},
		{"suspect silence", NewDetectSuspect(2, 410*time.Millisecond).Silent(), 410 * time.Millisecond},
		{"lost-log node, a name", NewMetaFollowerLostLog(3, 10, 12, 2).Node(), uint32(3)},
		{"lost-log transfer", NewMetaFollowerLostLog(3, 10, 12, 2).TransferTo(), uint32(2)},
		{"second writer", NewQueueSecondWriter("q", 3, 2).FromNode(), uint32(3)},
		{"plan from, a number", NewMetaPlanRecovery("q", 1, 2, 3).FromNode(), uint32(1)},
		{"plan to", NewMetaPlanRecovery("q", 1, 2, 3).ToNode(), uint32(2)},
		{"role from", NewQueueRole("q", "follower", "owner", 2, "").From(), "follower"},
		{"done took", NewRecoveryDone(Recovery{Took: 2500 * time.Microsecond}).Elapsed(), 2500 * time.Microsecond},
		{"stage took", NewRecoveryStageFetched(stage, 1).Elapsed(), 1500 * time.Microsecond},
		{"sealed source", NewRecoveryStageSealed(stage, 3, 2, 9, 1).Source(), uint32(2)},
		{"unsupported best node", NewRecoveryUnsupported("q", 2, 9, 7, 3, 2).BestNode(), uint32(3)},
		{"detection grace", NewMetaDetection(2, time.Second, 3*time.Second).Grace(), 3 * time.Second},
		{"recovered", NewDetectRecovered(2, true).WasConfirmed(), true},
		{"flapped", NewDetectFlapped(2, 3).Flaps(), 3},
		{"fenced err", NewQueueFenced("q", errSample).Err(), "disk on fire"},
		{"fenced without an error", NewQueueFenced("q", nil).Err(), ""},
		{"counter peer", NewCounterDisconnect(3).Peer(), uint32(3)},
		{"owner stopped next", NewQueueOwnerStopped("q", 2, 3).Next(), uint32(3)},
		{"missing attribute", NewMetaLeader(4, 2).Queue(), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	if got := NewMetaRecoveryActivated("q", 1, 2, []uint32{1, 3}).Members(); !slices.Equal(got, []uint32{1, 3}) {
		t.Errorf("members = %v, want [1 3]", got)
	}
	if got := NewMetaReplicaReplaced("q", 1, nil).Replicas(); len(got) != 0 {
		t.Errorf("an empty replica list reads back as %v", got)
	}
}

// A value with spaces comes back whole, so a why survives the trace.
func TestParseKeepsSpacesInAValue(t *testing.T) {
	e := Parse(NewQueueStale("orders", 2, "a newer epoch exists").String())
	if e.Why() != "a newer epoch exists" || e.Epoch() != 2 {
		t.Fatalf("parsed why %q epoch %d", e.Why(), e.Epoch())
	}
}
