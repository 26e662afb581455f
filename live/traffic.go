package live

import (
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// maxTrafficQueues bounds how many queues' traffic a node counts: the
// queues a node serves are far fewer in practice, and a client naming
// queues that do not exist must not grow the table. Requests for a queue
// past the bound are not counted until the table is pruned.
const maxTrafficQueues = 4096

// trafficCounts counts, per queue, the client traffic the runtime hands
// to its node and the deliveries the node sends, so the dashboard can
// turn two readings into rates. Only the node's goroutine touches it
// (client requests and replies pass there), so it needs no lock.
type trafficCounts struct {
	byQueue map[string]*status.Traffic
}

// request counts a client request on its way to the node.
func (c *trafficCounts) request(m wire.Message) {
	switch m := m.(type) {
	case *wire.Publish:
		if t := c.of(m.Queue); t != nil {
			t.Published++
		}
	case *wire.Settle:
		c.settled(m.Queue, m.Nack, 1)
	case *wire.SettleBatch:
		nacks := 0
		for _, it := range m.Items {
			if it.Nack {
				nacks++
			}
		}
		c.settled(m.Queue, true, nacks)
		c.settled(m.Queue, false, len(m.Items)-nacks)
	}
}

// reply counts a message the node sends a client, if it is a delivery.
func (c *trafficCounts) reply(m wire.Message) {
	if d, ok := m.(*wire.Delivery); ok {
		if t := c.of(d.Queue); t != nil {
			t.Delivered++
		}
	}
}

// settled counts n acks (or nacks) of queue q.
func (c *trafficCounts) settled(q string, nack bool, n int) {
	t := c.of(q)
	switch {
	case t == nil || n == 0:
	case nack:
		t.Nacked += uint64(n)
	default:
		t.Acked += uint64(n)
	}
}

// of returns q's counters, creating them while the table has room.
func (c *trafficCounts) of(q string) *status.Traffic {
	if t := c.byQueue[q]; t != nil {
		return t
	}
	if c.byQueue == nil {
		c.byQueue = make(map[string]*status.Traffic)
	}
	if len(c.byQueue) >= maxTrafficQueues {
		return nil
	}
	t := &status.Traffic{}
	c.byQueue[q] = t
	return t
}

// read returns a copy of q's counters, or nil if none were counted.
func (c *trafficCounts) read(q string) *status.Traffic {
	if t := c.byQueue[q]; t != nil {
		copied := *t
		return &copied
	}
	return nil
}

// prune forgets the counters of every queue not in keep, so that deleted
// queues and requests naming no queue free their room.
func (c *trafficCounts) prune(keep map[string]bool) {
	for q := range c.byQueue {
		if !keep[q] {
			delete(c.byQueue, q)
		}
	}
}

// readTraffic returns the counters of each queue in views, in order, and
// forgets those of queues no longer listed. It runs on the node's
// goroutine, like every use of the counters.
func (r *Runtime) readTraffic(views []node.QueueView) []*status.Traffic {
	out := make([]*status.Traffic, len(views))
	keep := make(map[string]bool, len(views))
	for i, v := range views {
		out[i] = r.traffic.read(v.Name)
		keep[v.Name] = true
	}
	r.traffic.prune(keep)
	return out
}
