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
//   - a request answered as failed must not have been refused because
//     its change was made already: if every refusal of the node's
//     admission (or leave) that a node applied while the request was
//     out came at or after the change's first application, and the node
//     had not been removed by then (a removed node is rightly no member
//     to admit, and rightly not one to remove), the request was refused
//     for what it asked for. That is the repeat of a request whose
//     first copy was applied, or the retry of an attempt applied whose
//     answer was lost. A refusal applied before the change is a refusal
//     of its own time: two copies of a leave asked while the cluster is
//     too small to let a node go can be refused and then, once a node
//     has joined, taken;
//   - a request answered OK must have taken effect by the answer: some
//     node, the leader that answered among them, had applied it.
func checkMembershipAnswers(h *sim.History) []sim.Violation {
	var out []sim.Violation
	for i := range h.Ops {
		op := &h.Ops[i]
		var applied map[node.NodeID]time.Duration
		kind := ""
		switch op.Kind {
		case "add-node":
			applied, kind = h.Admitted, "add"
		case "remove-node":
			applied, kind = h.Leaving, "leave"
		default:
			continue
		}
		at, made := applied[op.Node]
		switch {
		case len(out) == maxReports:
			return out
		case op.Outcome == sim.OutcomeFailed && made && refusedAsMade(h, op, kind, at):
			out = append(out, safety("membership-answer", "%s %s by client %d was answered failed (%s) at %v, refused after its change was applied at %v",
				op.Kind, op.Node, op.Client, op.Status, op.Done, at))
		case op.Outcome == sim.OutcomeOK && (!made || at > op.Done):
			out = append(out, safety("membership-answer", "%s %s by client %d was answered OK at %v, though no node had applied its change by then",
				op.Kind, op.Node, op.Client, op.Done))
		}
	}
	return out
}

// refusedAsMade reports whether every refusal of op's change applied
// while op was out came at or after made, the change's first
// application, while op's node was still a member; and there was one.
func refusedAsMade(h *sim.History, op *sim.OpRecord, kind string, made time.Duration) bool {
	removedAt, removed := h.Removed[op.Node]
	seen := false
	for _, r := range h.MemberRefusals {
		if r.Kind != kind || r.Node != op.Node || r.At < op.Invoked || r.At > op.Done {
			continue
		}
		if r.At < made || removed && removedAt <= r.At {
			return false
		}
		seen = true
	}
	return seen
}
