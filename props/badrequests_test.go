package props

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// Any answer to a bad request but bad-request is a violation, except a
// starting node's unavailable; an unanswered one is none.
func TestBadRequestsMustBeRefused(t *testing.T) {
	rec := func(answered bool, st wire.Status, detail string) sim.BadRequestRecord {
		return sim.BadRequestRecord{Kind: "create-name", Node: 2, Sent: time.Second, Answered: answered, Status: st, Detail: detail}
	}
	for _, c := range []struct {
		name string
		rec  sim.BadRequestRecord
		want int
	}{
		{"refused", rec(true, wire.StatusBadRequest, "queue name is 0 bytes long"), 0},
		{"never answered", rec(false, 0, ""), 0},
		{"a starting node", rec(true, wire.StatusUnavailable, node.StartingDetail), 0},
		{"taken", rec(true, wire.StatusOK, ""), 1},
		{"routed", rec(true, wire.StatusNotOwner, ""), 1},
		{"unavailable for another reason", rec(true, wire.StatusUnavailable, "queue q0 is recovering"), 1},
	} {
		h := sim.History{BadRequests: []sim.BadRequestRecord{c.rec}}
		v := checkBadRequests(&h)
		if len(v) != c.want {
			t.Errorf("%s: %d violations %v, want %d", c.name, len(v), v, c.want)
		}
		for _, x := range v {
			if x.Checker != "bad-request-refused" {
				t.Errorf("%s: checker %q", c.name, x.Checker)
			}
		}
	}
}

// Every kind of bad request the simulator sends reaches a node's checks
// and is refused there: one that a node turned away for another reason
// (it does not decode, it is routed first) would test nothing.
func TestEveryKindOfBadRequestIsRefused(t *testing.T) {
	refused := map[string]int{}
	var kinds []string
	for seed := uint64(1); seed <= 2; seed++ {
		sc := sim.QueueScenario(seed)
		sc.Workload.BadRequests = 150
		rep := RunQueue(sc, io.Discard)
		if len(rep.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, rep.Violations)
		}
		for _, b := range rep.History.BadRequests {
			if !slices.Contains(kinds, b.Kind) {
				kinds = append(kinds, b.Kind)
			}
			if b.Answered && b.Status == wire.StatusBadRequest {
				refused[b.Kind]++
			}
		}
	}
	if len(kinds) < 12 {
		t.Fatalf("only %d kinds of bad request were sent: %v", len(kinds), kinds)
	}
	for _, k := range kinds {
		if refused[k] == 0 {
			t.Errorf("no %s request was refused as bad: %v", k, refused)
		}
	}
	t.Logf("refused: %v", refused)
}
