package sqs

import (
	"context"
	"errors"
	"time"
)

// Backend is what the endpoint needs of a queue system. The protocol
// layer (signatures, both wire protocols, validation, message
// attributes, receipt handles) sits above it, so it can be tested
// against a fake, and the cluster backend (ClusterBackend) maps it onto
// cairn's client.
type Backend interface {
	// CreateQueue creates a queue with opts; ErrQueueExists if one by
	// that name exists.
	CreateQueue(ctx context.Context, name string, opts QueueOptions) error
	// SetRedrive changes an existing queue's dead-letter queue and
	// receive limit to opts's; zero options remove them. ErrNoQueue if
	// the queue does not exist. Messages already moving to the old
	// dead-letter queue still arrive there.
	SetRedrive(ctx context.Context, name string, opts QueueOptions) error
	// DeleteQueue deletes a queue and its messages, acting in role.
	DeleteQueue(ctx context.Context, name string, role Role) error
	// QueueNames lists the queues, sorted.
	QueueNames(ctx context.Context) ([]string, error)
	// Stats describes one queue; ErrNoQueue if it does not exist.
	Stats(ctx context.Context, name string) (QueueStats, error)
	// Send stores payload and returns once the queue's confirmation
	// policy is met, with the message's ID.
	Send(ctx context.Context, queue string, payload []byte, delay time.Duration) (MessageID, error)
	// SendBatch stores each entry as Send does, all of them at once, and
	// returns each one's outcome in the order of entries.
	SendBatch(ctx context.Context, queue string, entries []SendEntry) []SendResult
	// Receive returns up to max messages leased for visibility, waiting
	// up to wait for the first one.
	Receive(ctx context.Context, queue string, max int, visibility, wait time.Duration) ([]Received, error)
	// Delete settles the receipt's message, durably (see Receipt). A
	// message the queue's owner no longer holds at all (deleted already,
	// purged, moving to its dead-letter queue) counts as deleted: it will
	// not be delivered from the queue again.
	Delete(ctx context.Context, queue string, r Receipt) error
	// DeleteBatch settles each receipt as Delete does, all of them at
	// once, and returns each one's outcome in the order of receipts.
	DeleteBatch(ctx context.Context, queue string, rs []Receipt) []error
	// Release hands the receipt's delivery back to the queue at once, to
	// be delivered again; ErrLeaseGone if its lease is no longer held.
	Release(ctx context.Context, queue string, r Receipt) error
	// Extend keeps the receipt's delivery hidden for visibility from now
	// on, longer or shorter than its lease had left; ErrLeaseGone if its
	// lease is no longer held.
	Extend(ctx context.Context, queue string, r Receipt, visibility time.Duration) error
	// Purge removes every message the queue holds, durably; ErrNoQueue
	// if it does not exist.
	Purge(ctx context.Context, queue string) error
}

// MessageID names a message in the backend: a producer and a sequence
// number, as cairn names them.
type MessageID struct {
	Producer uint64
	Seq      uint64
}

// SendEntry is one message of a SendBatch.
type SendEntry struct {
	Payload []byte
	Delay   time.Duration
}

// SendResult is the outcome of one entry of a SendBatch, as Send reports
// it: the message's ID once it is confirmed, or why it is not.
type SendResult struct {
	ID  MessageID
	Err error
}

// Received is one delivery handed out by Receive.
type Received struct {
	ID      MessageID
	Payload []byte
	// Lease names the delivery in the backend that handed it out.
	Lease uint64
	// Grant is the queue owner's number for the delivery's lease, so
	// that another backend of the cluster can act on it.
	Grant uint64
	// Attempt counts deliveries of this message, from 1.
	Attempt uint32
}

// Receipt is what a receipt handle names, as a backend acts on it. Any
// endpoint of a cluster may be handed any of its receipts (a load
// balancer in front of every node does that), so a receipt names the
// delivery twice: by the backend's own lease, which only the backend
// that handed it out (Local) can look up, and by the message and its
// owner's lease, which any backend can take to the queue's owner.
type Receipt struct {
	Lease uint64
	Local bool
	ID    MessageID
	Grant uint64
}

// QueueOptions are what a queue is created with beyond its name, and
// what SetQueueAttributes may change later.
type QueueOptions struct {
	// DeadLetter names the queue a message moves to once it was received
	// MaxReceiveCount times without being deleted; empty, none (SQS's
	// RedrivePolicy).
	DeadLetter      string
	MaxReceiveCount int
}

// QueueStats is what the backend can tell about a queue.
type QueueStats struct {
	// DeadLetter and MaxReceiveCount are the queue's redrive policy, if
	// it has one; they are known whether or not the counts are.
	DeadLetter      string
	MaxReceiveCount int
	// Known is set when the counts below were read from the queue's
	// owner; during a failover they may not be.
	Known bool
	// Ready, Leased and Delayed count the queue's messages by state.
	Ready, Leased, Delayed int
}

// Backend errors the endpoint turns into SQS's codes. A backend wraps
// them (errors.Is) and may add detail.
var (
	// ErrNoQueue: the queue does not exist.
	ErrNoQueue = errors.New("no such queue")
	// ErrQueueExists: a queue by that name already exists.
	ErrQueueExists = errors.New("queue exists")
	// ErrLeaseGone: the lease a Release or Extend names has lapsed or
	// was settled, or the queue's owner changed since it was granted.
	ErrLeaseGone = errors.New("lease gone")
	// ErrDenied: the role may not do this.
	ErrDenied = errors.New("permission denied")
	// ErrUnknownOutcome: the operation may or may not have happened.
	ErrUnknownOutcome = errors.New("outcome unknown")
	// ErrTooLarge: the message is over the cluster's size limit.
	ErrTooLarge = errors.New("message too large")
	// ErrBadName: the queue name is not one cairn accepts.
	ErrBadName = errors.New("bad queue name")
	// ErrBadRedrive: the cluster refused a redrive policy SetRedrive
	// asked for (one closing a ring of dead-letter queues, say).
	ErrBadRedrive = errors.New("redrive policy refused")
)
