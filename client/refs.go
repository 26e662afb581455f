package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/wire"
)

// DeliveryRef names a delivery apart from the client that received it,
// so that another client, in this process or another, can settle it: a
// worker pool that hands messages to other processes, or a gateway with
// several nodes behind one address (cairn's SQS endpoint, whose receipt
// handles carry one). A Delivery's own methods go to the process that
// holds its lease; a ref's go to the queue's current owner, following it
// through a failover.
type DeliveryRef struct {
	Queue string
	ID    MessageID
	// Lease is the owner's number for the delivery's lease. An ack does
	// not need it (an owner settles a message by its ID, whoever holds
	// it); a nack or an extension does, and an owner that did not grant
	// that lease refuses them.
	Lease uint64
}

// Node is the ID of the node that sent the delivery, whose process
// holds its lease. A queue's deliveries come from another node once its
// owner has changed.
func (d *Delivery) Node() uint32 { return d.d.From }

// Ref returns the delivery's ref.
func (d *Delivery) Ref() DeliveryRef {
	return DeliveryRef{Queue: d.d.Queue, ID: d.ID, Lease: d.d.Lease}
}

// AckRefs settles every ref's message for good at its queue's owner and
// waits until each settle is durable, as AckSync does; the i-th error is
// refs[i]'s outcome. The acks start together, so those of one queue reach
// its owner in one frame. An ack by ref settles the message whoever holds
// it now: if its lease ran out and it went to another consumer, that
// consumer's ack later finds it settled. An ack of a message settled
// within the queue's deduplication window succeeds again; one the owner
// no longer holds at all (settled before that, purged, or moving to its
// dead-letter queue) is refused with StatusNotLeased: it will not be
// delivered from the queue again either way.
func (c *Client) AckRefs(ctx context.Context, refs []DeliveryRef) []error {
	errs := make([]error, len(refs))
	starts := make([]func(now time.Time) core.OpID, len(refs))
	for i, r := range refs {
		starts[i] = func(now time.Time) core.OpID { return c.core.AckAtOwner(now, r.Queue, r.ID.wire()) }
	}
	for i, p := range c.beginAll(ctx, starts) {
		_, errs[i] = p.wait(ctx)
	}
	return errs
}

// NackRef hands the ref's delivery back for redelivery at its queue's
// owner. If the owner no longer holds that lease (it ran out, the message
// was settled, or the queue failed over since) the error is a
// *StatusError with StatusNotLeased, and nothing changes.
func (c *Client) NackRef(ctx context.Context, r DeliveryRef) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.NackAtOwner(now, r.Queue, r.ID.wire(), r.Lease) })
	return err
}

// ExtendRef keeps the ref's delivery leased for extendFor from when its
// queue's owner takes the request, as Delivery.Extend does, with the same
// refusals as NackRef.
func (c *Client) ExtendRef(ctx context.Context, r DeliveryRef, extendFor time.Duration) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID {
		return c.core.ExtendAtOwner(now, r.Queue, r.ID.wire(), r.Lease, extendFor)
	})
	return err
}

// wire is the ID as the protocol carries it.
func (id MessageID) wire() wire.MessageID { return wire.MessageID{Producer: id.Producer, Seq: id.Seq} }
