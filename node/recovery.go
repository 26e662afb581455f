package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// The node's side of an owner recovery is a thin driver: the decisions
// live in package recovery's Core, which takes inputs and returns actions
// as data. The driver feeds the core what happened, with the facts it
// needs read fresh from the replica and the metadata, and carries out
// the actions in the order the core returned them.

// startRecovery begins recovering in the plan's epoch, sealing this
// replica first.
func (o *ownerState) startRecovery(q *QueueMeta) { o.startRecoveryAttempt(q, 1) }

// startRecoveryAttempt begins attempt number attempt of the recovery.
func (o *ownerState) startRecoveryAttempt(q *QueueMeta, attempt int) {
	r := o.r
	// An owner that leads its own replacement served its old epoch on the
	// prior set (see servedMembers); the recovery installs on the new one.
	if !slices.Equal(r.members, q.Replicas) {
		r.setMembers(q.Replicas)
	}
	sealSet := q.Replicas
	if len(q.Prior) > 0 {
		sealSet = q.Prior
	}
	c := recovery.New(recovery.Config{
		Self: uint32(r.n.cfg.ID), Queue: r.name, Incarnation: r.inc, Epoch: q.Epoch, Attempt: attempt,
		SealSet: nodeNumbers(sealSet), HistoryID: r.identity.HistoryID, DeliveryLease: deliveryLease,
		SilenceLimit: r.n.ownerSilenceLimit(),
		Now:          r.n.env.Now(), SyncBatches: r.log.SyncBatches(),
	})
	o.recovery = c
	// A candidate still waiting for a quorum to hold the marker of a plain
	// activation (a policy-all queue with a replica down waits for good)
	// gives that activation up: the recovery opens the epoch now, and
	// serves only once the metadata activates it. Left set, the old
	// marker's index would make the recovery's own marker, once a quorum
	// held it, look like the plain activation's, and the candidate would
	// serve before the metadata activated it.
	o.opening = 0
	if r.role == roleOwner {
		// The owner recovers into a newer epoch of its own. The recovery
		// rebuilds the state from the history it installs, whose messages
		// are not the ones this epoch's leases point at: a lease left on
		// a subscription would never be settled or expire, and would hold
		// a place in its window for good. So the leases are given back
		// now; the recovery's hold keeps their messages from going out
		// again before the leases could have run out.
		o.releaseLeases()
	}
	if r.role != roleCandidate {
		r.become(roleCandidate, fmt.Sprintf("recovering epoch %d", q.Epoch))
	}
	o.perform(c, c.Start())
}

// witness describes what this replica holds.
func (r *replica) witness() recovery.Witness {
	last := r.log.LastIndex()
	return recovery.Witness{
		Node: uint32(r.n.cfg.ID), First: r.log.FirstIndex(), Last: last, LastEpoch: r.epochOf(last),
		Digest: r.log.Digest(), HistoryID: r.identity.HistoryID, Process: r.n.process,
		Suspect: r.suspect, Commit: r.commitKnown, LeaseGrantAgo: r.leaseGrantAgo(),
	}
}

// leaseGrantAgo is how long ago, on this node's lease clock, this replica
// last did something that could keep an owner's delivery lease alive:
// zero while it serves as the owner itself.
func (r *replica) leaseGrantAgo() uint64 {
	if r.serving() {
		return 0
	}
	return r.n.leaseClock() - min(r.follow.leaseGrantedAt, r.n.leaseClock())
}

// recoveryFacts reads what the recovery core may need to know now.
func (o *ownerState) recoveryFacts() recovery.Facts {
	r := o.r
	var lost []uint32
	if q := r.n.meta.state.queues[r.name]; q != nil {
		lost = nodeNumbers(q.Lost)
	}
	followers := make([]recovery.Follower, len(o.followers))
	for i, f := range o.followers {
		followers[i] = recovery.Follower{Node: uint32(f.id), Held: min(f.match, f.durable)}
	}
	return recovery.Facts{
		Now: r.n.env.Now(), LeaseClock: r.n.leaseClock(), Self: r.witness(), Policy: o.policyOf(), Lost: lost,
		Members: nodeNumbers(r.members), Durable: r.log.DurableIndex(), Followers: followers,
		SyncBatches: r.log.SyncBatches(),
	}
}

// stepRecovery feeds the running recovery an input and carries out what
// it answers.
func (o *ownerState) stepRecovery(in recovery.Input) {
	if c := o.recovery; c != nil {
		o.perform(c, c.Step(in))
	}
}

// perform carries out the actions core c returned, in order.
func (o *ownerState) perform(c *recovery.Core, acts []recovery.Action) {
	r := o.r
	for _, a := range acts {
		switch a := a.(type) {
		case recovery.Emit:
			r.n.emit(a.Event)
		case recovery.Send:
			r.n.env.Send(NodeID(a.To), a.Msg)
		case recovery.SealSelf:
			o.sealSelf(c, a.Epoch)
		case recovery.Truncate:
			if err := r.log.TruncateAfter(a.After); err != nil {
				// A failed log halts the process; damage met while
				// rereading the segment to cut fences the replica. Either
				// way the attempt ends here: left waiting for a Truncated
				// that never comes, it would give up on the source after
				// a while and start over into the same damage, for good.
				r.readFailed(err)
				return
			}
			r.noteTruncated(a.After)
			o.perform(c, c.Step(recovery.Truncated{Facts: o.recoveryFacts()}))
		case recovery.AppendPage:
			err := r.acceptEntries(a.Prev, a.Epoch, a.Entries)
			if errors.Is(err, storage.ErrCorrupt) {
				// The page is fine; this log is damaged (a truncation
				// met it). Restarting would meet it again: fence.
				r.readFailed(err)
				return
			}
			o.perform(c, c.Step(recovery.PageAppended{Facts: o.recoveryFacts(), Err: err}))
		case recovery.TakeCheckpoint:
			o.takeCheckpointForRecovery(c, a)
		case recovery.Install:
			o.install(c)
		case recovery.ProposeActivation:
			o.proposeActivation(c, a.Members)
		case recovery.Activate:
			o.activateRecovered(a)
		case recovery.Admit:
			if !r.serving() {
				// Activating fenced it: the first read of its own log or
				// journal after becoming owner met damage. It serves
				// nothing, and says it does not.
				return
			}
			o.admitClients()
		case recovery.Restart:
			o.restartRecovery(c, a.Attempt)
		case recovery.Abandon:
			o.recovery = nil
			o.abortRebuild()
		case recovery.Stale:
			o.goStale(NodeID(a.Owner), a.Why)
		default:
			panic(fmt.Sprintf("node: queue %s: unknown recovery action %T", r.name, a))
		}
	}
}

// sealSelf seals this replica in the attempt's epoch: this node writes
// in it, and the epoch is made durable before its own witness counts.
func (o *ownerState) sealSelf(c *recovery.Core, epoch uint64) {
	r := o.r
	r.follow.epochOwner = r.n.cfg.ID
	r.epoch = max(r.epoch, epoch)
	r.n.env.Boundary("recovery.before.seal-persisted")
	r.persistEpoch(r.epoch, func() {
		r.n.env.Boundary("recovery.after.seal-persisted")
		if o.recovery == c {
			o.perform(c, c.Step(recovery.Sealed{Facts: o.recoveryFacts()}))
		}
	})
}

// install makes this replica's history the recovered one: it rebuilds the
// served state from it (in steps, see rebuildState), then appends the
// epoch marker and replicates.
func (o *ownerState) install(c *recovery.Core) {
	r := o.r
	o.rebuildState(func(state *queueState, err error) {
		if o.recovery != c {
			return // the attempt was restarted or stopped meanwhile
		}
		if err != nil {
			r.readFailed(err)
			return
		}
		o.state, o.built = state, true
		for _, f := range o.followers {
			f.next, f.match, f.durable = r.log.LastIndex()+1, 0, 0
			f.probing, f.probeOutstanding = true, false
		}
		r.n.env.Boundary("recovery.before.install")
		marker := o.append(record{typ: recordEpochMark})
		r.n.env.Boundary("recovery.after.install")
		o.perform(c, c.Step(recovery.Installed{Facts: o.recoveryFacts(), Marker: marker}))
	})
}

// proposeActivation asks the metadata to activate this owner with
// members as the exact quorum that holds the marker.
func (o *ownerState) proposeActivation(c *recovery.Core, members []uint32) {
	r := o.r
	ids := make([]NodeID, len(members))
	for i, m := range members {
		ids[i] = NodeID(m)
	}
	r.n.env.Boundary("recovery.before.activate")
	r.n.meta.propose(command{kind: cmdActivateRecovered, name: r.name, inc: r.inc, epoch: c.Epoch(), node: r.n.cfg.ID,
		process: r.n.process, members: ids}, lifecycleTimeoutTicks, func(res result) {
		o.perform(c, c.Step(recovery.ActivationResult{OK: res.ok, Detail: res.detail}))
		if !res.ok {
			// An earlier attempt's activation may have committed after
			// all, which refuses this one: reconciling finds it and ends
			// the attempt, now that its own marker holds on a quorum.
			r.n.reconcile(r.name)
		}
	})
}

// finishRecovery admits clients once the metadata has activated this
// owner in the recovery's epoch and a quorum of its replicas has accepted
// its appends within the silence limit.
//
// The second condition matters when the activation reaches this node
// late: a node whose disk stalled, or that was cut off, after its install
// and before it applied the activation. Its peers may meanwhile have found
// it silent, sealed a quorum at a newer epoch and activated another
// owner, which it cannot know of yet. Serving on the activation alone, it
// could deliver what the newer owner delivers. Waiting instead, it keeps
// sending appends: a quorum that accepts them holds no newer epoch, and
// one that refuses them makes it stale. Only appends sent since it began
// waiting count: an acceptance of an earlier one may have been given
// before a newer seal (activationGranted). This is the same rule by which
// a serving owner steps back (quorum.go), applied before it starts.
//
// Activated, the owner admits publishes at once, and its other clients
// once an older owner's quorum has surely gone stale (beginOutwait).
func (o *ownerState) finishRecovery(q *QueueMeta) {
	if !o.activationGranted() {
		o.waitForActivation()
		return
	}
	o.activationWaits = false
	c := o.recovery
	o.perform(c, c.Step(recovery.Activated{Facts: o.recoveryFacts(), Policy: q.Policy}))
}

// activateRecovered makes the candidate the owner: everything up to the
// marker is the confirmed history, and this log holds it. An early
// activation (only the planted bug admit-before-install-quorum makes
// one) keeps the attempt, which has yet to propose the activation.
func (o *ownerState) activateRecovered(a recovery.Activate) {
	r := o.r
	if !a.Early {
		o.recovery = nil
	}
	o.policy = a.Policy
	o.commit = max(o.commit, a.Marker)
	// An earlier epoch's unsaid start is moot: this activation says it
	// serves on its own, once its outwait is over (admitClients). Left
	// set, the first answer of the quorum would say it for this epoch
	// while it still outwaits, and again when the outwait ends (seed
	// 622915 of the long sweep).
	o.activeUnsaid = false
	o.startHold(a.HoldUntil, a.Marker)
	o.takeCarriedCounts()
	o.beginOutwait(a.ServeFrom)
	r.becomeOwner("the recovery activated")
	r.noteCommit(o.commit)
	r.trust("installed a history selected from a seal")
}

// restartRecovery starts the next attempt, in the same epoch, if the
// metadata still holds the plan: this process still owns it.
func (o *ownerState) restartRecovery(c *recovery.Core, attempt int) {
	q := o.r.n.meta.state.queues[o.r.name]
	o.recovery = nil
	o.abortRebuild()
	if q != nil && q.State == QueueRecovering && q.Epoch == c.Epoch() {
		o.startRecoveryAttempt(q, attempt)
	}
}

// policyOf is the queue's policy as the metadata has it.
func (o *ownerState) policyOf() wire.Policy {
	if q := o.r.n.meta.state.queues[o.r.name]; q != nil {
		return q.Policy
	}
	return o.policy
}
