package core

import "time"

// Purge starts removing every message queue holds when its owner takes
// the request; messages published after that stay. Like a publish it is
// retried until confirmed, and a retry that repeats a purge already done
// removes what was published in between too, which a caller that purges
// means anyway. The event's Index is the purge's log position.
func (c *Client) Purge(now time.Time, queue string) OpID {
	return c.start(now, c.newOp(OpPurge, queue))
}
