package core

import (
	"time"

	"github.com/cairnmq/cairn/wire"
)

// Purge starts removing every message queue holds when its owner takes
// the request; messages published after that stay. Like a publish it is
// retried until confirmed, under one token, so a retry of a purge the
// owner already applied (within the queue's deduplication window) is
// answered with that purge's index rather than purging again what was
// published in between. The event's Index is the purge's log position.
func (c *Client) Purge(now time.Time, queue string) OpID {
	c.lastSeq++
	op := c.newOp(OpPurge, queue)
	// A token from the publishes' sequence names the purge across
	// retries: the owner answers a retry of one it applied with its index.
	op.msgID = wire.MessageID{Producer: c.cfg.Producer, Seq: c.lastSeq}
	return c.start(now, op)
}

// QueueInfo starts reading queue's depth from its owner; the event's
// Depth holds it. Reading changes nothing, so it is retried and
// redirected like any request.
func (c *Client) QueueInfo(now time.Time, queue string) OpID {
	return c.start(now, c.newOp(OpQueueInfo, queue))
}
