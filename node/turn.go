package node

import (
	"fmt"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// An owner works in turns. Requests that arrive close together (what the
// environment delivers before the node's flush timer, armed with no
// delay, fires) share the work a request used to do alone: the acks of a
// turn are written as one settles record, and new records go to the
// followers in one replication page per turn instead of one per record.
// Nothing is confirmed before it was written, synced and replicated as
// before; a turn only groups the writing and the sending.

// timerFlush ends the turn: it writes the pending acks, replicates, and
// hands out the deliveries a bounded pump left undone.
const timerFlush TimerKind = 5

// pendingSettle is an ack taken this turn, answered once the record that
// settles its message is confirmed; or, moved, the settle of a message
// its dead-letter queue now holds, which no client waits for.
type pendingSettle struct {
	conn  ConnID
	reqID uint64
	id    wire.MessageID
	// msg is the message the ack or the move found unsettled, so the end
	// of the turn need not look it up again in a map of the whole
	// backlog; nil for a move of a message that was already settled.
	msg   *message
	moved bool
}

// scheduleFlush arms the flush timer, once per turn.
func (n *Node) scheduleFlush() {
	if !n.flushScheduled {
		n.flushScheduled = true
		n.env.After(0, Timer{Kind: timerFlush})
	}
}

// onFlushTimer ends the turn of every queue this node owns.
func (n *Node) onFlushTimer() {
	n.flushScheduled = false
	for _, name := range n.names {
		if r := n.queues[name]; r.own != nil {
			r.own.flush()
		}
	}
}

// pumpSoon asks for the deliveries pump left undone to go out at the end
// of the turn.
func (o *ownerState) pumpSoon() {
	o.pumpPending = true
	o.r.n.scheduleFlush()
}

// replicateSoon asks for the new records to go to the followers at the
// end of the turn.
func (o *ownerState) replicateSoon() {
	o.replicatePending = true
	o.r.n.scheduleFlush()
}

// settleSoon takes an ack of an unsettled message whose lease was already
// released; the record that settles it is written at the end of the turn.
func (o *ownerState) settleSoon(conn ConnID, reqID uint64, msg *message) {
	o.settling = append(o.settling, pendingSettle{conn: conn, reqID: reqID, id: msg.id, msg: msg})
	o.r.n.scheduleFlush()
}

// flush ends this owner's turn.
func (o *ownerState) flush() {
	o.purgeBeyondCut()
	if len(o.settling) > 0 {
		o.writeSettles()
	}
	if o.replicatePending {
		o.replicatePending = false
		o.replicate()
	}
	if o.handoff != nil {
		o.advanceHandoff()
	}
	if o.pumpPending {
		o.pumpPending = false
		o.pump()
	}
}

// writeSettles writes the turn's acks as one record and parks each ack
// until that record is confirmed. An owner that stopped serving during
// the turn wrote none of them, and says so: the client may try again.
func (o *ownerState) writeSettles() {
	pending := o.settling
	o.settling = nil
	if !o.r.serving() {
		for _, p := range pending {
			if !p.moved {
				o.r.n.reply(p.conn, p.reqID, wire.StatusUnavailable, fmt.Sprintf("queue %s stopped serving here before the ack was written", o.r.name))
			}
		}
		return
	}
	// Each message is settled once, however many acks of it the turn
	// took: the first marks it, and the marks are cleared at the end.
	ids := make([]wire.MessageID, 0, len(pending))
	msgs := make([]*message, 0, len(pending))
	for _, p := range pending {
		if m := p.msg; m != nil && !m.gone && !m.settling {
			m.settling = true
			ids, msgs = append(ids, p.id), append(msgs, m)
		}
	}
	defer func() {
		for _, m := range msgs {
			m.settling = false
		}
	}()
	if bugs.Active(bugs.AckBatchDropsOne) && len(ids) > 1 {
		ids = ids[:len(ids)-1]
	}
	// A message acked while it waited, ready, for its next delivery (its
	// earlier lease had expired) may have gone out again under a new
	// lease before the turn ended. Settling it ends that lease too: left
	// on its subscription it would never be settled or expire, and would
	// hold a place in the subscriber's window for good.
	for _, m := range msgs[:len(ids)] {
		if l := m.lease; l != nil {
			o.release(l, false)
		}
	}
	index := uint64(0)
	if len(ids) > 0 {
		index = o.append(record{typ: recordSettles, ids: ids})
	}
	var written []waiter
	for _, p := range pending {
		if p.moved {
			continue
		}
		if p.msg.settling {
			written = append(written, waiter{conn: p.conn, reqID: p.reqID, index: index})
			continue
		}
		// Settled before this turn ended: an ack is idempotent, and its
		// answer waits for the record that settled the message.
		if at, ok := o.state.known.settleIndex(p.id); ok {
			o.wait(p.conn, p.reqID, at)
			continue
		}
		o.r.n.reply(p.conn, p.reqID, wire.StatusNotLeased, "no unsettled message "+p.id.String())
	}
	o.parkAll(written)
}

// settlingCount counts the distinct messages acked this turn that are
// still unsettled: the depth counts them as neither ready nor leased.
func (o *ownerState) settlingCount() int {
	seen := make(map[wire.MessageID]bool, len(o.settling))
	for _, p := range o.settling {
		if m, live := o.state.messages[p.id]; live && !m.delayed && !m.dead && m.lease == nil {
			seen[p.id] = true
		}
	}
	return len(seen)
}
