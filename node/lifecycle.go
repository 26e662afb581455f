package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// lifecycleTimeoutTicks bounds how long a lifecycle proposal may wait for
// the metadata leader before this node tries again.
const lifecycleTimeoutTicks = 20

// lifecycleRetryTicks is how often every queue is reconciled again, to
// retry proposals that were lost.
const lifecycleRetryTicks = 4

// queueLife is what this node is doing about one queue's life: a proposal
// in flight, and client requests waiting for the queue to activate or go.
type queueLife struct {
	proposing     bool
	createWaiters []lifeWaiter
}

type lifeWaiter struct {
	conn  ConnID
	reqID uint64
	inc   uint64
}

func (n *Node) life(name string) *queueLife {
	l := n.lifecycle[name]
	if l == nil {
		l = &queueLife{}
		n.lifecycle[name] = l
	}
	return l
}

// onMetaApplied reacts to a committed metadata command, on every node.
func (n *Node) onMetaApplied(index uint64, c command, res result) {
	var name string
	switch c.kind {
	case cmdCreate:
		name = c.queue.Name
	case cmdPrepared, cmdActivate, cmdBumpEpoch, cmdDelete, cmdStartRecovery, cmdActivateRecovered, cmdReplicaLost, cmdReplacePreparing:
		name = c.name
	case cmdCertifyCheckpoint:
		n.onCertified(c, res)
		return
	case cmdLeave:
		n.onMembershipApplied(c, res)
		return
	case cmdRebalance, cmdRebalanced:
		n.emit(event.NewMetaRebalance(c.kind == cmdRebalance))
		return
	default:
		n.onMetaPolicyApplied(c, res)
		return
	}
	if res.activated {
		n.emit(event.NewMetaActivated(name, c.inc))
		n.answerCreates(name, c.inc)
	}
	if res.ok && c.kind == cmdDelete {
		n.emit(event.NewMetaDeleted(name, c.inc))
	}
	if res.ok && c.kind == cmdActivateRecovered {
		n.emit(event.NewMetaRecoveryActivated(name, c.inc, c.epoch, nodeNumbers(c.members)))
	}
	if res.replaced {
		q := n.meta.state.queues[name]
		n.emit(event.NewMetaReplicaReplaced(name, c.epoch, nodeNumbers(q.Replicas)))
	}
	n.reconcile(name)
	n.checkParked(name)
}

// answerCreates replies to create requests this node holds for an
// incarnation that just activated.
func (n *Node) answerCreates(name string, inc uint64) {
	l := n.life(name)
	kept := l.createWaiters[:0]
	for _, w := range l.createWaiters {
		if w.inc == inc {
			n.reply(w.conn, w.reqID, wire.StatusOK, "")
			continue
		}
		kept = append(kept, w)
	}
	l.createWaiters = kept
}

// reconcileAll reconciles every queue the metadata or the disk knows.
func (n *Node) reconcileAll() {
	// Both lists are sorted: walk them together, each name once. The
	// node's list is copied, as reconciling adds and retires replicas.
	known, held := n.meta.state.queueNames(), slices.Clone(n.names)
	for len(known) > 0 || len(held) > 0 {
		var name string
		switch {
		case len(held) == 0 || len(known) > 0 && known[0] < held[0]:
			name, known = known[0], known[1:]
		case len(known) == 0 || held[0] < known[0]:
			name, held = held[0], held[1:]
		default:
			name, known, held = known[0], known[1:], held[1:]
		}
		n.reconcile(name)
	}
}

func (n *Node) retryLifecycle() {
	if n.started && n.meta.ticks%lifecycleRetryTicks == 0 {
		n.reconcileAll()
		n.planFailovers()
		n.drainIfLeaving()
		// A drain also starts, now and then, what no handoff's end set
		// going: a queue whose owner has only just begun to deliver.
		n.continueDrain()
	}
}

// reconcile moves this node's replica of a queue one step toward what the
// metadata says it should be.
func (n *Node) reconcile(name string) {
	if !n.started {
		return
	}
	q := n.meta.state.queues[name]
	r := n.queues[name]
	deleted := q != nil && q.State == QueueDeleted && !bugs.Active(bugs.DeleteKeepsReplicas)
	if r != nil && (q == nil || q.Incarnation != r.inc || deleted) {
		n.retire(r)
		r = nil
	}
	if q == nil || q.State == QueueDeleted {
		return
	}
	if !slices.Contains(q.Replicas, n.cfg.ID) {
		switch {
		case r == nil && slices.Contains(q.Prior, n.cfg.ID) && !containsSorted(q.Lost, n.cfg.ID):
			// Being replaced, it is in the set the replacement's seal
			// draws its witnesses from, but this node holds no replica
			// to answer with: it never prepared one (it was down while
			// the queue was made) or its disk lost it. A seal that needs
			// every witness (the others restarted and are suspect) would
			// wait for its answer for good, so it prepares an empty
			// replica, suspect as any replica prepared for a queue with
			// a history is, and answers with that. It does not report
			// itself lost: the metadata's lost replicas are the queue's
			// liar, whom the seal no longer waits for and whose
			// witness it refuses, and a node that never held the queue
			// is no liar. Counted as one, it took the place of a disk
			// that later lied, and a seal of three with two lost could
			// never gather the two witnesses it needs (seed 72201).
			n.prepare(q)
		case r == nil:
		case r.epoch > q.Epoch:
			// This replica followed an owner in a newer epoch than this
			// node's metadata knows of: the metadata lags, and a newer
			// plan may have named this node again. Dropping the replica
			// now would destroy a history that owner counts on to
			// activate its epoch. Wait for the metadata.
		case !slices.Contains(q.Prior, n.cfg.ID):
			n.dropReplaced(r)
		case r.role == rolePreparing && !containsSorted(q.Lost, n.cfg.ID):
			// The empty replica the first case prepared was cut short by
			// a crash after its directory was made and before its
			// identity was durable: reopened, it holds storage but no
			// identity, and takes no part. Left so, it never answers the
			// seal it was prepared for, and a seal that needs every
			// witness waits for good (seed 1056: a failed sync of the
			// identity halted n2, and the recovery of q0 and dl waited
			// for its answer until the run ended). So it finishes the
			// preparation.
			n.finishPreparing(r, q)
		case r.role == roleFenced:
			// Being replaced, it is still in the set the replacement's
			// seal draws its witnesses from: if it never says it is lost,
			// a seal that needs every witness (the others restarted and
			// are suspect) waits for its answer for good.
			n.reportLost(q)
		}
		return
	}
	if members := servedMembers(r, q); r != nil && !slices.Equal(r.members, members) {
		r.setMembers(members)
	}
	switch {
	case r == nil:
		n.prepare(q)
	case r.role == roleFenced:
		n.reportLost(q)
	case r.role == rolePreparing:
		n.finishPreparing(r, q)
	case q.State == QueuePreparing && containsSorted(q.Lost, n.cfg.ID):
		// Once lost, always lost for this incarnation: the metadata turns
		// down its prepared report, however pristine the storage is now.
	case q.State == QueuePreparing && !containsSorted(q.Prepared, n.cfg.ID):
		// The process goes along: the owner's report may complete the
		// quorum, and the process that reported takes epoch 1.
		n.proposeLife(name, command{kind: cmdPrepared, name: name, inc: q.Incarnation, node: n.cfg.ID, process: n.process})
	case q.State == QueuePreparing && q.Owner == n.cfg.ID:
		if members, ok := exactQuorum(q); ok {
			n.proposeLife(name, command{kind: cmdActivate, name: name, inc: q.Incarnation, members: members, process: n.process})
		}
	case q.State == QueuePreparing:
	case q.Owner == n.cfg.ID && r.epoch > q.Epoch:
		// This replica was sealed at a newer epoch than this node's
		// metadata knows of: the metadata lags, and acting on it would
		// revive a superseded owner. Wait for it.
		r.becomeFollower(0)
	case q.Owner == n.cfg.ID && r.role == roleStale && q.State != QueueRecovering:
		// Superseded in this process; a new epoch comes only through a
		// new process or a new plan.
	case q.Owner == n.cfg.ID:
		if r.becomeCandidate("the metadata names this node owner") {
			n.reconcileOwner(r, q)
		}
	default:
		r.becomeFollower(q.Owner)
	}
}

// servedMembers is the replica set r should replicate to and count
// quorums in. It is the metadata's set, except for an owner still serving
// an epoch older than a pending replacement's plan: its epoch's history is
// what the plan's seal collects from the prior set, so it must keep
// confirming records and granting its lease on a quorum of that set. Were
// it to count a newcomer instead, a record held only by itself and the
// newcomer would be confirmed, and a seal quorum of the prior set that
// lacks it would let the recovery truncate it. The candidate adopts the
// new set when its recovery starts.
func servedMembers(r *replica, q *QueueMeta) []NodeID {
	if r != nil && len(q.Prior) > 0 && r.serving() && r.epoch < q.Epoch && !bugs.Active(bugs.OwnerCountsReplacementSet) {
		return q.Prior
	}
	return q.Replicas
}

// reportLost tells the metadata that this node's replica of q is fenced:
// damaged storage is lost for good, so an owner is failed over, the
// replica replaced, and no seal waits for its answer. A queue still being
// created is told too: its owner-designate's loss would otherwise keep it
// from ever activating.
func (n *Node) reportLost(q *QueueMeta) {
	if !containsSorted(q.Lost, n.cfg.ID) {
		n.proposeLife(q.Name, command{kind: cmdReplicaLost, name: q.Name, inc: q.Incarnation, node: n.cfg.ID})
	}
}

func containsSorted(ids []NodeID, id NodeID) bool {
	_, found := slices.BinarySearch(ids, id)
	return found
}

// exactQuorum picks the owner and enough other prepared replicas, in ID
// order, to make exactly the policy's quorum.
func exactQuorum(q *QueueMeta) ([]NodeID, bool) {
	need := quorum(q.Policy, len(q.Replicas))
	if !containsSorted(q.Prepared, q.Owner) {
		return nil, false
	}
	members := []NodeID{q.Owner}
	for _, id := range q.Prepared {
		if len(members) == need {
			break
		}
		if id != q.Owner {
			members = append(members, id)
		}
	}
	if len(members) < need {
		return nil, false
	}
	slices.Sort(members)
	return members, true
}

// finishPreparing ends a preparation a crash cut short (storage made, no
// identity yet) as prepare would have ended it: suspect when the queue
// already has a history, since this node may be one that lost its disk
// and once reported records it no longer holds. Reopening marks a
// replica suspect only when it finds an identity, and this one has none.
func (n *Node) finishPreparing(r *replica, q *QueueMeta) {
	if n.preparing[r.name] {
		// This process's own preparation is still writing the identity:
		// nothing cut it short, and prepare already judged the replica
		// by the queue's state when it began. The queue may have been
		// activated meanwhile by the other prepared replicas, but this
		// storage, made by this process, has reported nothing to anyone;
		// marking it suspect here would make a seal it takes part in wait
		// for one witness more than it needs, for no reason (seed 92390:
		// n1's replica of q0 turned suspect so, and the recovery after
		// its owner died waited 6s for that owner to come back).
		return
	}
	r.suspect = r.suspect || q.State != QueuePreparing && !(bugs.Active(bugs.RejoinedReplicaTrusted) && n.cfg.Rejoin)
	n.recordIdentity(r, q)
}

// prepare creates pristine storage for a queue incarnation: the directory
// is made durable, then the identity the metadata assigned is recorded
// durably; only then does the replica report itself prepared.
func (n *Node) prepare(q *QueueMeta) {
	if n.preparing[q.Name] {
		return
	}
	n.preparing[q.Name] = true
	name, inc, members := q.Name, q.Incarnation, slices.Clone(q.Replicas)
	// A replica prepared for a queue that already has a history is a
	// newcomer or a node that lost its disk: in the latter case it once
	// reported records durable that it no longer holds, so it is suspect
	// until an owner has verified it, like a replica reopened after a
	// crash. A node whose metadata is catching up (it lost its disk) may
	// be replaying the log from before the queue was active: the queue
	// looks new, yet this node may once have reported its records
	// durable, so its replica is suspect all the same.
	existing := q.State != QueuePreparing || n.meta.catchingUp
	if bugs.Active(bugs.RejoinedReplicaTrusted) && n.cfg.Rejoin {
		existing = false
	}
	n.env.Boundary("queue.before.prepare")
	storage.MakeDirs(n.env.FS(), n.replicaDir(name, inc), n.syncs, func(err error) {
		if err != nil {
			n.env.Halt(fmt.Sprintf("preparing queue %s: %v", name, err))
			return
		}
		r := n.openReplica(name, inc, members)
		delete(n.preparing, name)
		r.suspect = r.suspect || existing
		if r.role != roleFenced {
			n.recordIdentity(r, q)
		}
	})
}

// recordIdentity makes the identity the metadata assigned durable in a
// replica that does not have it yet (a crash may have struck between
// creating the directory and writing it).
//
// A queue still being created opens at epoch 1, whatever its owner (the
// metadata activates every new queue there), so a replica of one records
// that epoch with its identity: the owner's activation and the first
// append a follower takes then find it durable, and a new replica costs
// one state file write instead of two. Epoch 1 is the lowest any owner
// serves in, so promising it refuses no owner the metadata could name.
//
// A replica prepared for a queue that already has a history records the
// epoch the metadata holds for it: every owner of an older epoch is stale.
// Such a replica may be a member's whose disk was lost: its seal at a
// newer epoch went with the disk, and a stale owner still serving an
// older one counted the empty replica, which took its appends at epoch
// 0, as the witness the seal had taken away, and confirmed publishes no
// newer owner held (seed 956518 of the long sweep: n1, owner of epoch 3
// and removed from the cluster since, confirmed with n2, rejoined over
// an empty disk, while the queue was at epoch 7).
func (n *Node) recordIdentity(r *replica, q *QueueMeta) {
	if n.preparing[r.name] {
		return
	}
	n.preparing[r.name] = true
	r.identity = replicaIdentity{Incarnation: q.Incarnation, HistoryID: q.HistoryID, SessionID: q.SessionID}
	switch {
	case q.State == QueuePreparing:
		r.epoch = max(r.epoch, firstEpoch)
	case !bugs.Active(bugs.OwnerCountsReplacementSet):
		// Planted (the condition): the newcomer a replacement prepares
		// promises no epoch either, so it takes the appends of the owner
		// that counts it; with the promise, that owner's appends are
		// refused, and the bug alone does no harm.
		r.epoch = max(r.epoch, q.Epoch)
	}
	opened := r.log
	r.persistEpoch(r.epoch, func() {
		delete(n.preparing, r.name)
		if r.log == opened {
			// The write synced the replica's directory after the log
			// directory was made in it (the replica opened this log
			// first). A log opened since may have made its directory
			// after the sync began.
			r.log.DirSynced(n.replicaDir(r.name, r.inc))
		}
		n.env.Boundary("queue.after.prepare")
		n.reconcile(r.name)
	})
}

// reconcileOwner brings the owner into the metadata's current epoch: if
// the epoch belongs to this process, make it durable locally and serve;
// otherwise ask the metadata for a new one.
func (n *Node) reconcileOwner(r *replica, q *QueueMeta) {
	o := r.own
	switch {
	case q.State == QueueRecovering && q.OwnerProcess != n.process:
		// The plan names this node; this process claims its epoch.
		n.claimEpoch(r, q)
		return
	case q.State == QueueRecovering:
		if o.recovery == nil || o.recovery.Epoch() != q.Epoch {
			o.startRecovery(q)
		}
		return
	case bugs.Active(bugs.AdmitBeforeInstallQuorum) && r.serving() && o.recovery != nil &&
		o.recovery.Epoch() == q.Epoch && q.OwnerProcess == n.process:
		// Planted: the recovery admitted clients before the metadata
		// activated its epoch; now that it has, the attempt ends.
		o.finishRecovery(q)
		return
	case r.serving() && r.epoch == q.Epoch || o.epochWriting || o.opening != 0:
		return
	case o.recovery != nil && o.recovery.Epoch() == q.Epoch && q.OwnerProcess == n.process:
		o.finishRecovery(q)
		return
	}
	if q.OwnerProcess == n.process {
		epoch := q.Epoch
		durable := r.epochDurable
		if bugs.Active(bugs.OwnerEpochFromMemory) {
			durable = epoch // Planted: the epoch just set in memory.
		}
		r.epoch = epoch
		if durable == epoch {
			// The replica recorded this epoch when it was prepared (a new
			// queue's first): nothing to write.
			o.activatePlain(r.epoch)
			return
		}
		o.epochWriting = true
		n.env.Boundary("queue.before.persist-epoch")
		r.persistEpoch(epoch, func() {
			n.env.Boundary("queue.after.persist-epoch")
			o.epochWriting = false
			o.activatePlain(epoch)
		})
		return
	}
	if bugs.Active(bugs.EpochNotDurable) {
		// Planted: the next epoch comes from local memory, unrecorded.
		r.epoch = max(q.Epoch, r.epochOf(r.log.LastIndex())) + 1
		o.activate(q)
		return
	}
	if bugs.Active(bugs.RestartOwnerWaits) && n.env.Monotonic() < n.cfg.ReplaceAfter {
		return // Planted: the periodic reconcile claims once the wait is over.
	}
	n.claimEpoch(r, q)
}

// activatePlain opens epoch, durable in this replica, if the metadata
// still asks this process to open it by itself. The replica may have
// moved on while the epoch was being written: a newer epoch made it
// follow, or go stale, or a plan to recover into the next epoch reached
// this process, which claimed that epoch and started the recovery.
func (o *ownerState) activatePlain(epoch uint64) {
	r, n := o.r, o.r.n
	cur := n.meta.state.queues[r.name]
	if r.own == o && r.role == roleCandidate && o.recovery == nil && r.epoch == epoch &&
		plainActivationStands(cur, r.inc, n.process, epoch) {
		o.activate(cur)
	}
}

// plainActivationStands reports whether the metadata still asks this
// process to open epoch by itself, as it did when the process began to
// make that epoch durable: same incarnation, same owner process, same
// epoch, and no recovery planned. A recovery is opened only by the
// recovery protocol, which serves once the metadata activates it; were
// the plain activation opened in the recovery's epoch instead (the
// recovery raised the replica's epoch to the one the metadata holds
// while the old write was in flight), the candidate would serve as soon
// as a quorum held a marker, before the metadata activated the epoch.
func plainActivationStands(cur *QueueMeta, inc, process, epoch uint64) bool {
	return cur != nil && cur.Incarnation == inc && cur.OwnerProcess == process &&
		cur.Epoch == epoch && cur.State != QueueRecovering
}

// claimEpoch asks the metadata for the epoch this process is to write
// in: the plan's own if no process took it yet, the next one otherwise.
func (n *Node) claimEpoch(r *replica, q *QueueMeta) {
	if n.life(r.name).proposing {
		return // one proposal per queue at a time; the next reconcile asks again
	}
	n.emit(event.NewQueueClaim(r.name, q.Epoch))
	n.proposeLife(r.name, command{kind: cmdBumpEpoch, name: r.name, inc: r.inc, node: n.cfg.ID, process: n.process, epoch: q.Epoch})
}

// proposeLife submits one lifecycle proposal per queue at a time. A
// failure is left for the periodic reconcile to retry, never retried at
// once: with no leader, it would fail again immediately. A success
// reconciles the queue at once: the command's own apply reconciled it
// while this proposal still blocked the next step (a plan that names this
// node, waiting to claim its epoch), which would otherwise wait for the
// periodic reconcile. So does a failure after the queue moved to another
// epoch (see reconcileAtOnce).
func (n *Node) proposeLife(name string, c command) {
	l := n.life(name)
	if l.proposing {
		return
	}
	l.proposing = true
	before := n.queueEpoch(name)
	n.meta.propose(c, lifecycleTimeoutTicks, func(res result) {
		l.proposing = false
		if !res.ok {
			n.emit(event.NewMetaProposalFailed(name, int(c.kind), res.detail))
			if reconcileAtOnce(before, n.queueEpoch(name), res) {
				n.reconcile(name)
			}
			return
		}
		n.reconcile(name)
	})
}

// queueEpoch is the incarnation and epoch the metadata gives a queue
// (zero if it holds none).
type queueEpoch struct{ inc, epoch uint64 }

// queueEpoch returns what the applied metadata says of name's epoch.
func (n *Node) queueEpoch(name string) queueEpoch {
	q := n.meta.state.queues[name]
	if q == nil {
		return queueEpoch{}
	}
	return queueEpoch{inc: q.Incarnation, epoch: q.Epoch}
}

// reconcileAtOnce reports whether a failed lifecycle proposal is to be
// followed by a reconcile at once: the queue's incarnation or epoch
// changed while it was out, and the proposal was not dropped before it
// reached a leader. The change was applied while the proposal still
// blocked this queue's next step, so the reconcile that apply ran was
// turned away; left to the periodic reconcile, the next step waits up to
// a lifecycle period for nothing (seed 283854: the target of a handoff
// claimed the handoff's epoch while the leader planned a replacement
// into the next one; the claim was refused just after a periodic
// reconcile, and the claim of the replacement's epoch waited 200 ms for
// the next). Neither can loop: a dropped proposal would fail again at
// once, so it is left to the periodic reconcile; and each reconcile
// taken at once follows an epoch change of its own, which only a
// committed entry makes.
func reconcileAtOnce(before, now queueEpoch, res result) bool {
	return !res.dropped && before != now
}

// retire stops serving a replica the metadata no longer wants: deleted,
// or replaced by a newer incarnation. Its files stay for an operator.
func (n *Node) retire(r *replica) {
	r.become(roleRetired, "the metadata no longer wants this replica")
	if r.log != nil {
		r.log.Close()
	}
	r.closeJournal()
	delete(n.queues, r.name)
	delete(n.receiving, r.name)
	n.names = slices.DeleteFunc(n.names, func(s string) bool { return s == r.name })
	n.slots = slices.DeleteFunc(n.slots, func(s tickSlot) bool { return s.r == r })
	n.emit(event.NewQueueRetired(r.name, r.inc))
}

// onMetaSnapshot reconciles everything after a snapshot replaced the
// metadata wholesale.
func (n *Node) onMetaSnapshot() {
	if n.detector != nil {
		n.detector.followMembers(n.clusterNodes())
	}
	n.reconcileAll()
}

// nodeNumbers lists node IDs as the numbers package event takes: it
// cannot name NodeID, since this package imports it.
func nodeNumbers(ids []NodeID) []uint32 {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}
