package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// The answers to membership requests are held to what the metadata
// applied, and a refusal to the time it was applied.
func TestMembershipAnswersAreHeldToTheMetadata(t *testing.T) {
	ms := time.Millisecond
	op := func(kind string, invoked, done time.Duration, outcome string) sim.OpRecord {
		return sim.OpRecord{Kind: kind, Node: 4, Invoked: invoked, Done: done, Outcome: outcome}
	}
	admitted := map[node.NodeID]time.Duration{4: 100 * ms}
	refusal := func(at time.Duration) sim.MemberRefusal { return sim.MemberRefusal{At: at, Kind: "add", Node: 4} }
	for _, c := range []struct {
		name string
		h    sim.History
		want int
	}{
		{"a repeat refused after the first copy was applied", sim.History{
			Ops: []sim.OpRecord{op("add-node", 90*ms, 130*ms, sim.OutcomeFailed)}, Admitted: admitted,
			MemberRefusals: []sim.MemberRefusal{refusal(120 * ms)}}, 1},
		{"a request refused before the change was applied by another", sim.History{
			Ops: []sim.OpRecord{op("add-node", 50*ms, 130*ms, sim.OutcomeFailed)}, Admitted: admitted,
			MemberRefusals: []sim.MemberRefusal{refusal(80 * ms)}}, 0},
		{"a refusal of a node removed by then", sim.History{
			Ops: []sim.OpRecord{op("add-node", 90*ms, 300*ms, sim.OutcomeFailed)}, Admitted: admitted,
			Removed:        map[node.NodeID]time.Duration{4: 200 * ms},
			MemberRefusals: []sim.MemberRefusal{refusal(250 * ms)}}, 0},
		{"a refusal of the other kind", sim.History{
			Ops: []sim.OpRecord{op("add-node", 90*ms, 130*ms, sim.OutcomeFailed)}, Admitted: admitted,
			MemberRefusals: []sim.MemberRefusal{{At: 120 * ms, Kind: "leave", Node: 4}}}, 0},
		{"an OK before anything was applied", sim.History{
			Ops: []sim.OpRecord{op("add-node", 50*ms, 80*ms, sim.OutcomeOK)}, Admitted: admitted}, 1},
		{"an OK after the change", sim.History{
			Ops: []sim.OpRecord{op("add-node", 50*ms, 130*ms, sim.OutcomeOK)}, Admitted: admitted}, 0},
		{"a remove-node answered OK with no leave applied", sim.History{
			Ops: []sim.OpRecord{op("remove-node", 50*ms, 130*ms, sim.OutcomeOK)}, Admitted: admitted}, 1},
	} {
		v := checkMembershipAnswers(&c.h)
		if len(v) != c.want {
			t.Errorf("%s: %d violations %v, want %d", c.name, len(v), v, c.want)
		}
		for _, x := range v {
			if x.Checker != "membership-answer" {
				t.Errorf("%s: checker %q", c.name, x.Checker)
			}
		}
	}
}
