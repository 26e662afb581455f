package core

import (
	"fmt"

	"github.com/cairnmq/cairn/wire"
)

// OpID names one operation the application started. IDs are unique within
// a client and increase in the order operations were started; they are not
// necessarily dense, because the client also numbers the silent
// re-subscriptions it starts on its own.
type OpID uint64

// OpKind says what an operation does.
type OpKind uint8

// Operation kinds. Zero is never a valid kind, so a zeroed Event cannot be
// mistaken for a finished operation.
const (
	OpCreate    OpKind = 1 // create a queue
	OpDelete    OpKind = 2 // delete a queue
	OpPublish   OpKind = 3 // publish a message
	OpSubscribe OpKind = 4 // establish a standing subscription; also the kind of delivery events
	OpAck       OpKind = 5 // settle a delivery for good
	OpNack      OpKind = 6 // ask for a delivery to be redelivered
	// OpSetDetection changes the cluster's failure detection policy; it
	// names no queue and goes to any node.
	OpSetDetection OpKind = 7
	// OpExtend keeps a delivery leased for longer without settling it.
	OpExtend OpKind = 8
	// OpPurge removes every message a queue holds.
	OpPurge OpKind = 9
	// OpQueueInfo reads a queue's depth from its owner.
	OpQueueInfo OpKind = 10
	// OpMoveOwner hands a queue over to another of its replicas.
	OpMoveOwner OpKind = 11
	// OpSetQueueOptions changes a queue's delivery limit; like a create,
	// any node takes it.
	OpSetQueueOptions OpKind = 12
	// OpAddNode, OpRemoveNode and OpMemberList change and read the
	// cluster's membership; they name no queue and go to any node.
	OpAddNode    OpKind = 13
	OpRemoveNode OpKind = 14
	OpMemberList OpKind = 15
	// OpRebalance spreads existing queues' replicas over the members.
	OpRebalance OpKind = 16
)

var opKindNames = [...]string{"invalid", "create", "delete", "publish", "subscribe", "ack", "nack", "set-detection", "extend", "purge", "queue-info", "move-owner", "set-queue-options", "add-node", "remove-node", "member-list", "rebalance"}

// String names the kind for traces and test failures.
func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return fmt.Sprintf("opkind(%d)", uint8(k))
}

// Outcome is what the client can promise about a finished operation.
type Outcome uint8

// Outcomes. The distinction between Failed and Unknown is the point of the
// whole client: Failed is a promise that the server did not and will not
// act, so the application may treat the operation as never having
// happened; Unknown makes no promise either way.
const (
	OutcomeOK      Outcome = 1 // the server confirmed the operation
	OutcomeFailed  Outcome = 2 // the server certainly did not and will not do it
	OutcomeUnknown Outcome = 3 // it may or may not have happened
)

var outcomeNames = [...]string{"invalid", "ok", "failed", "unknown"}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Outgoing is one message the driver must send to node To.
type Outgoing struct {
	To  uint32
	Msg wire.Message
}

// Event is one thing the application must learn about: either a finished
// operation (Op is non-zero, Delivery is nil) or a delivery (Op is zero,
// Kind is OpSubscribe, Outcome is OK, and Delivery is set).
type Event struct {
	Op       OpID
	Kind     OpKind
	Queue    string
	ID       wire.MessageID // the message a publish or settle names
	Outcome  Outcome
	Status   wire.Status // the last status seen; an attempt that got no reply counts as unavailable
	Detail   string      // the node's explanation with the last status, if any
	Index    uint64      // the log position from the OK reply
	Attempts int         // how many requests were sent for the operation
	Delivery *Delivery   // non-nil for a delivery event
	// Depth is the queue's depth, for an OpQueueInfo that succeeded.
	Depth *wire.QueueDepth
	// Members and Leader are the cluster's members and metadata leader,
	// for an OpMemberList that succeeded.
	Members []wire.MemberInfo
	Leader  uint32
}

// String renders the event on one line for traces and test failures,
// without any payload.
func (e Event) String() string {
	if e.Delivery != nil {
		d := e.Delivery
		return fmt.Sprintf("delivery q=%s id=%s lease=%d attempt=%d from=n%d bytes=%d",
			d.Queue, d.ID, d.Lease, d.Attempt, d.From, len(d.Payload))
	}
	return fmt.Sprintf("op=%d %s q=%s id=%s %s status=%s index=%d attempts=%d",
		e.Op, e.Kind, e.Queue, e.ID, e.Outcome, e.Status, e.Index, e.Attempts)
}

// Delivery is a message handed to this client under a lease. From is the
// node that sent it: the lease belongs to that node's process, so Ack,
// Nack and Extend go back there. Payload aliases the received message.
type Delivery struct {
	Queue   string
	ID      wire.MessageID
	Lease   uint64
	Attempt uint32
	Payload []byte
	From    uint32
}
