package core

import (
	"time"

	"github.com/cairnmq/cairn/wire"
)

// SetDeadLetter starts changing queue's delivery limit: a message
// delivered maxDeliveries times without an ack moves to deadLetter.
// Both unset removes the limit; settings a node would refuse are
// refused here. The event is OK once the metadata committed the change;
// asking again is harmless, since setting what the queue has changes
// nothing.
func (c *Client) SetDeadLetter(now time.Time, queue, deadLetter string, maxDeliveries uint32) OpID {
	op := c.newOp(OpSetQueueOptions, queue)
	op.settings = QueueSettings{DeadLetter: deadLetter, MaxDeliveries: maxDeliveries}
	if err := wire.CheckDeadLetter(queue, deadLetter, maxDeliveries); err != nil {
		return c.reject(op, wire.StatusBadRequest, err.Error())
	}
	return c.start(now, op)
}
