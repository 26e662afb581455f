package client

import "context"

// MaxBatchInFlight bounds the publishes of one PublishBatch in flight at
// once. Each publish in flight is a frame in the send queue of the
// owner's connection (see Options.SendQueue), which drops the connection
// when it overflows; this bound keeps a batch well inside the default
// queue, and is more than enough to keep a node's appends batched.
const MaxBatchInFlight = 1024

// PublishResult is the outcome of one message of a PublishBatch, as
// Publish reports it: the message ID (zero only if the publish never
// started) and nil once the message is confirmed. An error wrapping
// ErrUnknownOutcome means the message may still be delivered; a
// *StatusError, or ctx's error for a publish that never started, means it
// never will be.
type PublishResult struct {
	ID  MessageID
	Err error
}

// PublishBatch publishes payloads to queue with all of them in flight at
// once (up to MaxBatchInFlight, or half of Options.SendQueue if that is
// less, the rest as earlier ones are confirmed; while the client does not
// yet know the queue's owner, the first goes alone to find it),
// and returns once each is confirmed or has failed. The results are in
// the order of payloads, and the messages are sent in that order, so
// they are queued in it unless one has to be retried. The error is the
// first result's error that is not nil, if any, so a caller that only
// needs to know that every message is confirmed checks it alone. ctx
// bounds the whole batch; opts apply to every message.
func (c *Client) PublishBatch(ctx context.Context, queue string, payloads [][]byte, opts ...PublishOption) ([]PublishResult, error) {
	results := make([]PublishResult, len(payloads))
	bound := max(1, min(MaxBatchInFlight, c.opts.SendQueue/2))
	inflight := make([]*Publishing, 0, min(len(payloads), bound))
	// Until the client knows the queue's owner, publishes go through
	// discovery, and each is redirected on its own, in no set order; so
	// the first one goes alone and teaches the client the owner.
	alone := !c.knowsOwner(queue)
	done := 0
	collect := func() {
		results[done].ID, results[done].Err = inflight[0].Wait()
		inflight = inflight[1:]
		done++
	}
	for i, p := range payloads {
		if len(inflight) == bound || (i == 1 && alone) {
			collect()
		}
		inflight = append(inflight, c.PublishAsync(ctx, queue, p, opts...))
	}
	for len(inflight) > 0 {
		collect()
	}
	for _, r := range results {
		if r.Err != nil {
			return results, r.Err
		}
	}
	return results, nil
}

// knowsOwner asks the loop whether the core knows queue's owner; false if
// the client has closed.
func (c *Client) knowsOwner(queue string) bool {
	known := make(chan bool, 1)
	if !c.post(func() { known <- c.core.KnowsOwner(queue) }) {
		return false
	}
	select {
	case k := <-known:
		return k
	case <-c.done:
		return false
	}
}
