package node

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Resting owners. An owner keeps its quorum's grant fresh with an empty
// append to each follower every quarter of its silence limit, about 50
// a second per follower whether or not anyone uses the queue. With
// thousands of queues that is most of a node's work (an idle node with
// 500 queues spent a fifth of a core reading and writing heartbeats),
// and at 4,300 queues the nodes answered pings so late that their peers
// took them for dead.
//
// So an owner whose queue has been idle for Config.RestAfter, with
// nothing unconfirmed, every follower caught up and nothing else to do
// (no message leased or waiting for its subscribers, no waiter, delayed
// message, dead-letter move, handoff or checkpoint attempt), rests: it sends its followers one last append
// saying so (wire.Append.Rest), and from then on one every
// restHeartbeatAlone (restHeartbeat if it has subscribers), not four per
// silence limit. Its grant lapses
// after the silence limit, and with it the right to serve, exactly as if
// it were cut off from its quorum (quorum.go): its view says so, and
// nothing it did before can let it deliver or answer later.
//
// The next request, or new work of its own, wakes it: it sends every
// follower an append at once. A request that needs the quorum's grant
// waits on the node (park.go) until a quorum accepts one of those
// appends in the same epoch, one round trip, and goes through again;
// if none does within the silence limit the owner is cut off for real
// and the request is refused as it would have been. A replica sealed by
// a newer epoch meanwhile refuses the appends, which makes the owner
// stale: resting never lets an owner serve where a cut-off one could
// not, because it regains the right to serve the same way.
//
// The seldom heartbeats are there for what an owner learns from its
// followers' answers: a follower sealed by a newer epoch refuses one,
// which makes the owner stale before anyone asks it; and a follower that
// restarted, perhaps over an empty disk, answers one and is caught up
// (from the checkpoint if need be). The restart is usually known sooner:
// the follower's node resets its connection, which puts the owner to
// probing that follower at once (peerReset), so a resting queue is not
// left on fewer full replicas than it had for longer than a round trip;
// the heartbeat is the backstop.
//
// Followers that took the resting append hold no request back for the
// owner's silence (replica.ownerSilent): the owner is quiet by choice,
// and a request is better sent to it, which wakes it, than held until
// a failover that never comes. A dead resting owner is found by the
// failure detector, which pings nodes, not queues.

// defaultRestAfter is how long an owner's queue must have been idle
// before it rests, unless the configuration says otherwise: long enough
// that a queue in use between bursts keeps its grant (a wake costs the
// next request a round trip), short enough that a node with thousands of
// queues spends its time on the ones in use.
const defaultRestAfter = 2 * time.Second

// dozeTicks is how many ticks apart the replicas of a resting queue do
// their per-tick work (its owner's and its followers'), staggered across
// queues: with thousands of idle queues, a pass over every replica every
// tick was most of what an idle node still did once owners rested. At
// 10,000 queues, visits every eighth tick were still two fifths of an
// idle node's tick work; nothing a resting queue does is due more often
// than its heartbeat, so it is visited every 25 ticks (half a second at
// the default tick), which adds that much to how late a resting owner
// with subscribers finds it is cut off.
const dozeTicks = 25

// restHeartbeat is how often a resting owner with subscribers still
// sends each follower an empty append: a fiftieth of what an idle owner
// sends awake. Its answers tell the owner soon that it is cut off, and
// then its subscribers go and look for the queue elsewhere.
const restHeartbeat = time.Second

// restHeartbeatAlone is how often a resting owner that no subscriber
// waits on sends one. With nobody to send away, what the heartbeats find
// out is found out otherwise too: a follower that restarted resets its
// connection, which puts the owner to probing it (peerReset) and so wakes
// it; a newer epoch comes with the metadata. At 10,000 idle queues the
// one-second heartbeats alone were tens of thousands of messages a second
// per node.
const restHeartbeatAlone = 10 * time.Second

// restHeartbeatEvery is this resting owner's heartbeat interval.
func (o *ownerState) restHeartbeatEvery() time.Duration {
	if len(o.subs) > 0 {
		return restHeartbeat
	}
	return restHeartbeatAlone
}

// quiet reports whether this owner has nothing to do that needs its
// quorum's grant kept fresh: it may rest, or go on resting.
func (o *ownerState) quiet() bool {
	r := o.r
	if !r.serving() || o.outwaiting() || o.hold.until != 0 || o.activationWaits || o.activeUnsaid ||
		o.rebuild != nil || o.handoff != nil || o.certify != nil {
		return false
	}
	if len(o.waiters) > 0 || len(o.settling) > 0 || o.replicatePending || o.pumpPending ||
		len(o.moves) > 0 || len(o.purges.held) > 0 || len(o.state.delayed) > 0 || o.state.dead > 0 {
		return false
	}
	if len(o.subs) > 0 && len(o.state.messages) > 0 {
		return false // a subscriber holds a lease, or is owed a delivery
	}
	last := r.log.LastIndex()
	if o.commit != last {
		return false
	}
	for _, f := range o.followers {
		if f.probing || f.match != last || f.next != last+1 {
			return false
		}
	}
	return true
}

// restTick runs at every owner tick before the heartbeats: a busy owner
// notes it is busy, an owner idle for Config.RestAfter rests, a resting
// one whose seldom heartbeats nobody answers is cut off, and a resting one
// with work again wakes.
func (o *ownerState) restTick() {
	n := o.r.n
	now := n.leaseClock()
	switch {
	case !o.quiet():
		o.busyAt = now
		o.wake()
	case o.cutOffNoted && !o.resting:
		// Idle but cut off from its quorum, it rests only once a quorum
		// answers again. Its silence is not work, so the count toward
		// RestAfter goes on: an idle owner whose quorum a stall cut off
		// rests as soon as the quorum is back, rather than heartbeat for
		// RestAfter more and lose it again in the next stall. On two busy
		// cores with 10,000 queues, a stall left thousands of owners
		// heartbeating one frame each every 75 ms, which made the next
		// stall, and none of them rested again.
	case o.resting && o.quorumSilence() >= o.restHeartbeatEvery()+dozeTicks*n.cfg.Tick+2*n.ownerSilenceLimit():
		o.restCutOff()
	case o.resting || n.cfg.RestAfter < 0:
	case now-min(max(o.busyAt, o.servingFrom), now) >= uint64(n.cfg.RestAfter):
		o.rest()
	}
	if o.wakeBy != 0 && now >= o.wakeBy {
		// No quorum answered the wake: the owner is cut off for real,
		// and the requests that waited for it are refused as such. The
		// lapse it noted silently while it rested is forgotten, so this
		// tick's noteCutOff says it and sends its subscribers away, as
		// restCutOff has it: left standing, the note kept a subscriber
		// with an owner that could not deliver for as long as the cut
		// lasted.
		o.wakeBy = 0
		o.cutOffNoted = false
		o.r.n.checkParked(o.r.name)
	}
}

// rest stops this owner's heartbeats, after one last append to each
// follower that says it rests.
func (o *ownerState) rest() {
	o.resting, o.restingFrom = true, o.r.n.leaseClock()
	o.r.n.emit(event.NewQueueResting(o.r.name, o.r.epoch))
	for _, f := range o.followers {
		o.sendPage(f, f.next, f.next-1)
	}
}

// restCutOff ends the rest of an owner whose seldom heartbeats no quorum
// answered: it is cut off for real. It becomes an owner cut off from its
// quorum that has not said so yet, so this tick's noteCutOff says it and
// sends its subscribers away, to look for the queue elsewhere; until now
// a subscriber of a resting owner stayed, as it would be owed the next
// message. The owner keeps sending appends, every few ticks again, as a
// cut-off owner does.
func (o *ownerState) restCutOff() {
	silence := o.quorumSilence()
	o.stopResting()
	o.r.n.emit(event.NewQueueRestCutOff(o.r.name, o.r.epoch, silence))
	o.cutOffNoted, o.wakeBy = false, 0
}

// stopResting ends a rest and says for how long the owner rested.
func (o *ownerState) stopResting() {
	now := o.r.n.leaseClock()
	o.resting = false
	o.r.n.rouse(o.r)
	o.r.n.emit(event.NewQueueWaking(o.r.name, o.r.epoch, time.Duration(now-min(o.restingFrom, now))))
}

// noteBusy records a request for this owner's queue: it wakes a resting
// owner, and puts off the next rest.
func (o *ownerState) noteBusy() {
	o.busyAt = o.r.n.leaseClock()
	o.wake()
}

// wake ends a rest: every follower gets an append now, and if the grant
// has lapsed meanwhile, requests that need it wait until a quorum accepts
// one (waking).
func (o *ownerState) wake() {
	if !o.resting {
		return
	}
	o.stopResting()
	if o.cutOff() {
		o.wakeBy = o.r.n.leaseClock() + uint64(o.r.n.ownerSilenceLimit())
	}
	last := o.r.log.LastIndex()
	for _, f := range o.followers {
		if f.probing || f.next <= last {
			o.sendTo(f)
		} else {
			o.sendPage(f, f.next, f.next-1)
		}
	}
}

// endRest forgets a rest or a wake when the owner stops serving: the
// requests that waited for its quorum go through the node again at the
// next tick (checkParked), once the replica has settled in its new role,
// and are sent elsewhere.
func (o *ownerState) endRest() {
	o.resting, o.wakeBy = false, 0
}

// waking reports whether this owner woke from a rest and waits for its
// quorum's first answer: requests that need its grant wait on the node
// meanwhile.
func (o *ownerState) waking() bool { return o.wakeBy != 0 }

// noteWakeAnswered lets a waking owner serve once a quorum has accepted
// its appends again, without waiting for the next tick, and sends the
// requests that waited for it through again.
func (o *ownerState) noteWakeAnswered() {
	if o.wakeBy == 0 || o.noteCutOff() {
		return
	}
	o.wakeBy = 0
	o.r.n.checkParked(o.r.name)
}

// parkWhileWaking wakes queue's resting owner on this node, if it has
// one, and parks req, a request that is not parked during a failover,
// until the owner's quorum answers: an operator's question about an idle
// queue, a move of its owner, or an ack or extension that arrives as it
// rests waits a round trip rather than being refused. It reports whether
// it parked req.
func (n *Node) parkWhileWaking(conn ConnID, queue string, req wire.Message) bool {
	n.wakeResting(queue)
	return n.queues[queue].waking() && n.park(conn, queue, req)
}

// wakeResting wakes queue's resting owner on this node, if it has one,
// for a request that has just arrived.
func (n *Node) wakeResting(queue string) {
	if r := n.queues[queue]; r != nil && r.serving() && r.own != nil {
		r.own.noteBusy()
	}
}

// tickSlot is a replica's place in the node's per-tick pass. The pass
// reads a compact array and looks at a dozing replica only on the ticks
// it is due, so a node with thousands of resting queues does not load
// each of them from memory every tick to find that out: with 2,000
// queues that check alone was an eighth of an idle node's time.
type tickSlot struct {
	r *replica
	// skipUntil is the first tick at which the pass looks at r again
	// (zero: every tick). It is set when the pass finds r dozing, and
	// cleared (rouse) the moment r stops dozing, so waking never waits
	// for the mark to run out.
	skipUntil uint64
}

// nextDozeVisit is the next tick at which the pass looks at the dozing
// replica in slot i again: the replicas of resting queues are spread
// over the dozeTicks ticks by their place, so they do not all come due on
// the same tick after resting together (a restart, a burst of creates).
func (n *Node) nextDozeVisit(i int) uint64 {
	return n.tickSeq + dozeTicks - (n.tickSeq+uint64(i))%dozeTicks
}

// rouse puts r back in every tick of the pass: it stopped dozing (its
// owner woke, or it changed role).
func (n *Node) rouse(r *replica) {
	i, found := slices.BinarySearch(n.names, r.name)
	if found && n.slots[i].r == r {
		n.slots[i].skipUntil = 0
	}
}

// restFiles lets the logs of a dozing replica close their write handles
// until the next append (storage.Log.Rest): a node with 10,000 resting
// queues held 10,000 descriptors for them. Its empty record tail gives
// its room back too.
func (r *replica) restFiles() {
	r.tail.release()
	if r.log != nil {
		r.log.Rest()
	}
	if r.journal != nil && r.journal.wait == 0 {
		r.journal.log.Rest()
	}
}

// dozing reports whether the replica belongs to a resting queue: its
// owner rests, or it follows an owner that said it rests. Its per-tick
// work then runs every dozeTicks ticks: a resting owner's seldom
// heartbeat and its checks, and a follower's checkpoint steps, are not
// pressed for time.
func (r *replica) dozing() bool {
	switch r.role {
	case roleOwner:
		return r.own.resting
	case roleFollower:
		return r.ownerRests()
	}
	return false
}

// ownerRests reports whether this follower's owner said it rests, in the
// epoch the replica is in now.
func (r *replica) ownerRests() bool {
	return r.follow.restsIn != 0 && r.follow.restsIn == r.epoch
}

// waking reports whether the replica is an owner that woke from a rest
// and waits for its quorum's first answer.
func (r *replica) waking() bool {
	return r != nil && r.serving() && r.own != nil && r.own.waking()
}
