package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// subscription is one standing subscription. It is either established on
// a node (node and reqID set, op nil) or being (re)established by op
// (node and reqID zero). Those are the only two states.
type subscription struct {
	queue  string
	window uint32
	lease  time.Duration

	node  uint32     // the node holding the subscription, once established
	reqID uint64     // the request that established it there
	op    *operation // the operation establishing it, while not established
	// refreshAt is when an established subscription is next confirmed
	// with its node (see refresh).
	refreshAt time.Time
}

// establish records that the subscribe request reqID succeeded on node;
// the subscription is to be confirmed again at refreshAt.
func (s *subscription) establish(node uint32, reqID uint64, refreshAt time.Time) {
	if s.op == nil || s.node != 0 {
		panic(fmt.Sprintf("core: subscription to %s established twice (node %d)", s.queue, s.node))
	}
	s.node, s.reqID, s.op, s.refreshAt = node, reqID, nil, refreshAt
}

// onDelivery surfaces a delivery to the application, unless it is stale:
// every subscription the client holds to its queue is established on
// another node. Such a delivery comes from a subscription the client
// left, most often from an old owner, sent before a partition and held
// up in the network until it healed, when the client may long since have
// had the same message from the new owner and acked it. While a
// subscription is being (re)established, a delivery is surfaced only
// from a node an attempt of it is in flight to, since that node may take
// the subscription up and deliver before its reply arrives; a refresh is
// such an attempt, to the node that held the subscription. A delivery
// for a queue the client holds no subscription to is surfaced.
//
// Dropping a stale delivery loses nothing, but the subscription it came
// from may still stand on its node: an attempt the client gave up on
// (timed out, moved elsewhere) can still be taken up there, by a
// candidate that activates late, say. That node would go on leasing
// messages to a client that drops them, and redeliver them to it alone
// when the leases run out. So the client tells it to drop the
// subscription, which hands those messages back to the queue unworked.
func (c *Client) onDelivery(from uint32, m *wire.Delivery) {
	if c.deliveryStale(from, m.Queue) {
		c.staleDeliveries++
		c.leaveStale(from, m.Queue)
		return
	}
	d := &Delivery{Queue: m.Queue, ID: m.ID, Lease: m.Lease, Attempt: m.Attempt, Payload: m.Payload, From: from}
	c.events = append(c.events, Event{Kind: OpSubscribe, Queue: m.Queue, ID: m.ID, Outcome: OutcomeOK, Delivery: d})
}

// deliveryStale reports whether every subscription the client holds to
// queue is held, or being established, elsewhere than on node from. An
// old owner's delivery that a partition held up in the network can
// arrive while a subscription is being refreshed; surfacing it then
// handed the application a message it may have had and acked already
// from the new owner.
func (c *Client) deliveryStale(from uint32, queue string) bool {
	held := false
	for _, s := range c.subs {
		if s.queue != queue {
			continue
		}
		if s.node == from || (s.op != nil && s.op.inFlightTo(from)) {
			return false
		}
		held = true
	}
	return held
}

// staleSource names a node that sent a stale delivery of a queue.
type staleSource struct {
	node  uint32
	queue string
}

// leaveStale sends node an Unsubscribe for queue, once until the next
// subscribe attempt to node: the request is not tracked, and a node
// holds at most one subscription of this connection per queue, so the
// deliveries that follow in the same burst need no request of their own.
// An Unsubscribe sent before a later subscribe attempt to the same node
// reaches it first, so it cannot end the subscription that attempt makes.
func (c *Client) leaveStale(node uint32, queue string) {
	key := staleSource{node: node, queue: queue}
	if c.staleLeft[key] {
		return
	}
	if c.staleLeft == nil {
		c.staleLeft = make(map[staleSource]bool)
	}
	c.staleLeft[key] = true
	c.lastReq++
	c.outbox = append(c.outbox, Outgoing{To: node, Msg: &wire.Unsubscribe{ReqID: c.lastReq, Queue: queue}})
}

// inFlightTo reports whether an attempt of op to node awaits its reply.
func (op *operation) inFlightTo(node uint32) bool {
	return slices.ContainsFunc(op.flights, func(f flight) bool { return f.to == node })
}

// StaleDeliveries counts the deliveries dropped as stale (see onDelivery).
func (c *Client) StaleDeliveries() uint64 { return c.staleDeliveries }

// onStandingReply handles a reply to the request that established a
// subscription: a node may later tell its subscriber that it lost the
// queue. A repeated OK is a duplicate; any other status ends the
// subscription there, and the client makes a new one.
func (c *Client) onStandingReply(now time.Time, from uint32, r *wire.Reply) {
	if r.Status == wire.StatusOK {
		return
	}
	for _, s := range c.subs {
		if s.op != nil || s.reqID != r.ReqID || s.node != from {
			continue
		}
		if r.Status == wire.StatusNotOwner || r.Status == wire.StatusFenced {
			c.noteRefusal(s.queue, from, r.Owner)
			c.resubscribe(now, s, r.Owner)
		} else {
			c.resubscribe(now, s, 0)
		}
		return
	}
}

// onOwnerMoved re-makes every established subscription to queue that node
// from holds, now that from has refused queue and named owner.
func (c *Client) onOwnerMoved(now time.Time, queue string, from, owner uint32) {
	for _, s := range c.subs {
		if s.op == nil && s.queue == queue && s.node == from {
			c.resubscribe(now, s, owner)
		}
	}
}

// onSubscriptionNodeLost re-makes every established subscription that node
// held; they died with the connection.
func (c *Client) onSubscriptionNodeLost(now time.Time, node uint32) {
	for _, s := range c.subs {
		if s.op == nil && s.node == node {
			c.resubscribe(now, s, 0)
		}
	}
}

// resubscribe starts a silent operation that re-establishes s. With a
// named owner (other than the node that just lost s) it goes there at
// once; otherwise it backs off first, since the owner is likely failing
// over, and then rediscovers.
func (c *Client) resubscribe(now time.Time, s *subscription, owner uint32) {
	if s.op != nil || s.node == 0 {
		panic(fmt.Sprintf("core: re-subscribing to %s, which is not established", s.queue))
	}
	lost := s.node
	op := c.newOp(OpSubscribe, s.queue)
	op.sub, op.silent, op.to = s, true, lost
	s.node, s.reqID, s.op = 0, 0, op
	c.live = append(c.live, op)
	if owner != 0 && owner != lost {
		op.hint = owner
		c.send(now, op)
		return
	}
	c.retryLater(now, op)
}

// refresh confirms an established subscription by subscribing again on
// the node holding it (the node treats that as an update of the same
// subscription). A subscription can die without its client hearing: the
// node's notice that it lost the queue may be the message a network
// drops, or the node may stop answering without the connection breaking.
// Only asking finds out; a refusal or a silence then moves it, as any
// subscribe attempt would.
func (c *Client) refresh(now time.Time, s *subscription) {
	if s.op != nil || s.node == 0 {
		panic(fmt.Sprintf("core: refreshing the subscription to %s, which is not established", s.queue))
	}
	op := c.newOp(OpSubscribe, s.queue)
	op.sub, op.silent, op.hint = s, true, s.node
	s.node, s.reqID, s.op = 0, 0, op
	c.live = append(c.live, op)
	c.send(now, op)
}

// refreshDue refreshes every established subscription whose time came.
func (c *Client) refreshDue(now time.Time) {
	for _, s := range c.subs {
		if s.op == nil && s.node != 0 && !s.refreshAt.After(now) {
			c.refresh(now, s)
		}
	}
}

// dropSubscription forgets s, whose first attempt failed for certain.
func (c *Client) dropSubscription(s *subscription) {
	c.subs = slices.DeleteFunc(c.subs, func(x *subscription) bool { return x == s })
}

// Unsubscribe ends the standing subscription to queue, if there is one:
// the client stops keeping it, and asks the node holding it (or each node
// an attempt to establish it is in flight at, or else the node the last
// attempt went to) to drop it, which hands the messages leased to it back
// to the queue at once. The request is sent once and not tracked: if it
// is lost, the node drops the subscription when the connection closes,
// and its leases run out meanwhile.
func (c *Client) Unsubscribe(now time.Time, queue string) {
	i := slices.IndexFunc(c.subs, func(s *subscription) bool { return s.queue == queue })
	if i < 0 {
		return
	}
	s := c.subs[i]
	c.dropSubscription(s)
	to := []uint32{s.node}
	if op := s.op; op != nil {
		to = []uint32{op.to}
		if len(op.flights) > 0 {
			// A hedged subscribe may be taken up by either node.
			to = to[:0]
			for _, f := range op.flights {
				to = append(to, f.to)
			}
		}
		if op.phase != phaseDone {
			op.silent = true
			c.finish(op, OutcomeFailed)
		}
	}
	for _, node := range to {
		if node != 0 {
			c.lastReq++
			c.outbox = append(c.outbox, Outgoing{To: node, Msg: &wire.Unsubscribe{ReqID: c.lastReq, Queue: queue}})
		}
	}
}

// SetWindow changes how many unsettled deliveries the standing
// subscription to queue may have. An established subscription is told at
// once, by a subscribe request sent once and not tracked (the node takes
// it as an update of the same subscription, keeping its leases); anything
// queued after this call reaches that node after it, so a settle that
// follows a smaller window cannot make room for another delivery. A
// subscription being (re)established carries the new window in its next
// attempt. A window of 0 is ignored: Unsubscribe ends a subscription.
func (c *Client) SetWindow(queue string, window uint32) {
	i := slices.IndexFunc(c.subs, func(s *subscription) bool { return s.queue == queue })
	if i < 0 || window == 0 {
		return
	}
	s := c.subs[i]
	s.window = window
	if s.op != nil || s.node == 0 {
		return
	}
	// Several changes before the outbox is drained go out as one: the
	// first update's place is early enough for all of them.
	for _, o := range slices.Backward(c.outbox) {
		if u, ok := o.Msg.(*wire.Subscribe); ok && o.To == s.node && u.ReqID == s.reqID {
			u.Window = window
			return
		}
	}
	// The node answers to the new ReqID from now on (a notice that it
	// lost the queue included), so the subscription takes it.
	c.lastReq++
	s.reqID = c.lastReq
	c.outbox = append(c.outbox, Outgoing{To: s.node, Msg: &wire.Subscribe{ReqID: s.reqID, Queue: queue, Window: window, Lease: s.lease}})
}
