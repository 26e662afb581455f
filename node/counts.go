package node

import (
	"cmp"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Delivery counts live in the owner's memory: recording every delivery in
// the log would cost a record and a sync per message sent. They must
// outlive the owner, though: a consumer reads a delivery's count as its
// attempt (SQS's ApproximateReceiveCount), and a queue with a delivery
// limit moves a message by it, so a count started again at 1 would send
// a message that kills its consumers limit times more after every
// failover. So an owner tells its followers, with its next append to
// each, the count of every message it sent since (Append.Delivered); a
// follower keeps the latest count it heard per live message, answers a
// seal with them, and a recovered owner starts from the highest count
// any of its sealed replicas reported. A count heard only by a follower
// outside the seal quorum, or lost with a dropped frame, is missed, and
// one lowered by a hand-back (lease.go) may be missed the other way;
// either way a count never exceeds the sends the owners made (the
// checker delivery-count holds them to that), and a failover costs at
// most the deliveries of one append interval.

// countHintsMax bounds the counts a follower keeps for one queue. Counts
// of settled messages are dropped as their settles arrive, so the bound
// is met only by a backlog of that many messages sent and not yet
// settled; past it, counts of messages not kept already are not kept.
const countHintsMax = 4 * wire.MaxDeliveryCounts

// noteDelivered queues m's new count for every follower's next append;
// the owner calls it for each delivery (pump) and for each message a
// consumer hands back unworked, whose count goes down (lease.go).
// A follower that hears nothing for long (it is down or cut off) keeps at
// most wire.MaxDeliveryCounts of them waiting.
func (o *ownerState) noteDelivered(m *message) {
	for _, f := range o.followers {
		if len(f.counts) < wire.MaxDeliveryCounts {
			f.counts = append(f.counts, wire.DeliveryCount{ID: m.id, Count: m.attempts})
		}
	}
}

// hearCounts keeps the counts an owner's append carried. The latest heard
// wins: an owner's appends to a follower arrive in the order sent, and a
// count goes down when a consumer hands its message back unworked.
func (f *followerState) hearCounts(counts []wire.DeliveryCount) {
	if len(counts) == 0 {
		return
	}
	if f.counts == nil {
		f.counts = make(map[wire.MessageID]uint32)
	}
	for _, c := range counts {
		if _, ok := f.counts[c.ID]; !ok && len(f.counts) >= countHintsMax {
			continue
		}
		f.counts[c.ID] = c.Count
	}
}

// forgetCounts drops the counts of the messages rec takes out of the
// queue: a settle, a dead-letter move, or a purge (which settles an
// unknown set, so every count goes; the messages left are counted again
// as they are sent).
func (f *followerState) forgetCounts(rec record) {
	if len(f.counts) == 0 {
		return
	}
	switch rec.typ {
	case recordSettle, recordDeadLetter:
		delete(f.counts, rec.id)
	case recordSettles:
		for _, id := range rec.ids {
			delete(f.counts, id)
		}
	case recordPurge:
		clear(f.counts)
	}
}

// heardCounts lists the counts this follower kept, in ID order, at most
// wire.MaxDeliveryCounts of them, for a seal answer.
func (f *followerState) heardCounts() []wire.DeliveryCount {
	if len(f.counts) == 0 {
		return nil
	}
	ids := slices.SortedFunc(maps.Keys(f.counts), compareMessageIDs)
	out := make([]wire.DeliveryCount, 0, min(len(ids), wire.MaxDeliveryCounts))
	for _, id := range ids[:min(len(ids), wire.MaxDeliveryCounts)] {
		out = append(out, wire.DeliveryCount{ID: id, Count: f.counts[id]})
	}
	return out
}

func compareMessageIDs(a, b wire.MessageID) int {
	return cmp.Or(cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Seq, b.Seq))
}

// sealCounts are the counts a replica sealed at a new epoch answers with:
// those its release hands over, else, if it was serving, those it holds
// as the owner it stops being, else those it heard as a follower.
func (r *replica) sealCounts(released []wire.DeliveryCount) []wire.DeliveryCount {
	switch {
	case len(released) > 0:
		return released
	case r.serving():
		return r.own.deliveryCounts()
	}
	return r.follow.heardCounts()
}

// carryCounts merges the counts of one seal answer into those a
// candidate keeps for its activation, taking the highest per message.
func (o *ownerState) carryCounts(counts []wire.DeliveryCount) {
	if len(counts) == 0 {
		return
	}
	if o.carried == nil {
		o.carried = make(map[wire.MessageID]uint32)
	}
	for _, c := range counts {
		if bugs.Active(bugs.DeliveryCountsSummed) {
			o.carried[c.ID] += c.Count // planted: the answers' counts are added up
			continue
		}
		o.carried[c.ID] = max(o.carried[c.ID], c.Count)
	}
}

// takeCarriedCounts raises the recovered state's counts, at activation,
// to the highest its seal answers and its own replica reported, and
// reports how many it raised. The replica's own counts are spent: from
// now on this owner counts.
func (o *ownerState) takeCarriedCounts() {
	o.carryCounts(o.r.follow.heardCounts())
	o.r.follow.counts = nil
	raised := 0
	for _, id := range slices.SortedFunc(maps.Keys(o.carried), compareMessageIDs) {
		if m := o.state.messages[id]; m != nil && m.attempts < o.carried[id] {
			m.attempts = o.carried[id]
			raised++
		}
	}
	o.carried = nil
	if raised > 0 {
		o.r.n.emit(event.NewQueueCountsCarried(o.r.name, o.r.epoch, raised))
	}
}
