package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// clientAddrBase offsets client addresses from node IDs on the network.
const clientAddrBase = 1000

// clientProc is a simulated client: the client core, driven over the
// simulated network by a workload role, recording everything it invokes
// and sees into the history.
type clientProc struct {
	w     *World
	index int
	addr  netsim.Addr
	core  *core.Client
	rng   *rand.Rand
	// extendRng decides which deliveries this consumer extends and for
	// how long, apart from rng so that a workload that extends nothing
	// draws exactly what it drew before extensions existed.
	extendRng *rand.Rand
	// unsubRng decides when this consumer unsubscribes, from what, and
	// for how long.
	unsubRng *rand.Rand
	// ownerRng decides which settles and extensions this consumer sends
	// to the queue's owner.
	ownerRng *rand.Rand
	producer bool
	consumer bool
	// probe marks a probe client: it works only the first queue, starts at
	// the workload's ProbeAt, and (as a publisher) publishes every 10ms.
	probe     bool
	published int
	ops       map[core.OpID]int // history index of each pending op
	// tickAt is when the core's next deadline is scheduled, if
	// tickPending; tickGen invalidates older scheduled ticks. The
	// generation only ever grows: a tick that reset it to zero let a
	// superseded step of an earlier round match a later one's number and
	// fire as a tick of its own, and each such tick scheduled another,
	// so a client ticked about fifteen times for each tick with work.
	tickAt      time.Duration
	tickGen     uint64
	tickPending bool
	// replied stamps the reply being handled, for the ops it completes.
	replied Stamp
	// lastSub notes when each queue's subscription last failed, to retry.
	subscribed map[string]bool
	// acksLingering is set while a send of held acks is scheduled.
	acksLingering bool
	// downUntil is when a restarted client comes back: until then it
	// subscribes to nothing, whatever retry or start was scheduled
	// before. darkUntil is when the host of a vanished client comes
	// back: until then the nodes hear nothing from it, not even a reset.
	downUntil, darkUntil time.Duration
	// cfg is the core's configuration, for a restart; gen counts restarts.
	// Messages and timers of an earlier generation find the process gone.
	cfg core.Config
	gen uint64
	// badPending ties the bad requests this client sent to their
	// history records (see badrequests.go).
	badPending []badPending
}

// conn is a client connection to one incarnation of a node, from one
// generation of the client.
type conn struct {
	client  *clientProc
	node    int
	nodeInc uint64
	gen     uint64
	// closed says the client closed the connection while a partition
	// kept the node from hearing of it: the node still writes into it,
	// and learns it is gone from the reset its first write across a
	// healed network meets. resetDue says that reset is on its way.
	closed   bool
	resetDue bool
}

// clientRetryFor is the retry deadline of the clients that retry until a
// deadline (every other one): a few simulated failovers long, and well
// inside a run's liveness phase.
const clientRetryFor = 3 * time.Second

// newClient builds workload client i. Even clients bound their retries by
// a deadline and odd ones by a count, so a run with two or more clients
// exercises both rules.
func (w *World) newClient(i int, wl *Workload) *clientProc {
	nodes := make([]uint32, len(w.procs))
	for j, p := range w.procs {
		nodes[j] = uint32(p.id)
	}
	rng := newStream(w.sc.Seed, streamWorkload, uint64(i))
	c := &clientProc{
		w: w, index: i, addr: netsim.Addr(clientAddrBase + i + 1), rng: rng,
		extendRng: newStream(w.sc.Seed, streamExtend, uint64(i)),
		ownerRng:  newStream(w.sc.Seed, streamAtOwner, uint64(i)),
		unsubRng:  newStream(w.sc.Seed, streamUnsubscribe, uint64(i)+1),
		producer:  i < wl.Producers, consumer: i >= wl.Producers,
		ops: make(map[core.OpID]int), subscribed: make(map[string]bool),
	}
	cfg := core.Config{
		Producer: uint64(i + 1), Nodes: nodes, RequestTimeout: wl.RequestTimeout,
		RetryBackoff: 20 * time.Millisecond, MaxBackoff: 250 * time.Millisecond,
	}
	if i%2 == 0 {
		// Retry until a deadline, as the Go client and the CLI do by
		// default: long enough to ride through a failover.
		cfg.RetryFor = clientRetryFor
	} else {
		// Retry a fixed number of times, as a client configured with
		// MaxAttempts does: its operations end unknown more often.
		cfg.MaxAttempts = 4
	}
	c.cfg = cfg
	c.core = core.New(cfg, newStream(w.sc.Seed, streamWorkload, uint64(i), 1))
	return c
}

func (c *clientProc) who() string { return "c" + strconv.Itoa(c.index+1) }

func (c *clientProc) now() time.Time { return Epoch.Add(c.w.now) }

func (c *clientProc) tracef(format string, args ...any) {
	c.w.trace.line(c.w.now, c.who(), format, args...)
}

// quiet reports whether the run has reached its final quiet stretch.
func (c *clientProc) quiet() bool {
	return c.w.now >= c.w.sc.Safety+c.w.sc.Liveness-c.w.sc.Workload.Quiet
}

// flush sends what the core wants sent, records what it reports, and
// schedules its next deadline.
func (c *clientProc) flush() {
	for _, out := range c.core.Outbox() {
		c.send(out.To, out.Msg)
	}
	for _, e := range c.core.Events() {
		c.record(e)
	}
	if at, ok := c.core.NextDeadline(); ok {
		d := max(at.Sub(Epoch), c.w.now)
		if !c.tickPending || d < c.tickAt {
			c.tickGen++
			gen := c.tickGen
			c.tickAt, c.tickPending = d, true
			c.w.schedule(d, -1, 0, func() {
				if gen == c.tickGen {
					if c.w.now != c.tickAt {
						panic(fmt.Sprintf("sim: client %d ran its tick of %v at %v", c.index, c.tickAt, c.w.now))
					}
					c.tickPending = false
					c.core.Tick(c.now())
					c.flush()
				}
			})
		}
	}
}

// send carries a request to a node over the simulated network, on the
// connection to the node's current incarnation.
func (c *clientProc) send(to uint32, m wire.Message) {
	idx := int(to) - 1
	if idx < 0 || idx >= len(c.w.procs) {
		panic(fmt.Sprintf("sim: client %d sent to unknown node %d", c.index, to))
	}
	p := c.w.procs[idx]
	frame := c.w.encode(m)
	desc := frameText(frame)
	if p.state == stateDown {
		c.tracef("send to=%s %s: node down", p.id, desc)
		c.w.refuseClient(c, p)
		return
	}
	arrivals := c.w.net.Route(c.w.now, c.addr, netsim.Addr(p.id), len(frame))
	c.tracef("send to=%s %s copies=%d", p.id, desc, len(arrivals))
	inc, gen := p.inc, c.gen
	for _, at := range arrivals {
		c.w.schedule(at, idx, inc, func() {
			if c.gen != gen {
				return // the client restarted: its connection is gone
			}
			m, err := wire.Decode(frame)
			if err != nil {
				panic(fmt.Sprintf("sim: a client frame does not decode: %v", err))
			}
			id := c.w.connFor(c, p)
			p.tracef("client conn=%d from=%s %s", id, c.who(), desc)
			p.handler.OnClient(id, m)
		})
	}
}

// receive hands a node's message to the core; desc is how the node's
// trace line described it.
func (c *clientProc) receive(from node.NodeID, m wire.Message, sent Stamp, desc frameText) {
	c.tracef("recv from=%s %s", from, desc)
	if r, ok := m.(*wire.Reply); ok && c.answerBad(r) {
		return
	}
	c.replied = sent
	c.core.OnMessage(c.now(), uint32(from), m)
	c.flush()
	c.replied = Stamp{}
}

// record writes a core event into the history and lets the workload react.
func (c *clientProc) record(e core.Event) {
	h := c.w.hist
	if e.Delivery != nil {
		d := e.Delivery
		h.Deliveries = append(h.Deliveries, DeliveryRecord{
			Client: c.index, Queue: d.Queue, ID: d.ID, Lease: d.Lease, Attempt: d.Attempt,
			From: node.NodeID(d.From), Sent: c.replied, Received: c.w.now, Sum: PayloadSum(d.Payload),
		})
		c.react(*d)
		return
	}
	i, ok := c.ops[e.Op]
	if !ok {
		panic(fmt.Sprintf("sim: client %d got an event for unknown op %d", c.index, e.Op))
	}
	delete(c.ops, e.Op)
	op := &h.Ops[i]
	op.Done, op.Status, op.Index = c.w.now, e.Status, e.Index
	if op.Kind == "purge" {
		// The core names a purge by a token from its publish sequence,
		// which only the completion carries: the checkers match it with
		// the owners' writes of the purge.
		op.ID = e.ID
	}
	switch e.Outcome {
	case core.OutcomeOK:
		op.Outcome, op.Replied = OutcomeOK, c.replied
	case core.OutcomeFailed:
		op.Outcome = OutcomeFailed
	default:
		op.Outcome = OutcomeUnknown
	}
	c.tracef("done %s %s q=%s %s status=%s", op.Kind, op.ID, op.Queue, op.Outcome, op.Status)
	if op.Again && op.Outcome == OutcomeOK {
		c.w.noteAskedAgain(op)
	}
	if op.Kind == "delete" && op.Outcome == OutcomeOK {
		c.w.cov.probes[ProbeQueueDeleted]++
	}
	if op.Kind == "create" && op.Outcome != OutcomeOK && op.Status != wire.StatusQueueExists {
		// Like an operator, keep at it until the queue certainly exists.
		q := op.Queue
		c.w.schedule(c.w.now+200*time.Millisecond, -1, 0, func() { c.createQueue(q) })
	}
	if op.Kind == "subscribe" && op.Outcome != OutcomeOK {
		c.subscribed[op.Queue] = false
		c.w.schedule(c.w.now+200*time.Millisecond, -1, 0, func() { c.subscribe(op.Queue) })
	}
}

// invoked adds an op to the history as pending.
func (c *clientProc) invoked(id core.OpID, kind, queue string, msg wire.MessageID, delay time.Duration) {
	c.w.hist.Ops = append(c.w.hist.Ops, OpRecord{
		Client: c.index, Kind: kind, Queue: queue, ID: msg, Delay: delay, Invoked: c.w.now, Outcome: OutcomePending,
	})
	c.ops[id] = len(c.w.hist.Ops) - 1
}
