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
//     That store is deduplicated on the ID like a retried publish, and
//     the dead-letter queue also remembers the move itself until the
//     source settled it (movedin.go), so asking again (a lost answer, a
//     new source owner finishing what its predecessor began, however
//     long after) stores it once.
//  3. Once the store is confirmed, the source owner settles the message.
//
// A new source owner finds the messages of step 1 in the history it
// recovered and resumes their moves. The record is confirmed before the
// move starts, so no owner can deliver a message from the source queue
// after its dead-letter queue may hold it.
//
// The delivery count is the owner's own: a new owner starts every
// message's count again, as a restarted consumer would see it.
//
// The setting may change while the queue lives (cmdSetDeadLetter, set
// through SetQueueOptions): a limit set, raised, lowered or removed, or
// another dead-letter queue named. The owner keeps no copy of it: it
// reads the metadata each time a lease ends, so a change counts from the
// next lease that ends after this node applied it, and a message already
// past a new, lower limit moves when its current delivery ends. A move
// already begun is not the setting's any more: its record names the
// queue it goes to, and it finishes there even if the limit was removed
// or another queue named meanwhile. Sending it elsewhere could store it
// twice (the first queue may hold it already, its answer lost), and
// handing it back to delivery could deliver a message that queue holds;
// finishing the move can do neither. Records from before records named
// the queue go to the queue's current dead-letter queue, and wait for
// one to be set if there is none.

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
	// to is the dead-letter queue its record named; empty, a record from
	// before records named one (the queue's current one is asked).
	to string
	// index is the dead-letter record's: the store is asked for only
	// once it is confirmed, and the index names the move to the
	// dead-letter queue. Zero for a move resumed from a checkpoint
	// written before checkpoints kept it.
	index uint64
	// askedAt is when the store was last asked for; zero, never.
	askedAt time.Time
}

// checkDeadLetter reports why queue cannot take deadLetter and
// maxDeliveries as its delivery limit, at creation or later.
func checkDeadLetter(queue, deadLetter string, maxDeliveries uint32) error {
	if err := wire.CheckDeadLetter(queue, deadLetter, maxDeliveries); err != nil {
		return err
	}
	if deadLetter == "" {
		return nil
	}
	if err := ValidQueueName(deadLetter); err != nil {
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

// deliveryLimit is this owner's queue's dead-letter queue and delivery
// limit, or a limit of 0 if it has none: the metadata accepts a limit
// only with a dead-letter queue to move to (wire.CheckDeadLetter).
func (o *ownerState) deliveryLimit() (string, uint32) {
	dead, limit := o.r.n.deadLetterOf(o.r.name, o.r.inc)
	if dead == "" {
		return "", 0
	}
	return dead, limit
}

// deadLetterDue reports whether a message whose lease just ended with it
// unsettled has used up its deliveries and must move instead of being
// offered again.
func (o *ownerState) deadLetterDue(m *message) bool {
	if !o.r.serving() {
		return false
	}
	_, limit := o.deliveryLimit()
	return limit > 0 && m.attempts >= limit
}

// deadLetter starts moving m, whose lease has ended, to the dead-letter
// queue.
func (o *ownerState) deadLetter(m *message) {
	to, _ := o.r.n.deadLetterOf(o.r.name, o.r.inc)
	index := o.append(record{typ: recordDeadLetter, id: m.id, to: to})
	if index == 0 {
		return // the log failed: the process is halting
	}
	o.moves = append(o.moves, &deadLetterMove{id: m.id, to: to, index: index})
	o.r.n.emit(event.NewQueueDeadLetter(o.r.name, m.id.String(), m.attempts))
	if bugs.Active(bugs.DeadLetterTwice) {
		o.askMoves(o.r.n.env.Now()) // planted: asked before the record is confirmed
	}
	o.r.n.env.Boundary("deadletter.after.record")
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
			o.moves = append(o.moves, &deadLetterMove{id: m.id, to: m.deadTo, index: m.deadIndex})
		}
	}
}

// askMoves asks the dead-letter queue's owner to store each confirmed
// move not asked for lately.
func (o *ownerState) askMoves(now time.Time) {
	if len(o.moves) == 0 || !o.r.delivering() {
		return
	}
	o.markSettledMoves()
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
		if o.askMove(mv, m, now) {
			inFlight++
		}
	}
}

// askMove asks the owner of mv's dead-letter queue to store m, and
// reports whether it did: a queue that does not exist (yet, or any
// more) or has no owner leaves the message waiting, counted in the
// depth.
func (o *ownerState) askMove(mv *deadLetterMove, m *message, now time.Time) bool {
	n := o.r.n
	dead := mv.to
	if dead == "" {
		dead, _ = n.deadLetterOf(o.r.name, o.r.inc)
	}
	q := n.meta.state.queues[dead]
	if dead == "" || q == nil || q.State == QueueDeleted || q.Owner == 0 {
		return false
	}
	if !m.dead {
		panic(fmt.Sprintf("node: queue %s moves %s to %s, but it is not dead-lettered", o.r.name, mv.id, dead))
	}
	mv.askedAt = now
	n.emit(event.NewQueueDeadLetterSent(o.r.name, mv.id.String(), dead, uint32(q.Owner)))
	ask := &wire.DeadLetter{Queue: dead, Source: o.r.name, ID: mv.id, Payload: m.payload}
	if mv.index != 0 {
		ask.SourceIncarnation, ask.SourceIndex, ask.SettledThrough = o.r.inc, mv.index, o.movesSettled
	}
	if q.Owner == n.cfg.ID {
		n.onDeadLetter(n.cfg.ID, ask)
	} else {
		n.env.Send(q.Owner, ask)
	}
	return true
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
	source := moveSource{queue: m.Source, inc: m.SourceIncarnation}
	index, known, stale := o.state.movedInIndex(source, m.ID, m.SourceIndex)
	if bugs.Active(bugs.DeadLetterForgetsMove) {
		known, stale = false, false // planted: the window alone deduplicates
	}
	if m.SourceIndex != 0 && stale {
		// The source settled this move before it sent a later ask: this
		// one was delayed on the way, or comes from an owner that lost
		// the source queue. Stored now, the message would be stored twice.
		refuse(wire.StatusBadRequest, fmt.Sprintf("queue %s settled the move of %s already", m.Source, m.ID))
		return
	}
	if !known {
		index, known = o.state.publishedIndex(m.ID)
	} else if _, inWindow := o.state.publishedIndex(m.ID); !inWindow {
		// Only the ledger still knows this move: without it the message
		// would be stored a second time.
		n.emit(event.NewQueueMoveRemembered(m.Queue, m.ID.String(), m.Source))
	}
	if known {
		w.index = index // asked again: the first store stands
		o.park(w)
		return
	}
	// A node short of space still takes moves: like acks, they drain the
	// cluster (the message leaves its source queue once stored here), and
	// there are never more than the source queues hold. Refusing them
	// would leave the messages stuck, counted in no one's backlog but
	// the source's, until someone freed space by hand.
	stored := record{typ: recordPublish, id: m.ID, payload: m.Payload}
	if m.SourceIndex != 0 {
		stored.typ = recordMovedIn
		stored.from = moveOrigin{queue: m.Source, inc: m.SourceIncarnation, index: m.SourceIndex, settledThrough: m.SettledThrough}
	}
	w.index = o.append(stored)
	o.park(w)
}

// markSettledMoves raises the settled-through mark asks carry, when it
// can be read off this owner's state: only while everything appended is
// confirmed, so that no settle it counts can be lost to a failover. Every
// dead-letter record still unsettled then is a move in o.moves, or one
// answered whose settle waits in o.settling, so the mark is one below the
// lowest of those (or the commit index, with none). Between such moments
// the last mark stands: a confirmed settle stays confirmed.
func (o *ownerState) markSettledMoves() {
	if o.state.applied != o.commit {
		return
	}
	mark := o.commit
	lower := func(index uint64) {
		if index == 0 {
			mark = 0 // a move from an old checkpoint: its index is unknown
		} else {
			mark = min(mark, index-1)
		}
	}
	for _, mv := range o.moves {
		lower(mv.index)
	}
	for _, p := range o.settling {
		if m := o.state.messages[p.id]; p.moved && m != nil {
			lower(m.deadIndex)
		}
	}
	o.movesSettled = max(o.movesSettled, mark)
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
	o.settling = append(o.settling, pendingSettle{id: m.ID, msg: o.state.messages[m.ID], moved: true})
	n.scheduleFlush()
}
