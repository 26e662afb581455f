package core

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// MoveOwner starts handing queue over to node to, another of its
// replicas: its owner drains its consumers for at most drainFor (zero:
// the owner's default) and proposes to as the next owner. The event is
// OK once the metadata names to; retries are safe, since a queue that to
// owns already is answered OK. Only an admin connection may ask.
func (c *Client) MoveOwner(now time.Time, queue string, to uint32, drainFor time.Duration) OpID {
	op := c.newOp(OpMoveOwner, queue)
	op.moveTo, op.drainFor = to, drainFor
	if to == 0 || drainFor < 0 {
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf(
			"invalid handoff (to node %d, drain %v): want a node ID above 0 and a drain bound of zero or more", to, drainFor))
	}
	return c.start(now, op)
}
