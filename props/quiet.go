package props

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
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
// it granted after the consumer's last word runs out, and a lease ended
// otherwise (another consumer's ack of the message, a purge, the owner
// stepping back or recovering) says nothing of the consumer. So the
// check counts only deliveries whose leases surely ran out, from a lease
// after the first of them sent once every word the consumer sent has
// arrived, until the host is back: each owner then sends the dead
// connection at most one such delivery at a time, a lease apart, and
// from the second on a pause of at least a lease more. So no four of
// them, of one queue by one owner, fall within two leases (one pair
// closer than a lease is allowed, for a lease the check could not tell
// ended early). Sends are the simulator's ground truth.
func checkQuietSubscribers(ix *index) []sim.Violation {
	var out []sim.Violation
	var ends *leaseEnds
	for _, r := range ix.h.ClientRestarts {
		if r.Vanished == 0 || r.Lease <= 0 {
			continue
		}
		if ends == nil {
			ends = newLeaseEnds(ix)
		}
		heard, to := r.At+quietWordsLate, r.At+r.Vanished
		type feed struct {
			queue string
			owner node.NodeID
		}
		sent := make(map[feed][]time.Duration)
		from := make(map[feed]time.Duration) // a lease after the feed's first lapsed delivery
		for i := range ix.h.Sends {
			s := &ix.h.Sends[i]
			if s.Client != r.Client || s.Sent.At < heard || s.Sent.At >= to || !ends.lapsed(s, r.Lease) {
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

// leaseEnds is what else than a lapse may end a delivery's lease: an ack
// of its message by any consumer (acks settle by ID), a purge of its
// queue, or its owner stepping back or recovering.
type leaseEnds struct {
	ix     *index
	acks   map[wire.MessageID][]time.Duration // when acks of each message were sent
	purges map[string][]time.Duration         // when purges of each queue were sent
}

// newLeaseEnds gathers the acks and purges of ix's history.
func newLeaseEnds(ix *index) *leaseEnds {
	e := &leaseEnds{ix: ix, acks: make(map[wire.MessageID][]time.Duration), purges: make(map[string][]time.Duration)}
	for _, op := range ix.h.Ops {
		switch op.Kind {
		case "ack":
			e.acks[op.ID] = append(e.acks[op.ID], op.Invoked)
		case "purge":
			e.purges[op.Queue] = append(e.purges[op.Queue], op.Invoked)
		}
	}
	return e
}

// lapsed reports whether the lease of delivery s, lease long, surely ran
// out: nothing sent before its end could have ended it sooner, and its
// owner did not step back or recover around then. An owner that does not
// serve finds no lapse until it serves again, and a recovery then hands
// the lease back instead (seed 8533: an owner paused past its lease's end
// recovered 70 ms after it), so the owner's events are looked for until
// two leases and a second after the lease's end.
func (e *leaseEnds) lapsed(s *sim.DeliveryRecord, lease time.Duration) bool {
	end := s.Sent.At + lease
	early := func(at time.Duration) bool { return at <= end }
	if slices.ContainsFunc(e.acks[s.ID], early) ||
		slices.ContainsFunc(e.purges[s.Queue], func(at time.Duration) bool { return at >= s.Sent.At-time.Second && at <= end }) {
		return false
	}
	return !e.ix.ownerEventBetween(s.From, s.Queue, s.Sent.At, end+2*lease+time.Second)
}
