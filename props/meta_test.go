package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// nodeRun builds a history's node events by hand: each call to on adds
// one node's event a millisecond after the last, recorded the way the
// simulator records it.
type nodeRun struct{ h sim.History }

// on records event e on node id.
func (r *nodeRun) on(id node.NodeID, e event.Event) *nodeRun {
	at := time.Duration(len(r.h.NodeEvents)+1) * time.Millisecond
	r.h.NodeEvents = append(r.h.NodeEvents, sim.NodeEvent{At: at, Node: id, Name: e.Name, Queue: e.Queue(),
		Epoch: e.Epoch(), Inc: e.Inc(), Term: e.Term()})
	return r
}

// The two incarnations of queue tq the cases below use: tinc, and the one
// that replaced it after a delete.
const tincNext = tinc + 1

// recoveryStart, serving, opened and recoveryActivated are the events the
// recovered-activation checker reads, for queue tq.
func recoveryStart(epoch uint64) event.Event { return event.NewRecoveryStart(tq, epoch, 1) }

func serving(inc, epoch uint64) event.Event { return event.NewQueueActive(tq, epoch, inc, 10) }

func opened() event.Event { return event.NewQueueOpen(tq, 1, 10, 1) }

func recoveryActivated(inc, epoch uint64) event.Event {
	return event.NewMetaRecoveryActivated(tq, inc, epoch, tmembers)
}

// TestRecoveredActivationChecker holds checkRecoveredActivation to its
// rule: an owner that recovered into an epoch serves only after some node
// applied the metadata's activation of that queue incarnation's epoch,
// and an epoch a reopened owner activates without a recovery is not
// judged, even where an earlier replica life of the same node recovered
// into the same epoch number.
func TestRecoveredActivationChecker(t *testing.T) {
	cases := []struct {
		name string
		run  *nodeRun
		want string // a fragment of the violation, or "" for none
	}{
		{"served before the activation", new(nodeRun).
			on(1, recoveryStart(2)).on(1, serving(tinc, 2)).on(2, recoveryActivated(tinc, 2)).on(1, recoveryActivated(tinc, 2)),
			"n1 served queue q0 (incarnation 7) as owner of epoch 2"},
		{"served after the activation", new(nodeRun).
			on(1, recoveryStart(2)).on(2, recoveryActivated(tinc, 2)).on(1, recoveryActivated(tinc, 2)).on(1, serving(tinc, 2)),
			""},
		{"a retried attempt served after the activation", new(nodeRun).
			on(1, recoveryStart(2)).on(1, recoveryStart(2)).on(1, recoveryActivated(tinc, 2)).on(1, serving(tinc, 2)),
			""},
		{"an older epoch's activation does not count", new(nodeRun).
			on(1, recoveryStart(2)).on(1, recoveryActivated(tinc, 2)).on(1, serving(tinc, 2)).
			on(1, recoveryStart(3)).on(1, serving(tinc, 3)),
			"as owner of epoch 3"},
		{"another incarnation's activation does not count", new(nodeRun).
			on(1, recoveryStart(2)).on(1, recoveryActivated(tincNext, 2)).on(1, serving(tinc, 2)),
			"as owner of epoch 2"},
		{"a reopened owner's epoch", new(nodeRun).
			on(1, serving(tinc, 1)).on(1, opened()).on(1, serving(tinc, 2)),
			""},
		{"a reopened epoch a dead replica life recovered into", new(nodeRun).
			// n1 started recovering epoch 2 of the first incarnation and
			// never finished; the queue was deleted and created again, and
			// n1 owns epoch 2 of the new incarnation by reopening.
			on(1, recoveryStart(2)).on(1, opened()).on(1, serving(tincNext, 1)).
			on(1, opened()).on(1, serving(tincNext, 2)),
			""},
		{"another node's recovery", new(nodeRun).
			on(2, recoveryStart(2)).on(1, serving(tinc, 2)),
			""},
	}
	for _, c := range cases {
		got := checkRecoveredActivation(&c.run.h)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected %v", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0].Detail, c.want) || got[0].Checker != "recovery-activation"):
			t.Errorf("%s: got %v, want one recovery-activation violation saying %q", c.name, got, c.want)
		}
	}
}

// Members that apply the same entries agree; one that applies another
// term's entry at an index already applied elsewhere breaks raft's
// promise, whenever it does so, and a member applying an entry again
// after a restart changes nothing.
func TestMetaAgreementChecker(t *testing.T) {
	applied := func(id node.NodeID, index, term uint64) sim.NodeEvent {
		return sim.NodeEvent{At: time.Duration(index) * time.Millisecond, Node: id, Name: event.MetaApplied, Value: index, Term: term}
	}
	agree := sim.History{NodeEvents: []sim.NodeEvent{
		applied(1, 2, 1), applied(2, 2, 1), applied(1, 3, 2), applied(3, 2, 1), applied(1, 2, 1), applied(3, 3, 2),
	}}
	if v := checkMetaAgreement(&agree); len(v) != 0 {
		t.Fatalf("members that applied the same entries: %v", v)
	}
	split := sim.History{NodeEvents: []sim.NodeEvent{
		applied(3, 102, 12), applied(4, 102, 12), applied(1, 101, 11), applied(1, 102, 13),
	}}
	v := checkMetaAgreement(&split)
	if len(v) != 1 || v[0].Checker != "meta-agreement" || !strings.Contains(v[0].Detail, "entry 102") {
		t.Fatalf("n1 applied entry 102 of term 13 after n3 and n4 applied term 12's: %v, want one meta-agreement violation", v)
	}
}

// A create answered ok is judged by the activations of its queue that
// came after it was asked for: one before the answer passes it; none
// between, whether the queue was never activated or activated only after
// the answer, fails it; and an earlier incarnation's activation, before
// the create was asked for, does not stand for its own.
func TestACreateIsAnsweredOnlyOnceItsQueueIsActivated(t *testing.T) {
	run := &nodeRun{}
	run.on(1, event.NewMetaActivated(tq, tinc)).on(2, event.NewMetaActivated(tq, tinc)) // at 1 and 2 ms
	create := func(invoked, replied time.Duration) *sim.History {
		h := run.h
		h.Ops = []sim.OpRecord{{Kind: "create", Queue: tq, Outcome: sim.OutcomeOK, Invoked: invoked, Replied: sim.Stamp{At: replied, Seq: 1}}}
		return &h
	}
	for _, c := range []struct {
		name             string
		invoked, replied time.Duration
		fails            bool
	}{
		{"answered after the activation", 0, 3 * time.Millisecond, false},
		{"answered at the activation", 0, 2 * time.Millisecond, false},
		{"answered before any activation", 0, 500 * time.Microsecond, true},
		{"asked after every activation", 5 * time.Millisecond, 6 * time.Millisecond, true},
	} {
		v := checkNoServiceBeforeActivation(newIndex(create(c.invoked, c.replied)))
		if failed := len(v) == 1 && v[0].Checker == "activation" && strings.Contains(v[0].Detail, "create of "+tq); failed != c.fails || len(v) > 1 {
			t.Errorf("%s: got %v, want a failure %t", c.name, v, c.fails)
		}
	}
	unanswered := create(0, 0)
	unanswered.Ops[0].Replied = sim.Stamp{}
	if v := checkNoServiceBeforeActivation(newIndex(unanswered)); len(v) != 0 {
		t.Errorf("a create whose ok came from no reply was judged: %v", v)
	}
}
