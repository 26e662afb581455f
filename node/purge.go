package node

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// A purge removes every message a queue holds when its owner takes the
// request: ready, delayed and leased ones alike. It is one log record,
// replicated and confirmed like a publish, that settles every message
// published at or before its boundary, which the owner sets to the
// record just before it. Every replica that applies the record therefore
// settles exactly the messages that were live there, and messages
// published after the purge stay.
//
// A purged message counts as settled in every way: its ID stays in the
// deduplication window (a retried publish of it is not stored again: it
// is answered with the original's index while the window remembers the
// publish, then with the purge's), and an ack of it is answered, as
// the ack of a settled message is, once the purge is confirmed. A nack
// or an extension of it finds no lease.

// purgeState is what an owner keeps about its purges.
type purgeState struct {
	// held are the purges that arrived while a recovered owner's hold
	// was on (hold.go): they are written when it ends.
	held []heldPurge
	// unconfirmed is the index of the latest purge not yet confirmed;
	// only the planted bug purge-beyond-cut reads it.
	unconfirmed uint64
}

// heldPurge is a purge request waiting for the hold to end.
type heldPurge struct {
	conn  ConnID
	reqID uint64
	token wire.MessageID
}

// onPurge takes a purge on the queue's owner. A full disk does not
// refuse it: a purge frees space.
func (n *Node) onPurge(conn ConnID, m *wire.Purge) {
	if n.parkDuringFailover(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	if o.purgedAlready(conn, m.ReqID, m.Token) {
		return
	}
	o.endHoldIfDue()
	if o.hold.until != 0 {
		// The old owner may still hand out messages this purge removes
		// until its delivery lease has run out. Confirming the purge
		// before then would let a purged message be delivered after the
		// client heard it was gone, so the purge waits for the hold.
		o.purges.held = append(o.purges.held, heldPurge{conn: conn, reqID: m.ReqID, token: m.Token})
		return
	}
	o.purge(conn, m.ReqID, m.Token)
}

// purgedAlready answers a retried purge, one whose token this queue
// remembers, with the first one's index, so that a retry does not purge
// again what was published since. A retry of a purge still held is held
// with it and answered when it is written.
func (o *ownerState) purgedAlready(conn ConnID, reqID uint64, token wire.MessageID) bool {
	if token == (wire.MessageID{}) {
		return false
	}
	if index, ok := o.state.known.settleIndex(token); ok {
		o.wait(conn, reqID, index)
		return true
	}
	if slices.ContainsFunc(o.purges.held, func(p heldPurge) bool { return p.token == token }) {
		o.purges.held = append(o.purges.held, heldPurge{conn: conn, reqID: reqID, token: token})
		return true
	}
	return false
}

// purge writes a purge record and answers the request once it is
// confirmed. Every lease ends first: the messages they hold are being
// settled, and left on their subscriptions they would hold places in the
// subscribers' windows for good. A consumer still working on one finds
// its ack answered as that of a settled message.
func (o *ownerState) purge(conn ConnID, reqID uint64, token wire.MessageID) {
	if o.purgedAlready(conn, reqID, token) {
		return // a copy held with the first, now written
	}
	for _, s := range o.subs {
		for _, l := range slices.Clone(s.leases) {
			o.release(l, false)
		}
	}
	through := o.r.log.LastIndex()
	index := o.append(record{typ: recordPurge, through: through, id: token})
	if index != 0 {
		o.purges.unconfirmed = index
		o.r.n.emit(event.NewQueuePurgeWritten(o.r.name, token.String(), index, through))
	}
	o.wait(conn, reqID, index)
	o.pump()
}

// runHeldPurges writes the purges that waited for the hold, in arrival
// order, once it has ended.
func (o *ownerState) runHeldPurges() {
	held := o.purges.held
	o.purges.held = nil
	for _, p := range held {
		o.purge(p.conn, p.reqID, p.token)
	}
}

// refuseHeldPurges answers the purges still waiting for the hold of an
// owner that stopped serving: none was written, so the client may try
// again elsewhere.
func (o *ownerState) refuseHeldPurges() {
	for _, p := range o.purges.held {
		o.r.n.reply(p.conn, p.reqID, wire.StatusUnavailable, fmt.Sprintf("queue %s stopped serving here before the purge was written", o.r.name))
	}
	o.purges.held = nil
}

// applyPurge settles, for the purge record at index, every unsettled
// message published at or before through, in publish order, so every
// replica lists them in its window alike. Delayed ones leave the delay
// list in one pass rather than one search each.
func (s *queueState) applyPurge(index, through uint64, at int64) {
	for _, m := range sortedMessages(s) {
		if m.index > through {
			break
		}
		delete(s.messages, m.id)
		m.gone = true
		s.messageBytes -= messageSize(m)
		if m.dead {
			s.dead-- // a purge ends a move to the dead-letter queue too
		}
		s.known.note(m.id, index, true)
		s.remember(m.id, index, at, true)
		if m.inHeap {
			m.inHeap = false // the heap drops it lazily, or compactReady does
			s.deadInHeap++
		}
	}
	s.delayed = slices.DeleteFunc(s.delayed, func(m *message) bool { return m.index <= through })
	if s.deadInHeap > 1024 && s.deadInHeap > s.ready.Len()/2 {
		s.compactReady()
	}
}

// purgeBeyondCut is the planted bug purge-beyond-cut: at the end of each
// turn, while a purge waits for its confirmation, the owner also settles
// every message published after it, as if the purge's cut were where it
// is confirmed rather than where it was written.
func (o *ownerState) purgeBeyondCut() {
	cut := o.purges.unconfirmed
	if !bugs.Active(bugs.PurgeBeyondCut) || cut == 0 || !o.r.serving() {
		return
	}
	if cut <= o.commit {
		o.purges.unconfirmed = 0
		return
	}
	all := sortedMessages(o.state)
	at, _ := slices.BinarySearchFunc(all, cut, func(m *message, i uint64) int { return cmp.Compare(m.index, i+1) })
	later := all[at:]
	if len(later) == 0 {
		return
	}
	ids := make([]wire.MessageID, len(later))
	for i, m := range later {
		if m.lease != nil {
			o.release(m.lease, false)
		}
		ids[i] = m.id
	}
	o.append(record{typ: recordSettles, ids: ids})
}
