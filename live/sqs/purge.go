package sqs

import (
	"context"
)

// purgeQueue serves PurgeQueue: every message the queue holds is removed
// durably, ready, delayed and in flight alike, as a cairn purge does; the
// answer is empty, as SQS's is. Any key may purge, as any key may delete
// messages.
func purgeQueue(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in queueInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	name, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	if err := s.cfg.Backend.Purge(ctx, name); err != nil {
		return nil, backendError(err, name)
	}
	return emptyOutput{}, nil
}

// Purge purges the queue in the cluster and then drops the deliveries of
// it that wait, received but not yet handed out, in the endpoint's
// receive buffers: the purge settled them, and handing them out after it
// would show messages the purge removed.
func (b *ClusterBackend) Purge(ctx context.Context, queue string) error {
	if err := clientError(b.main.Purge(ctx, queue)); err != nil {
		return err
	}
	for _, buf := range b.queueBuffers(queue) {
		buf.mu.Lock()
		buf.waiting = nil
		buf.mu.Unlock()
	}
	return nil
}
