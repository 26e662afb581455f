package node

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/node/wire"
)

// defaultLease is the visibility timeout when a subscriber names none.
const defaultLease = 30 * time.Second

// ownedQueue routes a client request: it answers not-owner (naming the
// owner) or unavailable itself and returns nil, or returns the active
// owner replica. A nil replica with ok=true means the queue is unknown
// here, which only create may remedy.
func (n *Node) ownedQueue(conn ConnID, reqID uint64, queue string) (r *replica, ok bool) {
	if err := ValidQueueName(queue); err != nil {
		n.reply(conn, reqID, wire.StatusBadRequest, err.Error())
		return nil, false
	}
	if owner := n.place.Owner(queue); owner != n.cfg.ID {
		n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusNotOwner, Owner: uint32(owner)})
		return nil, false
	}
	r = n.queues[queue]
	if r != nil && (r.fenced != nil || r.own == nil) {
		n.reply(conn, reqID, wire.StatusUnavailable, fmt.Sprintf("replica of %s is fenced: %v", queue, r.fenced))
		return nil, false
	}
	return r, true
}

// liveQueue is ownedQueue for requests that need an existing, active
// queue.
func (n *Node) liveQueue(conn ConnID, reqID uint64, queue string) *ownerState {
	r, ok := n.ownedQueue(conn, reqID, queue)
	switch {
	case !ok:
		return nil
	case r == nil || !r.own.state.created || r.own.state.deleted:
		n.reply(conn, reqID, wire.StatusNoQueue, "no queue "+queue)
		return nil
	case !r.own.active:
		n.reply(conn, reqID, wire.StatusUnavailable, "queue "+queue+" is starting")
		return nil
	}
	return r.own
}

func (n *Node) onCreateQueue(conn ConnID, m *wire.CreateQueue) {
	if m.Policy > wire.PolicyOwnerOnly {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf("unknown policy %d", m.Policy))
		return
	}
	r, ok := n.ownedQueue(conn, m.ReqID, m.Queue)
	if !ok {
		return
	}
	if r == nil {
		if n.preparing[m.Queue] {
			n.reply(conn, m.ReqID, wire.StatusUnavailable, "queue "+m.Queue+" is being prepared")
			return
		}
		n.prepareReplica(m.Queue, func(r *replica) {
			if r.own == nil {
				return // fenced; the client's retry will hear why
			}
			n.startCreate(r.own, conn, m)
		})
		return
	}
	switch {
	case r.own.state.deleted:
		n.reply(conn, m.ReqID, wire.StatusQueueExists, "queue "+m.Queue+" was deleted; its name cannot be reused yet")
		return
	case r.own.state.created || r.own.pendingCreate != nil:
		n.reply(conn, m.ReqID, wire.StatusQueueExists, "queue "+m.Queue+" exists")
		return
	}
	n.startCreate(r.own, conn, m)
}

// startCreate appends the create record once the owner is active.
func (n *Node) startCreate(o *ownerState, conn ConnID, m *wire.CreateQueue) {
	o.createPolicy = m.Policy
	w := waiter{conn: conn, reqID: m.ReqID}
	if !o.active {
		o.pendingCreate = &w
		return
	}
	o.appendCreate(w)
}

func (n *Node) onDeleteQueue(conn ConnID, m *wire.DeleteQueue) {
	if o := n.liveQueue(conn, m.ReqID, m.Queue); o != nil {
		o.wait(conn, m.ReqID, o.append(record{typ: recordDelete}))
	}
}

func (n *Node) onPublish(conn ConnID, m *wire.Publish) {
	if len(m.Payload) > wire.MaxPayloadSize {
		n.reply(conn, m.ReqID, wire.StatusTooLarge, fmt.Sprintf("payload of %d bytes exceeds %d", len(m.Payload), wire.MaxPayloadSize))
		return
	}
	if m.Delay < 0 {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, "negative delay")
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	if index, dup := o.state.published[m.ID]; dup {
		o.wait(conn, m.ReqID, index) // a retry: the first append stands
		return
	}
	var readyAt int64
	if m.Delay > 0 {
		readyAt = n.env.Now().Add(m.Delay).UnixNano()
	}
	o.wait(conn, m.ReqID, o.append(record{typ: recordPublish, id: m.ID, readyAt: readyAt, payload: m.Payload}))
}

func (n *Node) onSubscribe(conn ConnID, m *wire.Subscribe) {
	if m.Window == 0 {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, "subscription window must be positive")
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
	o.subscribe(conn, m.Window, lease)
	n.reply(conn, m.ReqID, wire.StatusOK, "")
	o.pump()
}

func (n *Node) onSettle(conn ConnID, m *wire.Settle) {
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	msg, unsettled := o.state.messages[m.ID]
	if !unsettled {
		if index, ok := o.state.settled[m.ID]; ok && !m.Nack {
			o.wait(conn, m.ReqID, index) // acked already: acks are idempotent
			return
		}
		n.reply(conn, m.ReqID, wire.StatusNotLeased, "no unsettled message "+m.ID.String())
		return
	}
	if m.Nack {
		if msg.lease == nil || msg.lease.id != m.Lease {
			n.reply(conn, m.ReqID, wire.StatusNotLeased, "lease is no longer held")
			return
		}
		o.release(msg.lease, !bugs.Active(bugs.DropNack))
		n.reply(conn, m.ReqID, wire.StatusOK, "")
		o.pump()
		return
	}
	if msg.lease != nil {
		o.release(msg.lease, false)
	}
	o.wait(conn, m.ReqID, o.append(record{typ: recordSettle, id: m.ID}))
}
