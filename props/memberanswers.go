package props

import (
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// checkMembershipAnswers holds the answers to add-node and remove-node
// requests to what the metadata applied (membership-answer). An operator
// acts on them: told that an admission failed, one starts the node
// elsewhere or asks again under another ID; told that a removal failed,
// one keeps the machine. The simulated clients always admit a node at
// the same address, so asking again is asking for the same change. So:
//
//   - a request answered as failed must not find its change made: no
//     node had applied the node's admission (or its leave) by the
//     answer, unless the node had also been removed by then (a removed
//     node is rightly no member to admit again, and asked to remove a
//     node that is gone, the metadata rightly says it is not a member).
//     A request repeated after its first copy was applied, or whose
//     first attempt was applied but whose answer was lost, must be
//     answered as the change it already is;
//   - a request answered OK must have taken effect by the answer: some
//     node, the leader that answered among them, had applied it.
func checkMembershipAnswers(h *sim.History) []sim.Violation {
	var out []sim.Violation
	for i := range h.Ops {
		op := &h.Ops[i]
		var applied map[node.NodeID]time.Duration
		switch op.Kind {
		case "add-node":
			applied = h.Admitted
		case "remove-node":
			applied = h.Leaving
		default:
			continue
		}
		at, done := applied[op.Node]
		done = done && at <= op.Done
		removedAt, removed := h.Removed[op.Node]
		removed = removed && removedAt <= op.Done
		switch {
		case len(out) == maxReports:
			return out
		case op.Outcome == sim.OutcomeFailed && done && !removed:
			out = append(out, safety("membership-answer", "%s %s by client %d was answered failed (%s) at %v, though its change was applied at %v",
				op.Kind, op.Node, op.Client, op.Status, op.Done, at))
		case op.Outcome == sim.OutcomeOK && !done:
			out = append(out, safety("membership-answer", "%s %s by client %d was answered OK at %v, though no node had applied its change by then",
				op.Kind, op.Node, op.Client, op.Done))
		}
	}
	return out
}
