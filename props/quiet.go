package props

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// quietWordsLate bounds how long after a consumer's host vanished a
// request it sent before may still reach a node (the network's slowest
// tail and a latency spike): a word that arrives gives the subscription
// its window back.
const quietWordsLate = time.Second

// quietTickSlack is the owner's tick, by which it finds a lapsed lease
// late.
const quietTickSlack = 100 * time.Millisecond

// checkQuietSubscribers: a consumer whose host vanished (its connections
// closed without a word to the nodes, sim.FaultVanishConsumer) is held
// back once its leases run out unanswered, so that the messages do not
// wait lease after lease for no one. An owner cannot know before a lease
// it granted after the consumer's last word runs out: so from a lease
// after the first delivery it sends the dead connection once every word
// the consumer sent has arrived, until the host is back, each owner sends
// it at most one delivery at a time, a lease apart, and from the second
// unanswered one on a pause of at least a lease more. So no four of its
// deliveries of one queue by one owner fall within two leases; one pair
// closer than a lease is allowed, for a delivery an owner gave back
// itself (a recovery starting) and handed out again at once. Sends are
// the simulator's ground truth.
func checkQuietSubscribers(ix *index) []sim.Violation {
	var out []sim.Violation
	for _, r := range ix.h.ClientRestarts {
		if r.Vanished == 0 || r.Lease <= 0 {
			continue
		}
		heard, to := r.At+quietWordsLate, r.At+r.Vanished
		type feed struct {
			queue string
			owner node.NodeID
		}
		sent := make(map[feed][]time.Duration)
		from := make(map[feed]time.Duration) // a lease after the feed's first silent delivery
		for _, s := range ix.h.Sends {
			if s.Client != r.Client || s.Sent.At < heard || s.Sent.At >= to {
				continue
			}
			k := feed{s.Queue, s.From}
			if _, ok := from[k]; !ok {
				from[k] = s.Sent.At + r.Lease + quietTickSlack
			}
			if s.Sent.At >= from[k] {
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
