package sim

import (
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
)

// restartConsumer restarts workload consumer number hit (from 1, modulo
// the consumers there are; probes are left alone), or with vanish takes
// its host away for down.
func (w *World) restartConsumer(hit int, down time.Duration, vanish bool) {
	var consumers []*clientProc
	for _, c := range w.clients {
		if c.consumer && !c.probe {
			consumers = append(consumers, c)
		}
	}
	if len(consumers) == 0 || hit < 1 {
		return
	}
	c := consumers[(hit-1)%len(consumers)]
	if c.darkUntil > w.now {
		return // its host is gone: there is nothing to restart until it is back
	}
	c.restart(down, vanish)
}

// restart ends this client as a killed process ends: its connections
// close, so the nodes hand back what it leased, and everything it was
// doing is forgotten (its operations in flight stay pending in the
// history: their outcome is unknown). After down a new client, with no
// owner cached, subscribes to every queue again. With vanish the host
// goes with it: its connections close without a word to the nodes, which
// hear of it only from the reset a write meets once the host is back.
func (c *clientProc) restart(down time.Duration, vanish bool) {
	c.tracef("restart down=%v vanish=%v", down, vanish)
	rs := ClientRestart{At: c.w.now, Client: c.index, Lease: c.w.sc.Workload.Lease}
	if vanish {
		rs.Vanished = down
		c.darkUntil = c.w.now + down
	}
	c.w.hist.ClientRestarts = append(c.w.hist.ClientRestarts, rs)
	c.downUntil = c.w.now + down
	c.w.closeClientConns(c)
	c.gen++
	c.core = core.New(c.cfg, newStream(c.w.sc.Seed, streamWorkload, uint64(c.index), 1, c.gen))
	c.ops = make(map[core.OpID]int)
	c.subscribed = make(map[string]bool)
	c.acksLingering = false
	c.tickGen++ // the old core's next deadline is nobody's now
	c.tickAt, c.tickPending = 0, false
	gen := c.gen
	c.w.schedule(c.w.now+down, -1, 0, func() {
		if c.gen != gen {
			return
		}
		for _, q := range c.w.sc.Workload.Queues {
			c.subscribe(q.Name)
		}
		c.scheduleUnsubscribe()
	})
}

// closeClientConns closes c's connections to every running node; each
// node hears of it a round trip later. Until then the node may still send
// on a connection (what it sends is recorded, as a real node writes into
// a socket whose peer is gone, and lost on the way). A partition that
// swallows the close leaves the node writing into the connection until
// one of its writes crosses a healed network and meets the reset the
// client's host answers it with (noteWriteToClosed): a node that was
// never told kept a subscription of a consumer long gone and delivered
// to it for good, while the history left those sends out (seed 951184
// of the long sweep, where the fifo checker then saw a message's later
// delivery as its first).
func (w *World) closeClientConns(c *clientProc) {
	for _, p := range w.procs {
		key := connKey{c.index, p.index, p.inc, c.gen}
		id, ok := w.connByKey[key]
		if !ok {
			continue
		}
		delete(w.connByKey, key)
		if p.state == stateDown {
			delete(w.conns, id)
			continue
		}
		if c.darkUntil > w.now || w.net.Blocked(c.addr, netsim.Addr(p.id)) {
			w.conns[id].closed = true
			continue
		}
		w.resetClientConn(p, id, w.net.RoundTrip(c.addr, netsim.Addr(p.id)))
	}
}

// resetClientConn tells p, after a delay, that the client closed
// connection id.
func (w *World) resetClientConn(p *process, id node.ConnID, after time.Duration) {
	w.schedule(w.now+after, p.index, p.inc, func() {
		delete(w.conns, id)
		p.tracef("client gone conn=%d", id)
		p.handler.OnClientGone(id)
	})
}

// noteWriteToClosed takes a node's write into connection id, which its
// client closed behind a partition: once the network carries it, the
// client's host answers with a reset, which reaches the node a round trip
// after the write.
func (w *World) noteWriteToClosed(p *process, id node.ConnID, cn *conn) {
	addr := cn.client.addr
	if cn.resetDue || cn.client.darkUntil > w.now || w.net.Blocked(netsim.Addr(p.id), addr) || w.net.Blocked(addr, netsim.Addr(p.id)) {
		return
	}
	cn.resetDue = true
	w.resetClientConn(p, id, w.net.RoundTrip(addr, netsim.Addr(p.id)))
}
