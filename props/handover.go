package props

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// servingSince is one node becoming a queue's serving owner.
type servingSince struct {
	at    time.Duration
	epoch uint64
}

// ownerEpochs tells, for a delivery an owner sent, the epoch it was
// serving in: its latest activation for the queue at or before the send.
type ownerEpochs map[ownerKey][]servingSince

type ownerKey struct {
	node  node.NodeID
	queue string
}

func newOwnerEpochs(h *sim.History) ownerEpochs {
	oe := make(ownerEpochs)
	for _, e := range h.NodeEvents {
		if e.Name == event.QueueActive {
			k := ownerKey{e.Node, e.Queue}
			oe[k] = append(oe[k], servingSince{at: e.At, epoch: e.Epoch})
		}
	}
	return oe
}

// epochOf returns the epoch d's sender served in when it sent d, or 0 if
// it had never been activated (which the activation checker reports).
func (oe ownerEpochs) epochOf(d *sim.DeliveryRecord) uint64 {
	var epoch uint64
	for _, a := range oe[ownerKey{d.From, d.Queue}] {
		if a.at > d.Sent.At {
			break
		}
		epoch = a.epoch
	}
	return epoch
}

// checkDeliveryHandover: once an owner of a newer epoch has sent a
// message, no owner of an older epoch sends it again. An old owner cut
// off from its replicas may go on delivering until its delivery lease
// runs out; the owner that recovers the queue must hold back the
// messages it took over until then, and deliver at once only what was
// published to it. Sends are the simulator's ground truth, in send order.
func checkDeliveryHandover(ix *index) []sim.Violation {
	oe := newOwnerEpochs(ix.h)
	type newest struct {
		send  *sim.DeliveryRecord
		epoch uint64
	}
	// A message moved to a dead-letter queue keeps its ID there, where
	// epochs count afresh: sends are compared within one queue.
	type sent struct {
		queue string
		id    wire.MessageID
	}
	seen := make(map[sent]newest)
	var out []sim.Violation
	for i := range ix.h.Sends {
		d := &ix.h.Sends[i]
		k := sent{d.Queue, d.ID}
		epoch, prev := oe.epochOf(d), seen[k]
		if epoch < prev.epoch && len(out) < maxReports {
			out = append(out, safety("delivery-handover",
				"%s was sent by %s (epoch %d) at %v, after %s (epoch %d) had sent it at %v%s",
				d.ID, d.From, epoch, d.Sent, prev.send.From, prev.epoch, prev.send.Sent, ix.life(d.ID)))
		}
		if epoch > prev.epoch {
			seen[k] = newest{d, epoch}
		}
	}
	return out
}
