package node

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// defaultLease is the visibility timeout when a subscriber names none.
const defaultLease = 30 * time.Second

// liveQueue routes a request for an existing queue: it answers
// not-owner (naming the owner), no-queue or unavailable itself and returns
// nil, or returns the owner state of an active queue this node serves.
func (n *Node) liveQueue(conn ConnID, reqID uint64, queue string) *ownerState {
	o := n.ownerQueue(conn, reqID, queue)
	if o != nil && o.outwaiting() && !bugs.Active(bugs.OutwaitServesClients) {
		// An older owner may still hand out and take back the messages
		// of the history this one recovered.
		n.reply(conn, reqID, wire.StatusUnavailable, "queue "+queue+" is starting on its owner")
		return nil
	}
	return o
}

// ownerQueue routes a request as liveQueue does, but also returns an
// owner that still outwaits an older one (beginOutwait): a publish is
// the one request such an owner takes.
func (n *Node) ownerQueue(conn ConnID, reqID uint64, queue string) *ownerState {
	if err := ValidQueueName(queue); err != nil {
		n.reply(conn, reqID, wire.StatusBadRequest, err.Error())
		return nil
	}
	q := n.meta.state.queues[queue]
	switch {
	case q == nil || q.State == QueueDeleted:
		n.replyNoQueue(conn, reqID, queue)
		return nil
	case q.Owner != n.cfg.ID:
		n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusNotOwner, Owner: uint32(q.Owner)})
		return nil
	case q.State != QueueActive && !n.servesEarly(q):
		n.reply(conn, reqID, wire.StatusUnavailable, "queue "+queue+" is "+q.State.String())
		return nil
	}
	r := n.queues[queue]
	if r != nil && r.role == roleStale {
		// This node's metadata still names it owner, but a replica has
		// shown it a newer epoch: it may confirm nothing.
		n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusFenced, Owner: uint32(r.own.staleOwner)})
		return nil
	}
	if r == nil || r.inc != q.Incarnation || !r.serving() {
		n.reply(conn, reqID, wire.StatusUnavailable, "queue "+queue+" is starting on its owner")
		return nil
	}
	r.own.noteBusy()
	if r.own.noteCutOff() {
		if r.own.waking() {
			n.reply(conn, reqID, wire.StatusUnavailable, "queue "+queue+" is waking on its owner")
		} else {
			r.own.refuseCutOff(conn, reqID)
		}
		return nil
	}
	return r.own
}

// onCreateQueue proposes a new queue incarnation. Any node may; the reply
// comes once the metadata has activated it, which takes an exact quorum
// of replicas reporting prepared storage.
func (n *Node) onCreateQueue(conn ConnID, m *wire.CreateQueue) {
	if m.Policy > wire.PolicyOwnerOnly {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf("unknown confirmation policy %d: want %d (%s), %d (%s) or %d (%s)",
			m.Policy, wire.PolicyMajority, wire.PolicyMajority, wire.PolicyAll, wire.PolicyAll, wire.PolicyOwnerOnly, wire.PolicyOwnerOnly))
		return
	}
	if err := ValidQueueName(m.Queue); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	if err := wire.CheckDedupWindow(m.DedupWindow); err != nil && !bugs.Active(bugs.DedupWindowUnchecked) {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	if err := checkDeadLetter(m.Queue, m.DeadLetter, m.MaxDeliveries); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	if n.refuseIfDiskFull(conn, m.ReqID, "queues") {
		return
	}
	if n.placesBlind() {
		n.reply(conn, m.ReqID, wire.StatusUnavailable, "node is joining the cluster and does not know its members yet")
		return
	}
	if q := n.meta.state.queues[m.Queue]; q != nil && q.State != QueueDeleted {
		n.reply(conn, m.ReqID, wire.StatusQueueExists, "queue "+m.Queue+" exists")
		return
	}
	if err := n.meta.state.checkDeadLetterCycle(m.Queue, m.DeadLetter); err != nil {
		// Checked as the metadata stands here, not when the create
		// applies: a ring closed by two requests at once is not caught.
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	rng := n.env.Rand()
	q := QueueMeta{
		Name: m.Queue, Incarnation: rng.Uint64() | 1, HistoryID: rng.Uint64() | 1, SessionID: rng.Uint64() | 1,
		Policy: m.Policy, Replicas: n.newQueuePlacement().ReplicaSet(m.Queue), DedupWindow: m.DedupWindow,
		DeadLetter: m.DeadLetter, MaxDeliveries: m.MaxDeliveries,
	}
	n.meta.propose(command{kind: cmdCreate, queue: q}, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			l := n.life(m.Queue)
			l.createWaiters = append(l.createWaiters, lifeWaiter{conn: conn, reqID: m.ReqID, inc: q.Incarnation})
			if cur := n.meta.state.queues[m.Queue]; cur != nil && cur.Incarnation == q.Incarnation &&
				(cur.State == QueueActive || bugs.Active(bugs.CreateAnsweredAtCommit)) { // planted (the last condition)
				n.answerCreates(m.Queue, q.Incarnation)
			}
		case res.detail == "exists":
			n.reply(conn, m.ReqID, wire.StatusQueueExists, "queue "+m.Queue+" exists")
		case res.dropped, res.refused:
			// Refused: the replica set was placed on a node that began
			// leaving or was removed before the create committed. No
			// queue was made; the client may ask again.
			n.reply(conn, m.ReqID, wire.StatusUnavailable, res.detail)
		}
		// A proposal that timed out may still commit: no reply, and the
		// client's outcome is unknown, as it should be.
	})
}

func (n *Node) onDeleteQueue(conn ConnID, m *wire.DeleteQueue) {
	if err := ValidQueueName(m.Queue); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	q := n.meta.state.queues[m.Queue]
	if q == nil || q.State == QueueDeleted {
		n.replyNoQueue(conn, m.ReqID, m.Queue)
		return
	}
	n.meta.propose(command{kind: cmdDelete, name: m.Queue, inc: q.Incarnation}, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			n.reply(conn, m.ReqID, wire.StatusOK, "")
		case res.detail == "no such queue":
			n.reply(conn, m.ReqID, wire.StatusNoQueue, "no queue "+m.Queue)
		case res.dropped:
			n.reply(conn, m.ReqID, wire.StatusUnavailable, res.detail)
		}
	})
}

func (n *Node) onPublish(conn ConnID, m *wire.Publish) {
	if len(m.Payload) > wire.MaxPayloadSize {
		n.reply(conn, m.ReqID, wire.StatusTooLarge, fmt.Sprintf("payload of %d bytes exceeds %d", len(m.Payload), wire.MaxPayloadSize))
		return
	}
	if m.Delay < 0 {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf("delay %v is negative: a message's delay is zero or more", m.Delay))
		return
	}
	if n.parkDuringFailover(conn, m.Queue, m) {
		return
	}
	o := n.ownerQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	if index, dup := o.state.publishedIndex(m.ID); dup {
		o.wait(conn, m.ReqID, index) // a retry: the first append stands
		return
	}
	if n.refuseIfDiskFull(conn, m.ReqID, "messages") || o.refuseIfReplicaFull(conn, m.ReqID) {
		return
	}
	var readyAt int64
	if m.Delay > 0 {
		readyAt = n.env.Now().Add(m.Delay).UnixNano()
	}
	o.wait(conn, m.ReqID, o.append(record{typ: recordPublish, id: m.ID, readyAt: readyAt, payload: m.Payload}))
	if o.outwaiting() {
		o.outwaitAdmitted++
	}
}

func (n *Node) onSubscribe(conn ConnID, m *wire.Subscribe) {
	if m.Window == 0 {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, "subscription window is 0: it must allow at least one unsettled delivery")
		return
	}
	if n.parkDuringFailover(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	lease := m.Lease
	if lease <= 0 {
		lease = defaultLease
	}
	o.subscribe(conn, m.ReqID, m.Window, lease)
	n.reply(conn, m.ReqID, wire.StatusOK, "")
	o.pump()
}

// onUnsubscribe drops the connection's subscription to the queue, if this
// node serves it one, and hands its leased messages back at once. A node
// that holds none has nothing to do: either way the subscription is gone.
// A recovering candidate holds the subscriptions it will serve once it
// activates (see OnClientGone), so it drops this one as well.
func (n *Node) onUnsubscribe(conn ConnID, m *wire.Unsubscribe) {
	if r := n.queues[m.Queue]; r != nil && r.hasOwnerSide() {
		r.dropConnection(conn, false)
	}
	n.reply(conn, m.ReqID, wire.StatusOK, "")
}

func (n *Node) onSettle(conn ConnID, m *wire.Settle) {
	if n.parkWhileWaking(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	o.heardFrom(conn)
	msg, unsettled := o.state.messages[m.ID]
	if !unsettled {
		if index, ok := o.state.known.settleIndex(m.ID); ok && !m.Nack {
			o.wait(conn, m.ReqID, index) // acked already: acks are idempotent
			return
		}
		n.reply(conn, m.ReqID, wire.StatusNotLeased, "no unsettled message "+m.ID.String())
		return
	}
	if msg.dead {
		n.reply(conn, m.ReqID, wire.StatusNotLeased, "message "+m.ID.String()+" reached the delivery limit and is moving to the dead-letter queue")
		return
	}
	if m.Nack {
		if msg.lease == nil || msg.lease.id != m.Lease {
			n.reply(conn, m.ReqID, wire.StatusNotLeased, "lease is no longer held")
			return
		}
		if bugs.Active(bugs.DropNack) {
			o.release(msg.lease, false)
		} else {
			o.giveUp(msg.lease)
		}
		n.reply(conn, m.ReqID, wire.StatusOK, "")
		o.pump()
		return
	}
	if bugs.Active(bugs.AckByIDIgnored) && m.Lease == 0 {
		n.reply(conn, m.ReqID, wire.StatusOK, "") // planted: answered, and nothing settled
		return
	}
	if msg.lease != nil {
		o.release(msg.lease, false)
	}
	o.settleSoon(conn, m.ReqID, msg)
}

// onExtend keeps a delivery leased for longer: the lease runs out For
// from now on this owner's clock, whatever was left of it. Leases are
// owner-local and die with the owner, so nothing is written or
// replicated: an extension asks only this process to hold back. A lease
// that has run out is not brought back, even if the tick that hands its
// message back has not come yet: the consumer hears that it lost the
// lease, and can expect the message to go out again.
func (n *Node) onExtend(conn ConnID, m *wire.Extend) {
	if m.For <= 0 || m.For > wire.MaxExtend {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf(
			"lease extension %v is out of range: a lease is extended by more than 0 and at most %v", m.For, wire.MaxExtend))
		return
	}
	if n.parkWhileWaking(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	o.heardFrom(conn)
	now := n.env.Now()
	msg, unsettled := o.state.messages[m.ID]
	switch {
	case !unsettled:
		n.reply(conn, m.ReqID, wire.StatusNotLeased, "no unsettled message "+m.ID.String())
		return
	case msg.lease == nil || msg.lease.id != m.Lease || !now.Before(msg.lease.expires):
		n.reply(conn, m.ReqID, wire.StatusNotLeased, "lease is no longer held")
		return
	}
	if !bugs.Active(bugs.ExtendIgnored) {
		msg.lease.expires = now.Add(m.For)
		msg.lease.extended = true
	}
	n.reply(conn, m.ReqID, wire.StatusOK, "")
}

// onSetDetection changes the failure detection policy through the
// metadata, so every node switches at the same point of the log.
func (n *Node) onSetDetection(conn ConnID, m *wire.SetDetection) {
	p := DetectionPolicy{Mode: m.Mode, Interval: m.Interval, Grace: m.Grace}
	if (p.Mode != DetectHeartbeat && p.Mode != DetectEager) || p.Interval <= 0 || p.Grace < 0 {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf(
			"invalid detection policy (mode %d, interval %v, grace %v): want mode %d (heartbeat) or %d (eager), a positive interval and a grace of zero or more",
			p.Mode, p.Interval, p.Grace, DetectHeartbeat, DetectEager))
		return
	}
	n.meta.propose(command{kind: cmdSetDetection, policy: p}, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			n.reply(conn, m.ReqID, wire.StatusOK, "")
		case res.dropped:
			n.reply(conn, m.ReqID, wire.StatusUnavailable, res.detail)
		}
	})
}

// replyNoQueue answers a request for a queue this node does not know. No
// such queue is a definite failure, so it is said only after a ReadIndex
// shows the catalogue is current; a queue that turns up after the read is
// answered with a redirect to its owner, and a read that cannot be
// confirmed leaves the client to retry.
func (n *Node) replyNoQueue(conn ConnID, reqID uint64, queue string) {
	n.meta.readIndex(func(fresh bool) {
		q := n.meta.state.queues[queue]
		switch {
		case !fresh:
			n.reply(conn, reqID, wire.StatusUnavailable, "could not confirm the queue catalogue with the metadata leader")
		case q == nil || q.State == QueueDeleted:
			n.reply(conn, reqID, wire.StatusNoQueue, "no queue "+queue)
		default:
			n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusNotOwner, Owner: uint32(q.Owner)})
		}
	})
}
