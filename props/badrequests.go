package props

import (
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkBadRequests holds every answer to a request no node may take (see
// the simulator's bad requests: a queue name outside the alphabet, a
// policy that does not exist, a window, delay, bound or node out of
// range) to be bad-request (bad-request-refused). A node checks such
// input before it looks anything up, so no state of the cluster, no
// failover and no partition excuses another answer; the one exception
// is a node that has not started, which answers every request
// unavailable before reading it. A node that took such a request would
// store, replicate or act on what the protocol never meant to see.
func checkBadRequests(h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, b := range h.BadRequests {
		switch {
		case len(out) == maxReports:
			return out
		case !b.Answered || b.Status == wire.StatusBadRequest:
		case b.Status == wire.StatusUnavailable && b.Detail == node.StartingDetail:
		default:
			out = append(out, safety("bad-request-refused", "a %s request by client %d to %s at %v was answered %s at %v (%q); want %s",
				b.Kind, b.Client, b.Node, b.Sent, b.Status, b.AnsweredAt, b.Detail, wire.StatusBadRequest))
		}
	}
	return out
}
