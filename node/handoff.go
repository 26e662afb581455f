package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// A cooperative handoff moves a queue to another of its replicas while
// its owner is alive, on an operator's request (a planned drain, a
// rolling restart, a rebalance), without waiting for a failure detector
// or leaving clients an outcome they cannot know. The owner goes through
// four phases:
//
//   - preparing: if anything was confirmed since the last checkpoint,
//     it asks every replica to checkpoint the queue at its commit index
//     and serves on until the metadata certified that cut, while clients
//     still reach the old owner. The target then starts serving from the
//     state its build left in memory plus the few records after the cut,
//     not from a long log or a decoded checkpoint, and its receipt names
//     its process, which the plan passes on;
//   - draining: it hands out no more deliveries and waits, for at most
//     the request's drain bound, until its consumers have settled or
//     given back every delivery it leased, so that the next owner does
//     not deliver again what a consumer is still working on;
//   - closing: it parks new publishes (they go to the next owner once the
//     metadata names it) and waits until everything it appended, the
//     consumers' last acks included, is confirmed;
//   - proposed: it asks the metadata to make the target the owner of the
//     next epoch, as a failover's plan does.
//
// The target then claims the queue through the ordinary recovery: it
// seals the replicas, selects the most complete history and installs it
// on a quorum before serving. When the plan can name the target's
// process (from its checkpoint receipt), the target starts that recovery
// as soon as the plan applies, without first claiming the epoch. The old
// owner's drain is a courtesy to clients, never a premise of safety: a
// handoff whose owner dies in any phase is a failover.

// handoffDrainDefault is how long a handoff waits for consumers to
// settle what they hold when the request names no bound.
const handoffDrainDefault = 5 * time.Second

// handoffDrainMax bounds the drain a request may ask for.
const handoffDrainMax = 5 * time.Minute

// handoffPrepareMax bounds the preparing phase: a target that has not
// checkpointed by then rebuilds from what it has.
const handoffPrepareMax = 2 * time.Second

// drainCheckpointMax is how many queues a drain may hand off with a
// checkpoint first. A drain of more skips that step for all of them: each
// target then claims its epoch and rebuilds from its log, a metadata round
// more per queue, but no replica builds thousands of checkpoints at once.
// A node stopping with 3,355 queues did, answered pings late, and was
// confirmed down in the middle of its own drain.
const drainCheckpointMax = 64

// handoffCloseMax bounds the closing phase: an owner whose last records
// are not confirmed within it (its followers are cut off) gives the
// handoff up and admits publishes again, rather than park them for good.
const handoffCloseMax = time.Second

// handoff is an owner's handoff in progress.
type handoff struct {
	to NodeID
	// conn and reqID are the admin's request, answered when the metadata
	// names the next owner or the handoff is given up.
	conn  ConnID
	reqID uint64
	// drainFor bounds the drain. prepareEnd is when, on the lease clock,
	// the owner stops waiting for the target's checkpoint at ckptCut
	// (zero: none asked for); drainEnd when it stops waiting for its
	// consumers; closeEnd, once closing, when it gives up waiting for its
	// last records to be confirmed.
	drainFor                       time.Duration
	ckptCut                        uint64
	prepareEnd, drainEnd, closeEnd uint64
	// preparing says the owner still serves, waiting for the checkpoint.
	preparing bool
	// closing says publishes park here; proposed, that the plan was sent
	// to the metadata.
	closing, proposed bool
	// unanswered marks a handoff the node started itself (DrainOwned):
	// no request waits for it.
	unanswered bool
	// noCheckpoint skips the preparing phase: one of many handoffs of a
	// drain (drainCheckpointMax).
	noCheckpoint bool
	// toProcess is the target's process as its latest checkpoint receipt
	// named it (zero: unknown). The plan names it as the next epoch's
	// writer, which spares the target the metadata round of claiming the
	// epoch; a target that restarted since claims it as usual.
	toProcess uint64
}

// onMoveOwner starts handing a queue over to another of its replicas.
func (n *Node) onMoveOwner(conn ConnID, m *wire.MoveOwner) {
	if m.DrainFor < 0 || m.DrainFor > handoffDrainMax {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf(
			"drain bound %v is out of range: a handoff waits 0 (the default, %v) to %v for consumers", m.DrainFor, handoffDrainDefault, handoffDrainMax))
		return
	}
	q := n.meta.state.queues[m.Queue]
	if q != nil && q.State != QueueDeleted && q.Owner == NodeID(m.To) && q.State == QueueActive {
		// Already done: the answer to a retry of a handoff that went through.
		n.env.Reply(conn, &wire.Reply{ReqID: m.ReqID, Status: wire.StatusOK, Owner: m.To})
		return
	}
	if n.parkWhileWaking(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	to := NodeID(m.To)
	if st, why := n.refuseHandoff(q, to); why != "" {
		n.reply(conn, m.ReqID, st, why)
		return
	}
	if h := o.handoff; h != nil {
		n.reply(conn, m.ReqID, wire.StatusUnavailable, fmt.Sprintf("queue %s is already being handed to %s; ask again once it is done", m.Queue, h.to))
		return
	}
	drain := m.DrainFor
	if drain == 0 {
		drain = handoffDrainDefault
	}
	o.beginHandoff(&handoff{to: to, conn: conn, reqID: m.ReqID, drainFor: drain})
}

// beginHandoff starts h: with a checkpoint first if the target would
// otherwise rebuild from a long log.
func (o *ownerState) beginHandoff(h *handoff) {
	n := o.r.n
	o.handoff = h
	h.preparing = o.prepareCheckpoint(h)
	h.prepareEnd = n.leaseClock() + uint64(handoffPrepareMax)
	n.emit(event.NewQueueHandoffStarted(o.r.name, o.r.epoch, uint32(h.to), o.leased()))
	n.env.Boundary("handoff.after.started")
	o.advanceHandoff()
}

// prepareCheckpoint asks for a checkpoint at the commit index if anything
// was confirmed since the last certified cut, and reports whether the
// handoff waits for one: the attempt it started, or one under way. Even
// a short log is worth it: the checkpoint costs the owner nothing while
// it still serves, and spares the target a rebuild and, through the
// process its receipt names, a metadata round once clients wait.
func (o *ownerState) prepareCheckpoint(h *handoff) bool {
	r := o.r
	q := r.n.meta.state.queues[r.name]
	if r.n.cfg.CheckpointRecords < 0 || q == nil || len(q.Prior) > 0 || h.noCheckpoint {
		return false
	}
	if a := o.certify; a != nil {
		h.ckptCut = a.cut
		return true
	}
	if o.commit <= max(q.CheckpointCut, o.lastCertifyCut) {
		return false
	}
	o.startCertify(o.commit, "commit") // the target starts from the latest cut, not a reused one
	h.ckptCut = o.certify.cut
	return true
}

// checkpointSettled reports whether the preparing handoff has what it
// waits for: the attempt at its cut ended, certified or given up (which
// no waiting mends). Waiting for the certificate, not only for the
// target's receipt, matters: a cut still uncertified when the epoch
// changes is certified again by the next owner at once, at its own
// commit index, and every replica then builds a checkpoint in the very
// milliseconds the next owner starts confirming publishes.
func (o *ownerState) checkpointSettled(h *handoff) bool {
	a := o.certify
	return a == nil || a.cut != h.ckptCut
}

// refuseHandoff says why q cannot be handed to to now, and with what
// status: permanently (bad request) or for the moment (unavailable).
func (n *Node) refuseHandoff(q *QueueMeta, to NodeID) (wire.Status, string) {
	switch {
	case to == n.cfg.ID:
		return 0, "" // the caller answered this case already
	case !slices.Contains(q.Replicas, to):
		return wire.StatusBadRequest, fmt.Sprintf("%s holds no replica of queue %s; its replicas are %v", to, q.Name, q.Replicas)
	case q.Policy == wire.PolicyOwnerOnly:
		return wire.StatusBadRequest, fmt.Sprintf("queue %s confirms on its owner alone, so no other replica is known to hold its history", q.Name)
	case containsSorted(q.Lost, to):
		return wire.StatusBadRequest, fmt.Sprintf("%s's replica of queue %s is damaged and waits to be replaced", to, q.Name)
	case len(q.Prior) > 0:
		return wire.StatusUnavailable, fmt.Sprintf("queue %s is having a replica replaced; ask again once it is done", q.Name)
	case n.meta.state.down[to]:
		return wire.StatusUnavailable, fmt.Sprintf("%s is down", to)
	case n.isLeaving(to):
		return wire.StatusBadRequest, fmt.Sprintf("%s is leaving the cluster", to)
	}
	return 0, ""
}

// leased counts the deliveries this owner has out.
func (o *ownerState) leased() int {
	count := 0
	for _, s := range o.subs {
		count += len(s.leases)
	}
	return count
}

// advanceHandoff moves a handoff on as far as it can: the owner calls it
// whenever a lease ends, a record is confirmed, or a tick passes.
func (o *ownerState) advanceHandoff() {
	h := o.handoff
	if h == nil || h.proposed || !o.r.serving() {
		return
	}
	n := o.r.n
	if h.preparing {
		if !o.checkpointSettled(h) && n.leaseClock() < h.prepareEnd {
			return
		}
		h.preparing = false
		n.env.Boundary("handoff.after.prepared")
	}
	if h.drainEnd == 0 {
		h.drainEnd = n.leaseClock() + uint64(h.drainFor)
	}
	if !h.closing {
		if o.leased() > 0 && n.leaseClock() < h.drainEnd && !bugs.Active(bugs.HandoffBeforeDrain) {
			return
		}
		h.closing, h.closeEnd = true, n.leaseClock()+uint64(handoffCloseMax)
		n.env.Boundary("handoff.after.drained")
	}
	if bugs.Active(bugs.HandoffBeforeDrain) {
		// Planted: the owner hands over at once and confirms what it
		// has in flight, trusting the next owner to take its log.
		for _, w := range o.waiters {
			o.answer(w, wire.StatusOK, 0, "")
		}
		o.waiters = nil
	} else if len(o.settling) > 0 || o.replicatePending || o.commit < o.r.log.LastIndex() {
		if n.leaseClock() >= h.closeEnd {
			o.abortHandoff(fmt.Sprintf("what the owner appended was not confirmed within %v", handoffCloseMax))
		}
		return // the last acks and publishes are not confirmed yet
	}
	h.proposed = true
	o.proposeHandoff(h)
}

// proposeHandoff asks the metadata to make the target the owner of the
// next epoch. A refused or lost proposal gives the handoff up.
func (o *ownerState) proposeHandoff(h *handoff) {
	n, name := o.r.n, o.r.name
	q := n.meta.state.queues[name]
	n.emit(event.NewQueueHandoffProposed(name, o.r.epoch, uint32(h.to), o.leased()))
	n.env.Boundary("handoff.before.plan-proposed")
	l := n.life(name)
	if l.proposing {
		o.abortHandoff("another change of the queue is being proposed")
		return
	}
	l.proposing = true
	plan := command{kind: cmdStartRecovery, name: name, inc: q.Incarnation, epoch: q.Epoch, node: h.to, process: h.toProcess}
	n.meta.propose(plan, lifecycleTimeoutTicks, func(res result) {
		l.proposing = false
		if !res.ok {
			n.emit(event.NewMetaProposalFailed(name, int(cmdStartRecovery), res.detail))
			if o.handoff == h && o.r.own == o {
				o.abortHandoff("the metadata did not take the plan: " + res.detail)
			}
			return
		}
		n.reconcile(name)
	})
}

// abortHandoff gives a handoff up: the owner serves on, and the parked
// requests go through it again.
func (o *ownerState) abortHandoff(why string) {
	h := o.handoff
	o.handoff = nil
	n := o.r.n
	n.drainDue = true
	n.emit(event.NewQueueHandoffAborted(o.r.name, o.r.epoch, uint32(h.to), why))
	if !h.unanswered {
		n.reply(h.conn, h.reqID, wire.StatusUnavailable, fmt.Sprintf("handing queue %s to %s failed: %s", o.r.name, h.to, why))
	}
	n.checkParked(o.r.name)
	o.pump()
}

// endHandoff answers the handoff's request as the owner stops serving:
// done if the metadata named the target, given up otherwise.
func (o *ownerState) endHandoff(next NodeID) {
	h := o.handoff
	if h == nil {
		return
	}
	o.handoff = nil
	n := o.r.n
	n.drainDue = true
	switch {
	case next != h.to:
		n.emit(event.NewQueueHandoffAborted(o.r.name, o.r.epoch, uint32(h.to), fmt.Sprintf("the owner stopped serving (next owner %s)", next)))
		if !h.unanswered {
			n.reply(h.conn, h.reqID, wire.StatusUnavailable, fmt.Sprintf("queue %s changed hands otherwise while being handed to %s", o.r.name, h.to))
		}
	case !h.unanswered:
		n.env.Reply(h.conn, &wire.Reply{ReqID: h.reqID, Status: wire.StatusOK, Owner: uint32(h.to)})
	default:
		n.drainHanded++
	}
}

// HandedOff returns how many queues the drain DrainOwned started has
// handed to their targets so far. What the node owns meanwhile can grow
// (a peer's queues fail over to it), so the count is not the difference
// of two Owned readings.
func (n *Node) HandedOff() int { return n.drainHanded }

// handingOff reports whether requests for this replica's queue should
// park here: its owner is closing for a handoff.
func (r *replica) handingOff() bool {
	return r != nil && r.serving() && r.own.handoff != nil && r.own.handoff.closing
}

// DrainOwned starts handing every queue this node serves as owner over
// to another of its replicas, as a node does before a planned shutdown:
// each owner drains its consumers for at most drainFor (zero: the
// default) and proposes the replica the metadata believes up that owns
// the fewest queues. At most drainHandoffsMax handoffs run at once; the
// node starts the next ones itself as those end, on its next tick, until
// it restarts. Queues whose handoff cannot start (no replica up,
// owner-only, a replacement pending) stay. It returns how many handoffs
// are under way once it has started what it may: zero while the node
// still owns queues means none of them can go anywhere now.
func (n *Node) DrainOwned(drainFor time.Duration) int {
	if drainFor <= 0 || drainFor > handoffDrainMax {
		drainFor = handoffDrainDefault
	}
	n.drainFor = drainFor
	if n.meta.isLeader() && !n.meta.confPending {
		n.handLeadershipAway()
	}
	return n.continueDrain()
}

// drainHandoffsMax bounds the handoffs a drain runs at once. Each one
// ends in a recovery on its target: a seal, an inspection and an
// install on every replica, each with its syncs. A node that started
// 3,355 of them at once held its event loop long enough to be confirmed
// down in the middle of its own drain, and its peers then ran thousands
// of recoveries side by side, each seal waiting seconds in their disks'
// queues. A few dozen at a time keep every loop and disk responsive and
// still hand an idle queue over every few milliseconds.
const drainHandoffsMax = 32

// continueDrain starts the handoffs a drain may run now, up to
// drainHandoffsMax under way, and returns how many are under way, counting
// as one an owner that has just begun to serve and may hand off once it
// delivers.
func (n *Node) continueDrain() int {
	if n.drainFor == 0 {
		return 0
	}
	var owners []*ownerState
	running, soon := 0, 0
	for _, name := range n.names {
		r, q := n.queues[name], n.meta.state.queues[name]
		switch {
		case !r.serving():
		case r.own.handoff != nil:
			running++
		case !r.delivering():
			soon++
		case q != nil && q.Owner == n.cfg.ID && q.State == QueueActive:
			owners = append(owners, r.own)
		}
	}
	if len(owners) == 0 || running >= drainHandoffsMax {
		return running + soon // a node still opening has no metadata to count owners in
	}
	if n.meta.handingLeadership() {
		// Every plan would be dropped: start them once another leads.
		n.drainDue = true
		return running + soon + len(owners)
	}
	// Once a drain is large, it stays so: its last queues do not each
	// wait for a checkpoint either.
	n.drainLarge = n.drainLarge || running+len(owners) > drainCheckpointMax
	owned := n.ownedCounts()
	for _, o := range owners {
		to, ok := n.drainTarget(n.meta.state.queues[o.r.name], owned)
		if !ok {
			continue
		}
		owned[to]++
		o.beginHandoff(&handoff{to: to, unanswered: true, drainFor: n.drainFor, noCheckpoint: n.drainLarge})
		if o.handoff != nil {
			running++ // (one given up at once leaves its slot to the next)
		}
		if running == drainHandoffsMax {
			break
		}
	}
	return running + soon
}

// ownedCounts counts, per node, the queues the metadata names it owner
// of, active or recovering.
func (n *Node) ownedCounts() map[NodeID]int {
	owned := map[NodeID]int{}
	for _, name := range n.meta.state.queueNames() {
		if q := n.meta.state.queues[name]; q.State == QueueActive || q.State == QueueRecovering {
			owned[q.Owner]++
		}
	}
	return owned
}

// drainTarget picks the replica of q to hand it to: one the metadata
// holds up and undamaged, whose connection to this node has not broken
// without a word since (a node stopping or dying at the same time),
// owning the fewest queues by owned, the lowest ID on a tie. DrainOwned
// counts once and adds each queue it hands off to its target's count, so
// a node draining thousands of queues spreads them over its peers, and
// does not count every queue again for each (with 10,000 queues that
// held its event loop for seconds, its pings went unanswered, and it was
// confirmed down in the middle of its own handoff).
func (n *Node) drainTarget(q *QueueMeta, owned map[NodeID]int) (NodeID, bool) {
	var best NodeID
	for _, id := range slices.Sorted(slices.Values(q.Replicas)) {
		if _, broken := n.resetAt[id]; broken || id == n.cfg.ID {
			continue
		}
		if st, why := n.refuseHandoff(q, id); why != "" || st != 0 {
			continue
		}
		if best == 0 || owned[id] < owned[best] {
			best = id
		}
	}
	return best, best != 0
}

// Owned returns how many queues this node serves as owner, handing off
// or not.
func (n *Node) Owned() int {
	count := 0
	for _, name := range n.names {
		if n.queues[name].serving() {
			count++
		}
	}
	return count
}

// deliveryCounts lists how often this owner sent each live message it
// sent at all, in ID order, at most wire.MaxDeliveryCounts of them: the
// counts a released old owner hands its successor in its seal answer, so
// that they (and with them a delivery limit) carry across a planned move.
func (o *ownerState) deliveryCounts() []wire.DeliveryCount {
	var out []wire.DeliveryCount
	ids := slices.SortedFunc(maps.Keys(o.state.messages), func(a, b wire.MessageID) int {
		return cmp.Or(cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Seq, b.Seq))
	})
	for _, id := range ids {
		if m := o.state.messages[id]; m.attempts > 0 && !m.dead {
			out = append(out, wire.DeliveryCount{ID: id, Count: m.attempts})
			if len(out) == wire.MaxDeliveryCounts {
				break
			}
		}
	}
	return out
}

// takeDeliveryCounts raises this owner's counts to those its predecessor
// handed over: a count only ever grows, and a message settled since is
// not there any more.
func (o *ownerState) takeDeliveryCounts(counts []wire.DeliveryCount) {
	for _, c := range counts {
		if m := o.state.messages[c.ID]; m != nil && m.attempts < c.Count {
			m.attempts = c.Count
		}
	}
}
