package node

import (
	"fmt"

	"github.com/cairnmq/cairn/wire"
)

// Changing a queue's delivery limit. A SetQueueOptions request names a
// queue and its new dead-letter queue and limit (both unset removes the
// limit); any node takes it and proposes cmdSetDeadLetter, as it would
// a create, and answers once the metadata committed it. Every node
// applies the command in log order, so the owner reads the new setting
// the next time one of its leases ends (deadletter.go says what happens
// to moves already begun).

// noSuchQueue is the detail a metadata command gives when the queue
// incarnation it names is gone.
const noSuchQueue = "no such queue"

// applySetDeadLetter gives the queue incarnation the command names its
// new dead-letter queue and limit. The proposer checked them already;
// they are checked again here because applying is what every node
// does, so a command that would break the rule changes nothing anywhere.
// Setting what the queue has already succeeds: a retried proposal
// changes nothing.
func (s *metaState) applySetDeadLetter(c command) result {
	q := s.lookup(c.name, c.inc)
	if q == nil || q.State == QueueDeleted {
		return result{detail: noSuchQueue}
	}
	if err := checkDeadLetter(c.name, c.deadLetter, c.maxDeliveries); err != nil {
		return result{detail: err.Error(), refused: true}
	}
	if err := s.checkDeadLetterCycle(c.name, c.deadLetter); err != nil {
		return result{detail: err.Error(), refused: true}
	}
	q.DeadLetter, q.MaxDeliveries = c.deadLetter, c.maxDeliveries
	return result{ok: true}
}

// checkDeadLetterCycle refuses to let queue's messages move to
// deadLetter if deadLetter's own limit leads, queue by queue, back to
// queue. A message going round such a ring would come back to a queue
// that still remembers its ID from its first visit: the store would be
// taken for a retry and answered as done, and the queue sending it
// would settle a message no queue holds any more.
func (s *metaState) checkDeadLetterCycle(queue, deadLetter string) error {
	path := []string{queue}
	for cur := deadLetter; cur != ""; {
		path = append(path, cur)
		if cur == queue {
			return fmt.Errorf("dead-letter queues would form a ring %v: a message could come back to a queue that settled it", path)
		}
		q := s.queues[cur]
		if q == nil || q.State == QueueDeleted || len(path) > len(s.queues)+1 {
			return nil
		}
		cur = q.DeadLetter
	}
	return nil
}

// onSetQueueOptions proposes a queue's new delivery limit and answers
// once the metadata committed it. A proposal that timed out may still
// commit, so it is not answered at all: the client's outcome is unknown,
// and asking again is harmless.
func (n *Node) onSetQueueOptions(conn ConnID, m *wire.SetQueueOptions) {
	if err := ValidQueueName(m.Queue); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	if err := checkDeadLetter(m.Queue, m.DeadLetter, m.MaxDeliveries); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	q := n.meta.state.queues[m.Queue]
	if q == nil || q.State == QueueDeleted {
		n.replyNoQueue(conn, m.ReqID, m.Queue)
		return
	}
	if err := n.meta.state.checkDeadLetterCycle(m.Queue, m.DeadLetter); err != nil {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, err.Error())
		return
	}
	c := command{kind: cmdSetDeadLetter, name: m.Queue, inc: q.Incarnation, deadLetter: m.DeadLetter, maxDeliveries: m.MaxDeliveries}
	n.meta.propose(c, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			n.reply(conn, m.ReqID, wire.StatusOK, "")
		case res.detail == noSuchQueue:
			n.replyNoQueue(conn, m.ReqID, m.Queue)
		case res.dropped:
			n.reply(conn, m.ReqID, wire.StatusUnavailable, res.detail)
		case res.refused:
			n.reply(conn, m.ReqID, wire.StatusBadRequest, res.detail)
		}
	})
}
