package props

import (
	"cmp"
	"slices"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkDeliveryCounts holds every delivery's attempt number to the sends
// behind it: an owner may count a message's deliveries from what its
// predecessors told their followers (a count heard may be missed, and
// then the message goes out a time or two more than its limit), but it
// may never claim more deliveries than owners made. A delivery that goes
// out as attempt n needs n sends of its message from its queue, counting
// those to connections that were gone, by then. A count made up, doubled
// or carried to the wrong message would dead-letter a message early: it
// would leave delivery while a consumer might still have handled it.
func checkDeliveryCounts(ix *index) []sim.Violation {
	type key struct {
		queue string
		id    wire.MessageID
	}
	sends := make(map[key][]*sim.DeliveryRecord)
	var order []key
	for _, list := range [][]sim.DeliveryRecord{ix.h.Sends, ix.h.UnroutedSends} {
		for i := range list {
			d := &list[i]
			k := key{d.Queue, d.ID}
			if _, seen := sends[k]; !seen {
				order = append(order, k)
			}
			sends[k] = append(sends[k], d)
		}
	}
	var out []sim.Violation
	for _, k := range order {
		list := sends[k]
		slices.SortStableFunc(list, func(a, b *sim.DeliveryRecord) int { return cmp.Compare(a.Sent.At, b.Sent.At) })
		for i, d := range list {
			// Sends at the same instant count for each other: their order
			// within it is not recorded across the two lists.
			made := i + 1
			for made < len(list) && list[made].Sent.At == d.Sent.At {
				made++
			}
			if int(d.Attempt) > made && len(out) < maxReports {
				out = append(out, safety("delivery-count", "%s went out from %s by %s at %v as attempt %d, after only %d sends of it from that queue%s",
					k.id, k.queue, d.From, d.Sent.At, d.Attempt, made, ix.life(k.id)))
			}
		}
	}
	return out
}
