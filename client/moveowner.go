package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// MoveOwner hands queue over to node to, another of its replicas, while
// its owner is alive: for a planned drain, a rolling restart or to
// spread load. The owner stops handing out deliveries and waits, for at
// most drainFor (zero: the node's default of 5 s), until its consumers
// have settled or given back what they hold; then it parks new
// publishes, lets those in flight be confirmed, and proposes to as the
// next owner. MoveOwner returns once the metadata names to; to serves
// after its recovery, a few round trips later, and publishers and
// consumers are redirected to it on their own.
//
// Asking again is safe: a queue that to owns already is answered at
// once. Only a client connected with the admin credential may ask.
func (c *Client) MoveOwner(ctx context.Context, queue string, to uint32, drainFor time.Duration) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.MoveOwner(now, queue, to, drainFor) })
	return err
}
