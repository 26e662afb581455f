package props

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// quietGraceLeases and quietGraceSlack bound how long after a consumer's
// host vanished its owner may still fill the subscription's window: the
// leases it held may have been extended (by up to three and a half leases,
// the workload's longest) by a request still on its way, the messages
// they let go may go out to it once more in full, and those must run out
// unanswered before the owner knows the consumer is quiet.
const (
	quietGraceLeases = 5
	quietGraceSlack  = 500 * time.Millisecond
)

// checkQuietSubscribers: a consumer whose host vanished (its connections
// closed without a word to the nodes, sim.FaultVanishConsumer) is held
// back once its leases run out unanswered, so that the messages do not
// wait lease after lease for no one: from a grace after the host vanished
// until it is back, each owner sends the dead connection at most one
// delivery at a time, a lease apart, and from the second unanswered one
// on a pause of at least a lease more. So no four of its deliveries of
// one queue by one owner fall within two leases; one pair closer than a
// lease is allowed, for a delivery an owner gave back itself (a recovery
// starting) and handed out again at once. Sends are the simulator's
// ground truth.
func checkQuietSubscribers(ix *index) []sim.Violation {
	var out []sim.Violation
	for _, r := range ix.h.ClientRestarts {
		if r.Vanished == 0 || r.Lease <= 0 {
			continue
		}
		from, to := r.At+quietGraceLeases*r.Lease+quietGraceSlack, r.At+r.Vanished
		type feed struct {
			queue string
			owner node.NodeID
		}
		sent := make(map[feed][]time.Duration)
		for _, s := range ix.h.Sends {
			if s.Client == r.Client && s.Sent.At >= from && s.Sent.At < to {
				k := feed{s.Queue, s.From}
				sent[k] = append(sent[k], s.Sent.At)
			}
		}
		keys := slices.SortedFunc(maps.Keys(sent), func(a, b feed) int {
			return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.owner, b.owner))
		})
		for _, k := range keys {
			at := sent[k]
			for i := 0; i+3 < len(at); i++ {
				if at[i+3]-at[i] >= 2*r.Lease {
					continue
				}
				if len(out) < maxReports {
					out = append(out, liveness("quiet-subscriber",
						"consumer %d's host vanished at %v for %v; %s kept sending it deliveries of %s: four between %v and %v, within two leases (%v)",
						r.Client, r.At, r.Vanished, k.owner, k.queue, at[i], at[i+3], r.Lease))
				}
				break
			}
		}
	}
	return out
}
