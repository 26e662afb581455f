package core

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// phase is where an operation stands between attempts.
type phase uint8

const (
	phaseNew     phase = 0 // never sent
	phaseBackoff phase = 1 // no attempt in flight; the next one is sent at retryAt
	// phaseAwaiting means one attempt or more is in flight (exactly when
	// the operation's flights are not empty); each times out at its own
	// deadline.
	phaseAwaiting phase = 2
	phaseDone     phase = 3 // finished; waiting to be swept out of live
	// phaseResolved means the last attempt in flight was just answered or
	// given up on, and the handler running now decides what comes next.
	// No input ever returns with an operation in this phase.
	phaseResolved phase = 4
)

var phaseNames = [...]string{"new", "backoff", "awaiting", "done", "resolved"}

// String names the phase for assertion messages.
func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// operation is one request the client keeps trying until it can report an
// outcome. Everything needed to build a fresh attempt lives here, so a
// retry is the same request under a new ReqID.
type operation struct {
	// wakeGen counts the changes to its wake time (see wakes.go); filed
	// says its current entry waits in the queue, due at filedAt.
	wakeGen uint64
	filed   bool
	filedAt time.Time
	id      OpID
	kind    OpKind
	queue   string

	settings  QueueSettings     // OpCreate; OpSetQueueOptions: the dead-letter fields
	depth     *wire.QueueDepth  // OpQueueInfo: what the owner answered
	detection wire.SetDetection // OpSetDetection
	msgID     wire.MessageID    // OpPublish, OpAck, OpNack, OpExtend
	payload   []byte            // OpPublish; the client's own copy
	delay     time.Duration     // OpPublish
	lease     uint64            // OpAck, OpNack, OpExtend
	settle    uint32            // OpAck, OpNack, OpExtend: the one node the request may go to; 0 for the AtOwner forms
	extendFor time.Duration     // OpExtend
	sub       *subscription     // OpSubscribe
	moveTo    uint32            // OpMoveOwner
	drainFor  time.Duration     // OpMoveOwner
	// newMember is an OpAddNode's node, member an OpRemoveNode's;
	// members and leader are an OpMemberList's answer.
	newMember wire.AddNode
	member    uint32
	members   []wire.MemberInfo
	leader    uint32

	// silent operations report no event and never run out of attempts:
	// they are the client's own re-subscriptions.
	silent bool

	phase   phase
	retryAt time.Time // in phaseBackoff, when the next attempt is sent
	// flights are the attempts awaiting their replies, oldest first,
	// each to a different node. There are two at most: the one the
	// operation waits on, and a hedge beside it (see Client.hedge).
	flights []flight
	// hedgeAt is when a hedge may go out, if one attempt alone is then in
	// flight; zero when the operation sends no more hedges.
	hedgeAt time.Time
	// to is the node of the latest attempt: the one sent last or, once
	// none is in flight, the one answered or given up on last.
	// Discovery avoids it for the next attempt.
	to       uint32
	hint     uint32    // a node named by a redirect, tried next
	sent     []uint64  // the ReqIDs registered in Client.attempts for this op
	attempts int       // requests sent, hedges included
	began    time.Time // when the first attempt was sent; RetryFor counts from it
	backoffs int       // backoffs taken so far; the exponent of the next one
	quick    int       // redirects followed at once since the last backoff or hedge
	hedged   int       // hedges sent so far

	// ambiguous records that some attempt may have been acted on: it got
	// no reply, its connection broke, or its reply admitted that the work
	// may have begun. Once set, the operation can never be Failed.
	ambiguous bool
	status    wire.Status // the last status seen
	detail    string      // the explanation that came with it
	index     uint64      // from the OK reply
}

// flight is one attempt still awaiting its reply.
type flight struct {
	reqID uint64
	to    uint32
	sent  time.Time // when it was sent
	due   time.Time // when it times out
}

// attempt is one sent request: the operation it belongs to and the node it
// went to, which is the only node whose reply to it counts.
type attempt struct {
	op *operation
	to uint32
}

// CreateQueue starts creating queue with confirmation policy p and the
// nodes' default deduplication window.
func (c *Client) CreateQueue(now time.Time, queue string, p wire.Policy) OpID {
	return c.CreateQueueWindow(now, queue, p, 0)
}

// CreateQueueWindow starts creating queue with confirmation policy p and
// deduplication window window (zero: the nodes' default). A window
// outside wire.MinDedupWindow to wire.MaxDedupWindow is refused here, as
// a node would refuse it.
func (c *Client) CreateQueueWindow(now time.Time, queue string, p wire.Policy, window time.Duration) OpID {
	return c.CreateQueueWith(now, queue, QueueSettings{Policy: p, DedupWindow: window})
}

// QueueSettings are what a queue is created with: its confirmation
// policy, its deduplication window (zero: the nodes' default), and the
// dead-letter queue its messages move to after MaxDeliveries deliveries
// without an ack (empty: no delivery limit).
type QueueSettings struct {
	Policy        wire.Policy
	DedupWindow   time.Duration
	DeadLetter    string
	MaxDeliveries uint32
}

// CreateQueueWith starts creating queue with settings s. Settings a node
// would refuse are refused here.
func (c *Client) CreateQueueWith(now time.Time, queue string, s QueueSettings) OpID {
	op := c.newOp(OpCreate, queue)
	op.settings = s
	p := s.Policy
	if p > wire.PolicyOwnerOnly {
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf("unknown confirmation policy %d: want %d (%s), %d (%s) or %d (%s)",
			p, wire.PolicyMajority, wire.PolicyMajority, wire.PolicyAll, wire.PolicyAll, wire.PolicyOwnerOnly, wire.PolicyOwnerOnly))
	}
	if err := wire.CheckDedupWindow(s.DedupWindow); err != nil {
		return c.reject(op, wire.StatusBadRequest, err.Error())
	}
	if err := wire.CheckDeadLetter(queue, s.DeadLetter, s.MaxDeliveries); err != nil {
		return c.reject(op, wire.StatusBadRequest, err.Error())
	}
	return c.start(now, op)
}

// DeleteQueue starts deleting queue and everything in it.
func (c *Client) DeleteQueue(now time.Time, queue string) OpID {
	return c.start(now, c.newOp(OpDelete, queue))
}

// Publish starts publishing payload to queue, deliverable after delay. The
// returned MessageID stays the same across every retry, so the owner can
// recognise a resent publish and confirm it once. The payload is copied.
func (c *Client) Publish(now time.Time, queue string, payload []byte, delay time.Duration) (OpID, wire.MessageID) {
	c.lastSeq++
	op := c.newOp(OpPublish, queue)
	op.msgID = wire.MessageID{Producer: c.cfg.Producer, Seq: c.lastSeq}
	op.delay = delay
	switch {
	case len(payload) > wire.MaxPayloadSize:
		return c.reject(op, wire.StatusTooLarge, fmt.Sprintf("payload of %d bytes exceeds %d: a message carries at most %d bytes",
			len(payload), wire.MaxPayloadSize, wire.MaxPayloadSize)), op.msgID
	case delay < 0:
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf("delay %v is negative: a message's delay is zero or more", delay)), op.msgID
	}
	op.payload = bytes.Clone(payload)
	if op.payload == nil {
		op.payload = []byte{}
	}
	return c.start(now, op), op.msgID
}

// Subscribe starts a standing subscription to queue: at most window
// unsettled deliveries at once, each leased for lease. The returned OpID
// finishes once, when the first subscription attempt does. Unless that
// outcome is Failed, the client keeps the subscription standing from then
// on: it re-subscribes by itself whenever the node holding it disconnects
// or turns out not to own the queue, and reports no further op events.
func (c *Client) Subscribe(now time.Time, queue string, window uint32, lease time.Duration) OpID {
	op := c.newOp(OpSubscribe, queue)
	switch {
	case window == 0:
		return c.reject(op, wire.StatusBadRequest, "subscription window is 0: it must allow at least one unsettled delivery")
	case lease <= 0:
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf("lease %v is not positive: a delivery must stay leased for some time", lease))
	}
	if id, ok := c.precheck(op); !ok {
		return id
	}
	sub := &subscription{queue: queue, window: window, lease: lease, op: op}
	op.sub = sub
	c.subs = append(c.subs, sub)
	c.send(now, op)
	return op.id
}

// Ack starts settling d for good. The settle goes only to d.From, whose
// process holds the lease.
func (c *Client) Ack(now time.Time, d Delivery) OpID {
	return c.startSettle(now, OpAck, d)
}

// Nack starts handing d back for redelivery. Like Ack it goes only to
// d.From.
func (c *Client) Nack(now time.Time, d Delivery) OpID {
	return c.startSettle(now, OpNack, d)
}

func (c *Client) startSettle(now time.Time, kind OpKind, d Delivery) OpID {
	op := c.newOp(kind, d.Queue)
	op.msgID = d.ID
	op.lease = d.Lease
	op.settle = d.From
	if detail, ok := CheckSettle(d); !ok {
		return c.reject(op, wire.StatusBadRequest, detail)
	}
	return c.start(now, op)
}

// Extend starts keeping d leased for extendFor from when its node takes
// the request, instead of whatever was left of its lease. Like a settle
// it goes only to d.From, whose process holds the lease, and is never
// redirected or hedged: a refusal there, or the loss of that connection,
// ends it Failed or Unknown, and the message will be delivered again.
func (c *Client) Extend(now time.Time, d Delivery, extendFor time.Duration) OpID {
	op := c.newOp(OpExtend, d.Queue)
	op.msgID, op.lease, op.settle, op.extendFor = d.ID, d.Lease, d.From, extendFor
	if detail, ok := CheckExtend(d, extendFor); !ok {
		return c.reject(op, wire.StatusBadRequest, detail)
	}
	return c.start(now, op)
}

// AckAtOwner starts settling message id of queue for good at the queue's
// current owner, wherever and by whomever it was delivered. An owner
// settles an ack by the message's ID alone, whichever lease holds it, so
// unlike Ack this one needs no delivery from this client and follows the
// queue as any request does: redirects, retries, a new owner after a
// failover. It is how a process other than the consumer that received a
// message (another node's SQS endpoint, say) settles it.
func (c *Client) AckAtOwner(now time.Time, queue string, id wire.MessageID) OpID {
	op := c.newOp(OpAck, queue)
	op.msgID = id
	return c.start(now, op)
}

// NackAtOwner starts handing back the delivery of message id under the
// owner's lease number lease, at the queue's current owner. A lease is
// owner-local and numbered apart in every process, so an owner that did
// not grant it refuses with StatusNotLeased: following the queue to a new
// owner cannot hand back another consumer's delivery.
func (c *Client) NackAtOwner(now time.Time, queue string, id wire.MessageID, lease uint64) OpID {
	op := c.newOp(OpNack, queue)
	op.msgID, op.lease = id, lease
	return c.start(now, op)
}

// ExtendAtOwner starts extending, at the queue's current owner, the lease
// lease on message id, as NackAtOwner hands one back.
func (c *Client) ExtendAtOwner(now time.Time, queue string, id wire.MessageID, lease uint64, extendFor time.Duration) OpID {
	op := c.newOp(OpExtend, queue)
	op.msgID, op.lease, op.extendFor = id, lease, extendFor
	if extendFor <= 0 || extendFor > wire.MaxExtend {
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf(
			"lease extension %v is out of range: a lease is extended by more than 0 and at most %v", extendFor, wire.MaxExtend))
	}
	return c.start(now, op)
}

// CheckExtend reports whether d's lease can be extended by extendFor at
// all, and if not, why, as a node would refuse it.
func CheckExtend(d Delivery, extendFor time.Duration) (detail string, ok bool) {
	if extendFor <= 0 || extendFor > wire.MaxExtend {
		return fmt.Sprintf("lease extension %v is out of range: a lease is extended by more than 0 and at most %v", extendFor, wire.MaxExtend), false
	}
	return CheckSettle(d)
}

// CheckSettle reports whether d can be acked or nacked at all, and if
// not, why: a driver that does not wait for a settle's outcome asks
// first, so a bad delivery still gets its error.
func CheckSettle(d Delivery) (detail string, ok bool) {
	if d.From == 0 {
		// Only a Delivery made by hand lacks its node; the client fills
		// From in every delivery it reports.
		return fmt.Sprintf("delivery of %s names no node (From is 0): a settle goes to the node that delivered the message; "+
			"pass the Delivery as it was received", d.ID), false
	}
	return checkQueueName(d.Queue)
}

// checkQueueName reports whether a node would take queue as a name, and
// if not, why.
func checkQueueName(queue string) (detail string, ok bool) {
	if queue == "" || len(queue) > wire.MaxQueueNameLen {
		return fmt.Sprintf("queue name is %d bytes long: a name is 1 to %d bytes", len(queue), wire.MaxQueueNameLen), false
	}
	return "", true
}

// newOp allocates the next OpID; the operation is not yet live.
func (c *Client) newOp(kind OpKind, queue string) *operation {
	c.lastOp++
	return &operation{id: c.lastOp, kind: kind, queue: queue}
}

// start validates the queue name and sends the first attempt.
func (c *Client) start(now time.Time, op *operation) OpID {
	if id, ok := c.precheck(op); !ok {
		return id
	}
	c.send(now, op)
	return op.id
}

// SetDetection starts changing the cluster's failure detection policy.
// It names no queue, so any node may take it.
func (c *Client) SetDetection(now time.Time, p wire.SetDetection) OpID {
	op := c.newOp(OpSetDetection, "")
	op.detection = p
	if (p.Mode != 1 && p.Mode != 2) || p.Interval <= 0 || p.Grace < 0 {
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf(
			"invalid detection policy (mode %d, interval %v, grace %v): want mode 1 (heartbeat) or 2 (eager), a positive interval and a grace of zero or more",
			p.Mode, p.Interval, p.Grace))
	}
	c.live = append(c.live, op)
	c.send(now, op)
	return op.id
}

// precheck rejects an operation whose queue name the server would refuse
// anyway, and otherwise makes it live.
func (c *Client) precheck(op *operation) (OpID, bool) {
	if detail, ok := checkQueueName(op.queue); !ok {
		return c.reject(op, wire.StatusBadRequest, detail), false
	}
	c.live = append(c.live, op)
	return op.id, true
}

// reject finishes an operation that was never sent. Nothing reached a
// server, so Failed is a safe promise. The detail says what was wrong and
// what would have been accepted, as a node's refusal does: with no node
// involved, it is the caller's only clue.
func (c *Client) reject(op *operation, status wire.Status, detail string) OpID {
	op.status, op.detail = status, detail
	c.events = append(c.events, op.event(OutcomeFailed))
	op.phase = phaseDone
	return op.id
}

// request builds the wire request for one attempt of op.
func (op *operation) request(reqID uint64) wire.Message {
	switch op.kind {
	case OpCreate:
		s := op.settings
		return &wire.CreateQueue{ReqID: reqID, Queue: op.queue, Policy: s.Policy, DedupWindow: s.DedupWindow,
			DeadLetter: s.DeadLetter, MaxDeliveries: s.MaxDeliveries}
	case OpDelete:
		return &wire.DeleteQueue{ReqID: reqID, Queue: op.queue}
	case OpPurge:
		return &wire.Purge{ReqID: reqID, Queue: op.queue, Token: op.msgID}
	case OpQueueInfo:
		return &wire.QueueInfo{ReqID: reqID, Queue: op.queue}
	case OpMoveOwner:
		return &wire.MoveOwner{ReqID: reqID, Queue: op.queue, To: op.moveTo, DrainFor: op.drainFor}
	case OpSetQueueOptions:
		s := op.settings
		return &wire.SetQueueOptions{ReqID: reqID, Queue: op.queue, DeadLetter: s.DeadLetter, MaxDeliveries: s.MaxDeliveries}
	case OpPublish:
		return &wire.Publish{ReqID: reqID, Queue: op.queue, ID: op.msgID, Delay: op.delay, Payload: op.payload}
	case OpSubscribe:
		return &wire.Subscribe{ReqID: reqID, Queue: op.queue, Window: op.sub.window, Lease: op.sub.lease}
	case OpAck, OpNack:
		return &wire.Settle{ReqID: reqID, Queue: op.queue, ID: op.msgID, Lease: op.lease, Nack: op.kind == OpNack}
	case OpExtend:
		return &wire.Extend{ReqID: reqID, Queue: op.queue, ID: op.msgID, Lease: op.lease, For: op.extendFor}
	case OpSetDetection:
		p := op.detection
		p.ReqID = reqID
		return &p
	case OpAddNode, OpRemoveNode, OpMemberList, OpRebalance:
		return membershipMessage(op, reqID)
	}
	panic(fmt.Sprintf("core: op %d has impossible kind %s", op.id, op.kind))
}

// event reports op as finished with outcome.
func (op *operation) event(outcome Outcome) Event {
	return Event{
		Op: op.id, Kind: op.kind, Queue: op.queue, ID: op.msgID, Outcome: outcome,
		Status: op.status, Detail: op.detail, Index: op.index, Attempts: op.attempts, Depth: op.depth,
		Members: op.members, Leader: op.leader,
	}
}
