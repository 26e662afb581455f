package sim

import (
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// startClients schedules every client's first action.
func (w *World) startClients() {
	wl := w.sc.Workload
	defer w.startProbes()
	for i := range wl.Producers + wl.Consumers {
		c := w.newClient(i, wl)
		w.clients = append(w.clients, c)
		if i == 0 {
			w.schedule(0, -1, 0, c.createQueues)
		}
		// Producers and consumers start once the cluster has had time to
		// elect a metadata leader and activate the queues.
		start := 1200*time.Millisecond + time.Duration(c.rng.Int64N(int64(100*time.Millisecond)))
		if c.producer {
			w.schedule(start, -1, 0, c.publishLoop)
			if i == 0 {
				c.schedulePurges()
				c.scheduleMoves()
				c.scheduleDeadLetterChanges()
				c.scheduleBadRequests()
				c.scheduleChurn()
			}
		} else {
			w.schedule(max(start, wl.ConsumeAt), -1, 0, func() {
				for _, q := range wl.Queues {
					c.subscribe(q.Name)
				}
				c.scheduleUnsubscribe()
			})
		}
	}
}

// startProbes adds the failover probes, if the workload asks for them.
func (w *World) startProbes() {
	wl := w.sc.Workload
	if wl.ProbeAt <= 0 {
		return
	}
	n := wl.Producers + wl.Consumers
	sub := w.newClient(n, wl)
	sub.producer, sub.consumer, sub.probe = false, true, true
	pub := w.newClient(n+1, wl)
	pub.producer, pub.consumer, pub.probe = true, false, true
	w.clients = append(w.clients, sub, pub)
	if n == 0 {
		w.schedule(0, -1, 0, sub.createQueues) // no one else will
	}
	w.schedule(wl.ProbeAt, -1, 0, func() { sub.subscribe(wl.Queues[0].Name) })
	w.schedule(wl.ProbeAt, -1, 0, pub.publishLoop)
}

// ProbeClients returns the indexes of the probe subscriber and publisher,
// or -1s if the workload has none.
func ProbeClients(wl *Workload) (sub, pub int) {
	if wl == nil || wl.ProbeAt <= 0 {
		return -1, -1
	}
	return wl.Producers + wl.Consumers, wl.Producers + wl.Consumers + 1
}

var noID wire.MessageID

func (c *clientProc) createQueues() {
	for _, q := range c.w.sc.Workload.Queues {
		c.createQueue(q.Name)
	}
}

func (c *clientProc) createQueue(name string) {
	if c.quiet() {
		return
	}
	for _, q := range c.w.sc.Workload.Queues {
		if q.Name == name {
			id := c.core.CreateQueueWith(c.now(), q.Name, core.QueueSettings{
				Policy: q.Policy, DedupWindow: q.Dedup, DeadLetter: q.DeadLetter, MaxDeliveries: q.MaxDeliveries})
			c.invoked(id, "create", q.Name, noID, 0)
			c.w.hist.Ops[c.ops[id]].Window = q.Dedup
		}
	}
	c.flush()
}

// publishLoop publishes one message and schedules the next, until the
// safety phase ends.
func (c *clientProc) publishLoop() {
	wl := c.w.sc.Workload
	if c.w.Live() || wl.PublishLimit > 0 && c.published >= wl.PublishLimit && !c.probe {
		return
	}
	c.published++
	q := wl.Queues[c.rng.IntN(len(wl.Queues))]
	if c.probe || q.MovesOnly {
		q = wl.Queues[0] // the first queue always takes publishes
	}
	payload := make([]byte, c.rng.IntN(wl.PayloadMax+1))
	for i := range payload {
		payload[i] = byte(c.rng.Uint32())
	}
	var delay time.Duration
	if !c.probe && chance(c.rng, wl.DelayChance) {
		delay = time.Duration(1 + c.rng.Int64N(int64(wl.DelayMax)))
	}
	id, msg := c.core.Publish(c.now(), q.Name, payload, delay)
	c.invoked(id, "publish", q.Name, msg, delay)
	c.w.hist.Ops[c.ops[id]].Sum = PayloadSum(payload)
	c.flush()
	next := wl.PublishEvery.Draw(c.rng)
	if c.probe {
		next = 10 * time.Millisecond
	}
	c.w.schedule(c.w.now+next, -1, 0, c.publishLoop)
}

func (c *clientProc) subscribe(queue string) {
	if c.quiet() || c.subscribed[queue] || c.w.now < c.downUntil {
		return
	}
	wl := c.w.sc.Workload
	c.subscribed[queue] = true
	id := c.core.Subscribe(c.now(), queue, wl.Window, wl.Lease)
	c.invoked(id, "subscribe", queue, noID, 0)
	c.flush()
}

// scheduleUnsubscribe plans the consumer's next unsubscribe, if its
// workload has them: after a pause drawn around UnsubscribeEvery, it
// leaves one queue it is subscribed to and comes back 20 to 300ms later.
// It stops once the safety phase ends.
func (c *clientProc) scheduleUnsubscribe() {
	every := c.w.sc.Workload.UnsubscribeEvery
	if every <= 0 || c.probe {
		return
	}
	pause := time.Duration(c.unsubRng.Int64N(int64(2*every))) + 1
	gen := c.gen
	c.w.schedule(c.w.now+pause, -1, 0, func() {
		if c.w.Live() || c.quiet() || c.gen != gen {
			return
		}
		queues := c.w.sc.Workload.Queues
		q := queues[c.unsubRng.IntN(len(queues))].Name
		back := 20*time.Millisecond + time.Duration(c.unsubRng.Int64N(int64(280*time.Millisecond)))
		if c.subscribed[q] {
			c.subscribed[q] = false
			c.core.Unsubscribe(c.now(), q)
			// The request is sent once and not answered: the history
			// records it as done when sent.
			c.w.hist.Ops = append(c.w.hist.Ops, OpRecord{
				Client: c.index, Kind: "unsubscribe", Queue: q, Invoked: c.w.now, Done: c.w.now, Outcome: OutcomeOK})
			c.tracef("unsubscribe q=%s for %v", q, back)
			c.flush()
			c.w.schedule(c.w.now+back, -1, 0, func() {
				if c.gen == gen {
					c.subscribe(q)
				}
			})
		}
		c.scheduleUnsubscribe()
	})
}

// react decides, after some thinking time, what to do with a delivery:
// during the safety phase ack, nack or ignore it; in the calm phase ack
// it; in the quiet end do nothing. Some deliveries of the safety phase
// take longer than their lease, and the consumer extends the lease first.
func (c *clientProc) react(d core.Delivery) {
	wl := c.w.sc.Workload
	think := wl.Think.Draw(c.rng)
	roll := c.rng.Float64()
	gen := c.gen
	if long, ok := c.maybeExtend(d); ok {
		think = long
	}
	c.w.schedule(c.w.now+think, -1, 0, func() {
		if c.quiet() || c.gen != gen {
			return // nothing to do, or the client that got it restarted
		}
		switch {
		case c.w.Live() || c.probe || roll < wl.AckChance:
			c.ack(d)
			if wl.AckLinger > 0 {
				c.lingerAcks(wl.AckLinger)
				return
			}
		case roll < wl.AckChance+wl.NackChance && c.atOwner():
			c.invoked(c.core.NackAtOwner(c.now(), d.Queue, d.ID, d.Lease), "nack", d.Queue, d.ID, 0)
		case roll < wl.AckChance+wl.NackChance:
			c.invoked(c.core.Nack(c.now(), d), "nack", d.Queue, d.ID, 0)
		default:
			return // let the lease run out
		}
		c.flush()
	})
}

// ack starts acking d and records it: at the node that delivered it or,
// for a share of acks in the seeds that draw one, by its ID at the
// queue's owner, which after a failover is another node, and which
// settles the message even if its lease ran out and it went to another
// consumer.
func (c *clientProc) ack(d core.Delivery) {
	if !c.atOwner() {
		c.invoked(c.core.Ack(c.now(), d), "ack", d.Queue, d.ID, 0)
		return
	}
	c.invoked(c.core.AckAtOwner(c.now(), d.Queue, d.ID), "ack", d.Queue, d.ID, 0)
	op := &c.w.hist.Ops[len(c.w.hist.Ops)-1]
	op.AtOwner, op.Lease, op.From = true, d.Lease, node.NodeID(d.From)
}

// atOwner draws whether the next settle or extension goes to the
// queue's owner rather than to the node that delivered the message.
func (c *clientProc) atOwner() bool {
	wl := c.w.sc.Workload
	return wl.AtOwnerChance > 0 && !c.probe && chance(c.ownerRng, wl.AtOwnerChance)
}

// maybeExtend decides whether the consumer works on d for longer than
// its lease; if so it asks the lease's node at once to extend the lease
// past the work, and returns how long the work takes: between one and
// two and a half leases, which outlasts the lease unless it is extended.
// The extension covers the work and one more lease, time enough for the
// ack that follows to arrive.
func (c *clientProc) maybeExtend(d core.Delivery) (time.Duration, bool) {
	wl := c.w.sc.Workload
	if wl.ExtendChance == 0 || wl.Lease <= 0 || c.probe || c.w.Live() || c.quiet() || !chance(c.extendRng, wl.ExtendChance) {
		return 0, false
	}
	think := wl.Lease + time.Duration(c.extendRng.Int64N(int64(3*wl.Lease/2))+1)
	extendFor := think + wl.Lease
	var id core.OpID
	atOwner := c.atOwner()
	if atOwner {
		id = c.core.ExtendAtOwner(c.now(), d.Queue, d.ID, d.Lease, extendFor)
	} else {
		id = c.core.Extend(c.now(), d, extendFor)
	}
	c.invoked(id, "extend", d.Queue, d.ID, 0)
	op := &c.w.hist.Ops[len(c.w.hist.Ops)-1]
	op.Lease, op.From, op.For, op.AtOwner = d.Lease, node.NodeID(d.From), extendFor, atOwner
	c.flush()
	return think, true
}

// lingerAcks sends the acks taken so far after d, together with any
// taken meanwhile: the client's outbox packs them into one batch.
func (c *clientProc) lingerAcks(d time.Duration) {
	if c.acksLingering {
		return
	}
	c.acksLingering = true
	c.w.schedule(c.w.now+d, -1, 0, func() {
		c.acksLingering = false
		c.flush()
	})
}

// connFor returns the connection between a client and a node process's
// current incarnation, opening it on first use.
func (w *World) connFor(c *clientProc, p *process) node.ConnID {
	key := connKey{c.index, p.index, p.inc, c.gen}
	if id, ok := w.connByKey[key]; ok {
		return id
	}
	w.nextConn++
	w.conns[w.nextConn] = &conn{client: c, node: p.index, nodeInc: p.inc, gen: c.gen}
	w.connByKey[key] = w.nextConn
	return w.nextConn
}

type connKey struct {
	client, node int
	inc, gen     uint64
}

// resetClient tells a client, after delay, that its connection to a
// node's incarnation broke.
func (w *World) resetClient(c *clientProc, p *process, inc uint64, delay time.Duration) {
	key := clientNodeKey{c.index, p.index}
	if w.clientResets[key] == inc {
		return
	}
	w.clientResets[key] = inc
	gen := c.gen
	w.schedule(w.now+delay, -1, 0, func() {
		if c.gen != gen {
			return // the client restarted since
		}
		c.tracef("disconnect node=%s", p.id)
		c.core.OnDisconnect(c.now(), uint32(p.id))
		c.flush()
	})
}

type clientNodeKey struct{ client, node int }

// refuseClient answers a send to a node whose process is down the way a
// host answers a connect to a closed port: the client hears a round trip
// later that the connection failed, unless a partition swallows the
// refusal too. Every refused send is reported, so a client that keeps
// trying a dead node keeps failing fast instead of waiting out a timeout.
func (w *World) refuseClient(c *clientProc, p *process) {
	if w.net.Blocked(netsim.Addr(p.id), c.addr) {
		return
	}
	gen := c.gen
	w.schedule(w.now+w.net.RoundTrip(c.addr, netsim.Addr(p.id)), -1, 0, func() {
		if c.gen != gen {
			return // the client restarted since
		}
		c.tracef("refused node=%s", p.id)
		c.core.OnDisconnect(c.now(), uint32(p.id))
		c.flush()
	})
}

// dropConnections breaks every client connection to a crashed node's
// incarnation; clients hear of it a round trip later unless a partition
// swallows the reset.
func (w *World) dropConnections(p *process, inc uint64) {
	for _, c := range w.clients {
		key := connKey{c.index, p.index, inc, c.gen}
		id, has := w.connByKey[key]
		if !has {
			continue
		}
		delete(w.connByKey, key)
		delete(w.conns, id)
		if !w.net.Blocked(netsim.Addr(p.id), c.addr) {
			w.resetClient(c, p, inc, w.net.RoundTrip(c.addr, netsim.Addr(p.id)))
		}
	}
}

// setDetection asks the cluster to switch failure detection mode.
func (c *clientProc) setDetection(mode uint8) {
	pol := faultDetectionPolicy(mode)
	id := c.core.SetDetection(c.now(), wire.SetDetection{Mode: pol.Mode, Interval: pol.Interval, Grace: pol.Grace})
	c.invoked(id, "set-detection", "", noID, 0)
	c.flush()
}

// faultDetectionPolicy is the policy a set-detection fault asks for in
// mode: the node's default timings, so only the mode changes.
func faultDetectionPolicy(mode uint8) node.DetectionPolicy {
	return node.DetectionPolicy{Mode: mode, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}
}
