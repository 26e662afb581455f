package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

type procState int

const (
	stateUp procState = iota
	stateDown
	statePaused
)

// process is one simulated node process: a handler, its disk, its clock
// and its incarnation. It implements node.Env for the handler.
type process struct {
	w           *World
	index       int
	id          node.NodeID
	peers       []node.NodeID
	inc         uint64
	state       procState
	handler     node.Handler
	disk        *Disk
	rng         *rand.Rand
	clockOffset time.Duration
	// bootAt is when the current incarnation started, the origin of its
	// monotonic clock.
	bootAt   time.Duration
	deferred []step
	armed    []armedCrash
	// resetFor remembers, per destination index, the destination
	// incarnation this process was already told is gone.
	resetFor map[int]uint64
	// lostDisk says the node's disk was lost (a lose-disk fault): every
	// later incarnation starts with Rejoin, as an operator following the
	// guide would start it, which the node ignores once it holds metadata
	// again.
	lostDisk bool
}

// armedCrash is a crash-at fault waiting for its boundary.
type armedCrash struct {
	boundary  string
	remaining int
	down      time.Duration
}

// crashSignal unwinds a handler when the process dies inside it.
type crashSignal struct {
	reason string
	down   time.Duration
}

func (p *process) who() string { return p.id.String() }

func (p *process) tracef(format string, args ...any) {
	p.w.trace.line(p.w.now, p.who(), format, args...)
}

// start boots a new incarnation on the disk as it is.
func (p *process) start() {
	p.inc++
	p.state = stateUp
	p.w.hist.Processes = append(p.w.hist.Processes, ProcessChange{At: p.w.now, Node: p.id, Up: true})
	p.bootAt = p.w.now
	p.deferred = nil
	p.resetFor = make(map[int]uint64)
	p.rng = newStream(p.w.sc.Seed, streamNode, uint64(p.index), p.inc)
	p.handler = p.w.sys.NewNode(p.id, p.peers, p, p.lostDisk)
	p.tracef("start inc=%d", p.inc)
	p.run(p.handler.Start)
}

// run calls into the handler, turning a crash signal into a crash. A
// panic in node code is the node finding an impossible state: in
// production it kills the process, so here too the process crashes (and
// restarts), and the run records a safety violation naming the panic.
func (p *process) run(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			if sig, ok := r.(crashSignal); ok {
				p.crash(sig.reason, sig.down)
				return
			}
			p.w.nodePanic(p, r)
			p.crash(fmt.Sprintf("panic: %v", r), haltRestartDelay)
		}
	}()
	fn()
}

// crash kills the process: its memory is gone, its disk keeps what was
// durable plus whatever unsynced sectors the disk lets survive, and its
// peers see a reset a round trip later unless a partition swallows it.
func (p *process) crash(reason string, down time.Duration) {
	if p.state == stateDown {
		return
	}
	p.tracef("crash (%s) down=%v", reason, down)
	p.w.crashes++
	p.w.hist.Crashed = append(p.w.hist.Crashed, CrashRecord{p.w.now, p.id, reason})
	p.w.hist.Processes = append(p.w.hist.Processes, ProcessChange{At: p.w.now, Node: p.id})
	p.w.dropConnections(p, p.inc)
	p.state = stateDown
	p.inc++ // every pending event of the dead incarnation is now stale
	p.handler = nil
	p.deferred = nil
	flips := p.disk.Stats().Flips
	p.disk.Crash()
	if p.disk.Stats().Flips > flips {
		p.w.noteBroken(p)
	}
	for _, q := range p.w.procs {
		// A peer without a handler is down or not yet booted (a process
		// can crash inside its own Start while World.Run boots the rest).
		if q != p && q.handler != nil && q.state != stateDown && !p.w.net.Blocked(netsim.Addr(p.id), netsim.Addr(q.id)) {
			q.notifyReset(p, p.w.net.RoundTrip(netsim.Addr(q.id), netsim.Addr(p.id)))
		}
	}
	inc := p.inc
	if down > 0 {
		p.w.schedule(p.w.now+down, -1, 0, func() { p.restart(inc) })
	}
}

// restart boots the process if it is still down in the incarnation that
// scheduled the restart.
func (p *process) restart(inc uint64) {
	if p.state != stateDown || p.inc != inc {
		return
	}
	p.start()
}

// notifyReset tells q, after delay, that its connection to dead broke;
// and, a round trip later, that a new connection was refused if dead is
// still down then and the network lets the attempt through. The
// production runtime tries a bare connection to a peer's port after a
// reset (live/refusal.go): a process that is gone refuses it at once, one
// that restarted meanwhile accepts it.
func (q *process) notifyReset(dead *process, delay time.Duration) {
	if q.resetFor[dead.index] == dead.inc {
		return
	}
	q.resetFor[dead.index] = dead.inc
	inc := dead.inc
	q.w.schedule(q.w.now+delay, q.index, q.inc, func() {
		q.tracef("disconnect peer=%s", dead.id)
		q.handler.OnDisconnect(dead.id)
		if !q.w.sc.Refusals {
			return
		}
		q.w.schedule(q.w.now+delay, q.index, q.inc, func() {
			if dead.state != stateDown || dead.inc != inc || q.w.net.Blocked(netsim.Addr(q.id), netsim.Addr(dead.id)) {
				return
			}
			q.tracef("refused peer=%s", dead.id)
			q.handler.OnPeerRefused(dead.id)
		})
	})
}

func (p *process) pause() {
	if p.state != stateUp {
		return
	}
	p.state = statePaused
	p.tracef("pause")
}

// resume lets a paused process run again: everything that came due while
// it was stopped happens now, in its original order.
func (p *process) resume() {
	if p.state != statePaused {
		return
	}
	p.state = stateUp
	p.tracef("resume deferred=%d", len(p.deferred))
	deferred := p.deferred
	p.deferred = nil
	for _, e := range deferred {
		p.w.schedule(p.w.now, e.proc, e.inc, e.fn)
	}
}

// Now implements node.Env.
func (p *process) Now() time.Time { return Epoch.Add(p.w.now + p.clockOffset) }

// Monotonic implements node.Env: virtual time since this incarnation
// started. It counts through pauses, since virtual time does.
func (p *process) Monotonic() time.Duration { return p.w.now - p.bootAt }

// After implements node.Env.
func (p *process) After(d time.Duration, t node.Timer) {
	if d < 0 {
		panic(fmt.Sprintf("sim: %s set a timer %v in the past", p.id, d))
	}
	p.w.schedule(p.w.now+d, p.index, p.inc, func() {
		p.tracef("timer kind=%d seq=%d", t.Kind, t.Seq)
		p.handler.OnTimer(t)
	})
}

// Send implements node.Env. The message travels as bytes: it is encoded
// here and decoded on arrival, so no memory is shared between nodes.
func (p *process) Send(to node.NodeID, m wire.Message) {
	idx := int(to) - 1
	if idx < 0 || idx >= len(p.w.procs) || to == p.id {
		panic(fmt.Sprintf("sim: %s sent %s to invalid peer %d", p.id, m.Kind(), to))
	}
	if st := p.w.stack; st != nil && !p.w.live && st.drops(p.id, to, m) {
		p.tracef("send to=%s %s: dropped by stack-loss", to, m.Kind())
		return
	}
	frame := p.w.encode(m)
	// The trace names the message by its frame: hashing bytes costs far
	// less than describing them, and the text is made only when read.
	desc := frameText(frame)
	dest := p.w.procs[idx]
	if dest.state == stateDown {
		p.tracef("send to=%s %s: peer down", to, desc)
		p.notifyReset(dest, p.w.net.RoundTrip(netsim.Addr(p.id), netsim.Addr(to)))
		return
	}
	arrivals := p.w.net.Route(p.w.now, netsim.Addr(p.id), netsim.Addr(to), len(frame))
	p.tracef("send to=%s %s copies=%d", to, desc, len(arrivals))
	for _, at := range arrivals {
		from := p.id
		p.w.hist.NotePeerDelay(p.w.now, at)
		p.w.schedule(at, idx, dest.inc, func() { dest.deliver(from, frame, desc) })
	}
}

// deliver decodes a peer's frame and hands it to the node; desc is how
// the sender's trace line described it.
func (p *process) deliver(from node.NodeID, frame []byte, desc frameText) {
	m, err := wire.Decode(frame)
	if err != nil {
		panic(fmt.Sprintf("sim: a frame from %s does not decode: %v", from, err))
	}
	p.tracef("recv from=%s %s", from, desc)
	p.handler.OnMessage(from, m)
}

// Reply implements node.Env: the message travels to the client over the
// simulated network, stamped with the instant it was sent.
func (p *process) Reply(id node.ConnID, m wire.Message) {
	cn := p.w.conns[id]
	if cn == nil || cn.nodeInc != p.inc {
		if d, ok := m.(*wire.Delivery); ok {
			p.w.hist.UnroutedSends = append(p.w.hist.UnroutedSends, DeliveryRecord{
				Client: -1, Queue: d.Queue, ID: d.ID, Lease: d.Lease, Attempt: d.Attempt, From: p.id, Sent: Stamp{At: p.w.now},
			})
		}
		p.tracef("reply conn=%d %s: no such connection", id, frameText(wire.Encode(nil, m)))
		return
	}
	c := cn.client
	frame := p.w.encode(m)
	p.w.sendSeq++
	stamp := Stamp{At: p.w.now, Seq: p.w.sendSeq}
	if d, ok := m.(*wire.Delivery); ok {
		p.w.hist.Sends = append(p.w.hist.Sends, DeliveryRecord{
			Client: c.index, Queue: d.Queue, ID: d.ID, Lease: d.Lease, Attempt: d.Attempt, From: p.id, Sent: stamp,
		})
	}
	if cn.closed {
		p.tracef("reply conn=%d to=%s %s: the client closed it", id, c.who(), frameText(frame))
		p.w.noteWriteToClosed(p, id, cn)
		return
	}
	arrivals := p.w.net.Route(p.w.now, netsim.Addr(p.id), c.addr, len(frame))
	desc := frameText(frame)
	p.tracef("reply conn=%d to=%s %s copies=%d", id, c.who(), desc, len(arrivals))
	from := p.id
	for _, at := range arrivals {
		p.w.schedule(at, -1, 0, func() {
			if c.gen != cn.gen {
				return // the client restarted: this connection is gone
			}
			m, err := wire.Decode(frame)
			if err != nil {
				panic(fmt.Sprintf("sim: a reply frame does not decode: %v", err))
			}
			c.receive(from, m, stamp, desc)
		})
	}
}

// FS implements node.Env.
func (p *process) FS() vfs.FS { return p.disk.FS() }

// Sync implements node.Env. The sync happens when its latency has passed,
// so a crash in between loses what it would have made durable.
func (p *process) Sync(f vfs.File, tok node.SyncToken) {
	at := p.disk.SyncDone(p.w.now)
	p.w.schedule(at, p.index, p.inc, func() {
		err := f.Sync()
		p.tracef("synced tok=%d err=%v", tok, err)
		p.handler.OnSynced(tok, err)
	})
}

// Rand implements node.Env.
func (p *process) Rand() *rand.Rand { return p.rng }

// Boundary implements node.Env: count the hit and crash here if a
// crash-at fault is waiting for it.
func (p *process) Boundary(name string) {
	p.w.hits[name]++
	p.w.nodeHits[BoundaryHit{p.index, name}]++
	for i := range p.armed {
		a := &p.armed[i]
		if a.boundary != name {
			continue
		}
		if a.remaining--; a.remaining == 0 {
			down := a.down
			p.armed = append(p.armed[:i], p.armed[i+1:]...)
			panic(crashSignal{reason: "at " + name, down: down})
		}
	}
	p.w.crashAtStep(p, name)
}

// Emit implements node.Env.
func (p *process) Emit(e event.Event) {
	p.tracef("emit %s", e)
	p.w.recordNodeEvent(p.id, e)
	p.w.sys.Observe(p.w.now, p.id, e)
}

// Halt implements node.Env.
func (p *process) Halt(reason string) {
	panic(crashSignal{reason: "halt: " + reason, down: haltRestartDelay})
}
