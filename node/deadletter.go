package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Dead-lettering. A queue created with a delivery limit moves a message
// that went out that many times without an ack to its dead-letter queue,
// so a message no consumer can handle stops going round. The move has
// three steps, and each survives the loss of the owner that took it:
//
//  1. The source owner appends a dead-letter record naming the message.
//     Every replica that applies it stops offering the message for
//     delivery, and it is not acked by anyone any more; it stays live
//     in the source queue until the move completes, so it is never in
//     neither queue.
//  2. Once the record is confirmed, the source owner asks the
//     dead-letter queue's owner to store the message under its own ID.
//     That store is deduplicated on the ID like a retried publish, so
//     asking again (a lost answer, a new source owner finishing what
//     its predecessor began) stores it once.
//  3. Once the store is confirmed, the source owner settles the message.
//
// A new source owner finds the messages of step 1 in the history it
// recovered and resumes their moves. The record is confirmed before the
// move starts, so no owner can deliver a message from the source queue
// after its dead-letter queue may hold it.
//
// The delivery count is the owner's own: a new owner starts every
// message's count again, as a restarted consumer would see it.

// deadLetterResend is how long a source owner waits for the dead-letter
// queue's answer before asking again.
const deadLetterResend = 250 * time.Millisecond

// deadLetterInFlightMax bounds the moves a source owner has asked for and
// not yet heard back about, so a burst of poison messages does not flood
// the dead-letter queue's owner.
const deadLetterInFlightMax = 64

// deadLetterMove is one message on its way to the dead-letter queue.
type deadLetterMove struct {
	id wire.MessageID
	// index is the dead-letter record's: the store is asked for only
	// once it is confirmed.
	index uint64
	// askedAt is when the store was last asked for; zero, never.
	askedAt time.Time
}

// checkDeadLetter reports why a create request's delivery limit cannot
// be taken.
func checkDeadLetter(m *wire.CreateQueue) error {
	if err := wire.CheckDeadLetter(m.Queue, m.DeadLetter, m.MaxDeliveries); err != nil {
		return err
	}
	if m.DeadLetter == "" {
		return nil
	}
	if err := ValidQueueName(m.DeadLetter); err != nil {
		return fmt.Errorf("dead-letter queue: %w", err)
	}
	return nil
}

// deadLetterOf returns the queue's dead-letter queue and delivery limit;
// an empty name means it has none.
func (n *Node) deadLetterOf(name string, inc uint64) (string, uint32) {
	if n.meta == nil || n.meta.state == nil {
		return "", 0
	}
	if q := n.meta.state.queues[name]; q != nil && q.Incarnation == inc {
		return q.DeadLetter, q.MaxDeliveries
	}
	return "", 0
}

// deadLetterDue reports whether a message whose lease just ended with it
// unsettled has used up its deliveries and must move instead of being
// offered again.
func (o *ownerState) deadLetterDue(m *message) bool {
	if !o.r.serving() {
		return false
	}
	dead, limit := o.r.n.deadLetterOf(o.r.name, o.r.inc)
	return dead != "" && m.attempts >= limit
}

// deadLetter starts moving m, whose lease has ended, to the dead-letter
// queue.
func (o *ownerState) deadLetter(m *message) {
	index := o.append(record{typ: recordDeadLetter, id: m.id})
	if index == 0 {
		return // the log failed: the process is halting
	}
	o.moves = append(o.moves, &deadLetterMove{id: m.id, index: index})
	o.r.n.emit(event.NewQueueDeadLetter(o.r.name, m.id.String(), m.attempts))
	if bugs.Active(bugs.DeadLetterTwice) {
		o.askMoves(o.r.n.env.Now()) // planted: asked before the record is confirmed
	}
}

// resumeMoves picks up, on an owner that just began serving, the moves
// the history it took over began: every message a dead-letter record
// names that is still live. Their records are confirmed, since the owner
// serves a history an exact quorum holds.
func (o *ownerState) resumeMoves() {
	o.moves = o.moves[:0]
	if o.state.dead == 0 {
		return
	}
	for _, m := range sortedMessages(o.state) {
		if m.dead {
			o.moves = append(o.moves, &deadLetterMove{id: m.id})
		}
	}
}

// askMoves asks the dead-letter queue's owner to store each confirmed
// move not asked for lately.
func (o *ownerState) askMoves(now time.Time) {
	if len(o.moves) == 0 || !o.r.serving() {
		return
	}
	n := o.r.n
	dead, _ := n.deadLetterOf(o.r.name, o.r.inc)
	q := n.meta.state.queues[dead]
	if dead == "" || q == nil || q.State == QueueDeleted || q.Owner == 0 {
		return // nowhere to go yet: the messages wait, counted in the depth
	}
	inFlight := 0
	for _, mv := range o.moves {
		if !mv.askedAt.IsZero() && now.Sub(mv.askedAt) < deadLetterResend {
			inFlight++
		}
	}
	for _, mv := range slices.Clone(o.moves) {
		if inFlight >= deadLetterInFlightMax {
			return
		}
		unconfirmed := mv.index > o.commit && !bugs.Active(bugs.DeadLetterTwice)
		if unconfirmed || (!mv.askedAt.IsZero() && now.Sub(mv.askedAt) < deadLetterResend) {
			continue
		}
		m := o.state.messages[mv.id]
		if m == nil {
			// Settled meanwhile: a purge took it. Nothing is left to move.
			o.moves = slices.DeleteFunc(o.moves, func(x *deadLetterMove) bool { return x == mv })
			continue
		}
		if !m.dead {
			panic(fmt.Sprintf("node: queue %s moves %s to %s, but it is not dead-lettered", o.r.name, mv.id, dead))
		}
		mv.askedAt = now
		inFlight++
		n.emit(event.NewQueueDeadLetterSent(o.r.name, mv.id.String(), dead, uint32(q.Owner)))
		ask := &wire.DeadLetter{Queue: dead, Source: o.r.name, ID: mv.id, Payload: m.payload}
		if q.Owner == n.cfg.ID {
			n.onDeadLetter(n.cfg.ID, ask)
		} else {
			n.env.Send(q.Owner, ask)
		}
	}
}

// onDeadLetter stores a message another queue's owner gave up on, as
// the owner of its dead-letter queue: once, under the message's ID.
func (n *Node) onDeadLetter(from NodeID, m *wire.DeadLetter) {
	refuse := func(st wire.Status, detail string) {
		n.answerDeadLetter(from, &wire.DeadLetterReply{Source: m.Source, ID: m.ID, Status: st, Detail: detail})
	}
	r := n.queues[m.Queue]
	switch {
	case r == nil || !r.serving():
		refuse(wire.StatusUnavailable, "this node does not serve queue "+m.Queue)
		return
	case len(m.Payload) > wire.MaxPayloadSize:
		refuse(wire.StatusTooLarge, fmt.Sprintf("payload of %d bytes exceeds %d", len(m.Payload), wire.MaxPayloadSize))
		return
	}
	o := r.own
	w := waiter{peer: from, source: m.Source, id: m.ID}
	if index, dup := o.state.publishedIndex(m.ID); dup {
		w.index = index // asked again: the first store stands
		o.park(w)
		return
	}
	// A node short of space still takes moves: like acks, they drain the
	// cluster (the message leaves its source queue once stored here), and
	// there are never more than the source queues hold. Refusing them
	// would leave the messages stuck, counted in no one's backlog but
	// the source's, until someone freed space by hand.
	w.index = o.append(record{typ: recordPublish, id: m.ID, payload: m.Payload})
	o.park(w)
}

// answerDeadLetter sends a dead-letter queue's answer to the source
// owner that asked, which may be this node.
func (n *Node) answerDeadLetter(to NodeID, m *wire.DeadLetterReply) {
	if to == n.cfg.ID {
		n.onDeadLetterReply(to, m)
		return
	}
	n.env.Send(to, m)
}

// onDeadLetterReply completes a move the dead-letter queue's owner
// confirmed by settling the message in its source queue. Any other
// answer leaves the move to be asked again.
func (n *Node) onDeadLetterReply(_ NodeID, m *wire.DeadLetterReply) {
	r := n.queues[m.Source]
	if r == nil || !r.serving() || m.Status != wire.StatusOK {
		return
	}
	o := r.own
	i := slices.IndexFunc(o.moves, func(mv *deadLetterMove) bool { return mv.id == m.ID })
	if i < 0 {
		return // answered already
	}
	o.moves = slices.Delete(o.moves, i, i+1)
	o.settling = append(o.settling, pendingSettle{id: m.ID, moved: true})
	n.scheduleFlush()
}
