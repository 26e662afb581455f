package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
)

// Purge removes every message queue holds when its owner takes the
// request, ready, delayed and leased alike, and returns once the purge is
// as durable as a confirmed publish. Messages published after it stay. A
// consumer still working on a purged delivery finds its Ack succeed and
// its Nack or Extend refused as not leased. If the error wraps
// ErrUnknownOutcome the purge may or may not have happened; purging again
// is harmless.
func (c *Client) Purge(ctx context.Context, queue string) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.Purge(now, queue) })
	return err
}
