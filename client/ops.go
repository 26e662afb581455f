package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// CreateQueue creates a queue whose publishes are confirmed under
// policy. A queue that already exists fails with a *StatusError whose
// Status is StatusQueueExists, whatever its options. WithDedupWindow sets
// the queue's deduplication window, WithDeadLetter its delivery limit.
func (c *Client) CreateQueue(ctx context.Context, name string, policy Policy, opts ...CreateOption) error {
	w, ok := policy.toWire()
	if !ok {
		return &StatusError{Op: "create", Queue: name, Status: StatusBadRequest,
			Detail: fmt.Sprintf("unknown confirmation policy %d: want PolicyMajority, PolicyAll or PolicyOwnerOnly", uint8(policy))}
	}
	var o createOptions
	for _, opt := range opts {
		opt(&o)
	}
	settings := core.QueueSettings{Policy: w, DedupWindow: o.dedupWindow, DeadLetter: o.deadLetter, MaxDeliveries: o.maxDeliveries}
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.CreateQueueWith(now, name, settings) })
	return err
}

// DeleteQueue deletes a queue and everything in it. Only an admin may
// (see Options.Admin); a client is refused with a *StatusError whose
// Detail says so.
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.DeleteQueue(now, name) })
	return err
}

// SetDetection changes the failure detection policy every node of the
// cluster follows. Only an admin may (see Options.Admin): the policy
// decides how soon a dead owner is replaced.
func (c *Client) SetDetection(ctx context.Context, p Detection) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.SetDetection(now, p.toWire()) })
	return err
}

// Publish adds payload to queue and returns once the message is confirmed:
// durable on as many replicas as the queue's policy demands. The message
// ID is returned whatever the outcome; a retry inside the client reuses
// it, so the queue holds the message at most once. If the error wraps
// ErrUnknownOutcome the message may still be delivered; a *StatusError
// means it never will be.
func (c *Client) Publish(ctx context.Context, queue string, payload []byte, opts ...PublishOption) (MessageID, error) {
	return c.PublishAsync(ctx, queue, payload, opts...).Wait()
}

// Publishing is a publish in flight.
type Publishing struct {
	ctx  context.Context
	op   *pendingOp
	ids  chan MessageID
	once sync.Once
	id   MessageID
	err  error
}

// PublishAsync starts a publish and returns at once; Wait collects the
// outcome, as Publish reports it. Publishes started one after another
// from one goroutine are sent in that order, so a producer can keep many
// in flight and still see its messages queued in order (a retried one
// may land later). ctx bounds the wait, not only the start.
func (c *Client) PublishAsync(ctx context.Context, queue string, payload []byte, opts ...PublishOption) *Publishing {
	var po publishOptions
	for _, o := range opts {
		o(&po)
	}
	// The ID is handed over by channel: if ctx ends first, the loop may
	// still be assigning it.
	p := &Publishing{ctx: ctx, ids: make(chan MessageID, 1)}
	p.op = c.begin(ctx, func(now time.Time) core.OpID {
		op, id := c.core.Publish(now, queue, payload, po.delay)
		p.ids <- messageIDFrom(id)
		return op
	})
	return p
}

// Wait blocks until the publish is confirmed or fails, and returns its
// message ID (zero only if the publish never started) and outcome.
func (p *Publishing) Wait() (MessageID, error) {
	p.once.Do(func() {
		_, p.err = p.op.wait(p.ctx)
		select {
		case p.id = <-p.ids:
		default:
		}
	})
	return p.id, p.err
}
