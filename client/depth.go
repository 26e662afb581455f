package client

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// QueueDepth is a queue's backlog as its owner counts it: Ready messages
// wait for a subscriber, Leased ones are out under a lease, Delayed ones
// wait for their delay, DeadLettering ones used up their delivery limit
// and are moving to the dead-letter queue. Consumers counts the owner's
// subscriptions.
type QueueDepth struct {
	Ready, Leased, Delayed, DeadLettering, Consumers int
}

// Backlog is every unsettled message, whatever it waits for.
func (d QueueDepth) Backlog() int { return d.Ready + d.Leased + d.Delayed + d.DeadLettering }

// Depth asks the queue's owner for its depth. The counts are the owner's
// at the moment it answers; during a failover the call waits, as other
// requests do, for a node that serves the queue.
func (c *Client) Depth(ctx context.Context, queue string) (QueueDepth, error) {
	ev, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.QueueInfo(now, queue) })
	if err != nil {
		return QueueDepth{}, err
	}
	d := ev.Depth
	if d == nil {
		return QueueDepth{}, fmt.Errorf("cairn: the owner of %s answered without its depth (an older node?)", queue)
	}
	return QueueDepth{Ready: int(d.Ready), Leased: int(d.Leased), Delayed: int(d.Delayed),
		DeadLettering: int(d.DeadLettering), Consumers: int(d.Consumers)}, nil
}
