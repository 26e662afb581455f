package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// SetDeadLetter changes an existing queue's delivery limit, as
// WithDeadLetter sets it at creation: a message delivered maxDeliveries
// times without being acked moves to the queue named deadLetter. An
// empty deadLetter with maxDeliveries zero removes the limit. Any other
// setting a node would refuse (a limit outside 1 to MaxDeliveriesLimit,
// a queue that would be its own dead-letter queue) fails with a
// *StatusError whose Status is StatusBadRequest, without being sent; a
// queue that does not exist fails with StatusNoQueue.
//
// SetDeadLetter returns once the cluster's metadata holds the change;
// the queue's owner applies it to the next delivery that ends without
// an ack. A message already on its way to a dead-letter queue when the
// setting changes finishes its move to that queue. Setting again is
// harmless.
func (c *Client) SetDeadLetter(ctx context.Context, queue, deadLetter string, maxDeliveries int) error {
	limit := uint32(max(0, min(maxDeliveries, MaxDeliveriesLimit+1)))
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.SetDeadLetter(now, queue, deadLetter, limit) })
	return err
}
