package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// Ack settles the delivery for good, without waiting for the owner's
// answer: it returns once the ack is handed to the client, which sends
// it, with every other ack ready at that moment, to the node that holds
// the lease, and retries it there as any request. So a handler that acks
// each delivery is not held up by a replicated, durable write per
// message.
//
// A nil error is not a promise that the message is settled: if the ack
// is lost, or the lease lapsed before it arrived, the message is
// delivered again, never lost (delivery is at least once either way).
// Use AckSync to learn the outcome. Ack fails only on a delivery that
// cannot be acked at all (one made by hand), or if ctx is done or the
// client closed before the ack was handed over.
func (d *Delivery) Ack(ctx context.Context) error {
	if detail, ok := core.CheckSettle(d.d); !ok {
		return &StatusError{Op: core.OpAck.String(), Queue: d.d.Queue, Status: StatusBadRequest, Detail: detail}
	}
	return d.c.fire(ctx, d.settling(func(now time.Time) core.OpID { return d.c.core.Ack(now, d.d) }))
}

// AckSync settles the delivery for good and waits until the owner
// reports the settle durable on the queue's quorum: once it returns nil,
// the message is never delivered again. If the lease has lapsed the
// error is a *StatusError with StatusNotLeased (or StatusOwnerChanged),
// and the message will be (or was) delivered again.
func (d *Delivery) AckSync(ctx context.Context) error {
	_, err := d.c.do(ctx, d.settling(func(now time.Time) core.OpID { return d.c.core.Ack(now, d.d) }))
	return err
}

// AckSyncAll settles every delivery of ds for good, as AckSync does, and
// waits for every outcome. The acks start together, so those for one
// node and queue travel in one frame and the owner settles them in one
// durable write, without the goroutine, hand-over and wake per delivery
// that AckSync from a goroutine each would cost. The i-th error is
// ds[i]'s outcome, as AckSync would report it; a delivery made by hand
// (one that names no node) gets a *StatusError with StatusBadRequest and
// is not sent. ds may mix deliveries of several clients.
func AckSyncAll(ctx context.Context, ds []*Delivery) []error {
	errs := make([]error, len(ds))
	pending := make([]*pendingOp, len(ds))
	byClient := make(map[*Client][]int)
	var order []*Client
	for i, d := range ds {
		if detail, ok := core.CheckSettle(d.d); !ok {
			errs[i] = &StatusError{Op: core.OpAck.String(), Queue: d.d.Queue, Status: StatusBadRequest, Detail: detail}
			continue
		}
		if _, seen := byClient[d.c]; !seen {
			order = append(order, d.c)
		}
		byClient[d.c] = append(byClient[d.c], i)
	}
	for _, c := range order {
		idx := byClient[c]
		starts := make([]func(now time.Time) core.OpID, len(idx))
		for j, i := range idx {
			d := ds[i]
			starts[j] = d.settling(func(now time.Time) core.OpID { return c.core.Ack(now, d.d) })
		}
		for j, p := range c.beginAll(ctx, starts) {
			pending[idx[j]] = p
		}
	}
	for i, p := range pending {
		if p != nil {
			_, errs[i] = p.wait(ctx)
		}
	}
	return errs
}

// Flush waits until every ack handed over by Ack before the call has an
// outcome (settled, refused, or given up on after Options.RetryFor), or
// until ctx is done, and returns ctx's error then. It says nothing about
// the outcomes; AckSync does.
func (c *Client) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	if !c.post(func() { c.addFlush(ch) }) {
		return ErrClosed
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}

// flushWait is one Flush call: done closes once no unawaited ack up to
// mark remains.
type flushWait struct {
	mark core.OpID
	done chan struct{}
}

// fire starts an operation on the loop whose outcome nobody collects.
func (c *Client) fire(ctx context.Context, start func(now time.Time) core.OpID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.post(func() { c.unawaited[start(time.Now())] = struct{}{} }) {
		return ErrClosed
	}
	return nil
}

// addFlush runs on the loop: it registers a Flush waiting for the acks
// started so far, or releases it at once if there are none.
func (c *Client) addFlush(ch chan struct{}) {
	f := flushWait{mark: c.core.LastOp(), done: ch}
	if !c.unawaitedUpTo(f.mark) {
		close(ch)
		return
	}
	c.flushes = append(c.flushes, f)
}

// finishUnawaited runs on the loop when an operation nobody waits on
// ends, and releases the Flush calls it was the last one holding up.
func (c *Client) finishUnawaited(op core.OpID) {
	delete(c.unawaited, op)
	kept := c.flushes[:0]
	for _, f := range c.flushes {
		if c.unawaitedUpTo(f.mark) {
			kept = append(kept, f)
			continue
		}
		close(f.done)
	}
	clear(c.flushes[len(kept):])
	c.flushes = kept
}

// unawaitedUpTo reports whether an unawaited operation started no later
// than mark is still going.
func (c *Client) unawaitedUpTo(mark core.OpID) bool {
	for op := range c.unawaited {
		if op <= mark {
			return true
		}
	}
	return false
}
