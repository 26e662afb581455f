package sim

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A sweep that passes proves little if its seeds never reached the
// situations the protocol exists for. Coverage records, per run, which of
// those situations happened ("sometimes" probes) and which transition
// boundaries were hit close after which kind of scheduled fault, so a
// sweep can say what it exercised and what it never reached.

// NearWindow is how long after a fault is scheduled a boundary hit still
// counts as near that fault. Half a second covers the failure detector's
// suspicion, the metadata's reaction and the first recovery stages, while
// keeping hits from unrelated background work out of the fault's column.
const NearWindow = 500 * time.Millisecond

// NoFault labels boundary hits that were near no scheduled fault.
const NoFault = "none"

// Probe is one "sometimes" condition: something a good sweep should reach
// in some seeds, never an error by itself.
type Probe struct {
	Name    string
	Meaning string
}

// Probe names.
const (
	ProbeRecoveryTransferred   = "recovery-transferred"
	ProbeRecoveryRetried       = "recovery-retried"
	ProbeRecoveryAbandoned     = "recovery-abandoned"
	ProbeCrashMidRecovery      = "crash-mid-recovery"
	ProbeStaleOwnerFenced      = "stale-owner-fenced"
	ProbePublishFenced         = "publish-answered-fenced"
	ProbeUnknownDelivered      = "unknown-publish-delivered"
	ProbeReplicaTruncated      = "replica-truncated"
	ProbeRedeliveredNoNack     = "redelivered-without-nack"
	ProbeSuspectedRunning      = "suspected-while-running"
	ProbeVouchedRunning        = "vouched-while-running"
	ProbeFlapDamped            = "flap-damped"
	ProbeCrashAtBoundary       = "crash-at-boundary"
	ProbeCrashAtStep           = "crash-at-step"
	ProbeHaltedItself          = "node-halted-itself"
	ProbeTornWrite             = "torn-write-at-crash"
	ProbeSyncFailed            = "sync-failed"
	ProbeNameOpFailed          = "name-op-failed"
	ProbeReplicaDamaged        = "replica-fenced-damage"
	ProbeReplicaReplaced       = "replica-replaced"
	ProbeCompacted             = "log-compacted"
	ProbeCheckpointSent        = "checkpoint-installed"
	ProbeCheckpointRecovery    = "checkpoint-in-recovery"
	ProbeDiskFull              = "disk-full"
	ProbeDiskRoomAgain         = "disk-room-again"
	ProbeFollowerFull          = "follower-disk-full"
	ProbeDeadLettered          = "dead-lettered"
	ProbeMoveAskedAgain        = "dead-letter-asked-again"
	ProbeMoveResumed           = "dead-letter-resumed"
	ProbeMoveRemembered        = "dead-letter-remembered"
	ProbeCountsCarried         = "delivery-counts-carried"
	ProbeHandoffDrained        = "handoff-drained"
	ProbeHandoffUndrained      = "handoff-past-drain-bound"
	ProbeHandoffAborted        = "handoff-aborted"
	ProbeMemberAdded           = "member-added"
	ProbeMemberPromoted        = "member-promoted"
	ProbeMemberRemoved         = "member-removed"
	ProbeMembershipRefused     = "membership-refused"
	ProbeRebalanceDone         = "rebalance-done"
	ProbePreparingReplaced     = "preparing-replaced"
	ProbeRotFound              = "rot-found-running"
	ProbeSyncStalled           = "sync-stalled"
	ProbeOwnerWokeReplaced     = "owner-woke-replaced"
	ProbeOwnerOutwaited        = "owner-outwaited"
	ProbeOutwaitPublished      = "published-while-outwaiting"
	ProbeStateDamaged          = "state-file-damaged"
	ProbeSegmentCut            = "sealed-segment-cut"
	ProbeLostDiskRejoined      = "lost-disk-rejoined"
	ProbeLostDiskRefilled      = "lost-disk-refilled"
	ProbeOwnerRested           = "owner-rested"
	ProbeRestedOwnerWoke       = "rested-owner-woke"
	ProbeCutReused             = "checkpoint-cut-reused"
	ProbeCutRaised             = "checkpoint-cut-raised"
	ProbeCommitLearned         = "commit-learned"
	ProbeFiveReplicaRecovery   = "five-replica-recovery"
	ProbeRestingOwnerIsolated  = "resting-owner-isolated"
	ProbeRestingOwnerCutOff    = "resting-owner-cut-off"
	ProbeRestartReadFailed     = "restart-read-failed"
	ProbeStackLossArmed        = "stack-loss-armed"
	ProbeStackLossOwnerBroken  = "stack-loss-owner-broken"
	ProbePriorSwappedBack      = "prior-swapped-back"
	ProbeQuietSubscriberPaused = "quiet-subscriber-paused"
	ProbeQuietSubscriberHeard  = "quiet-subscriber-heard"
	ProbeAckAtOwner            = "ack-at-owner"
	ProbeAckAtOwnerOvertook    = "ack-at-owner-overtook"
	ProbeExtendAtOwner         = "extend-at-owner"
	ProbeMembershipAskedAgain  = "membership-asked-again"
	ProbeBadRequestRefused     = "bad-request-refused"
	ProbeQueueDeleted          = "queue-deleted"
)

// Probes lists every probe in report order, with what reaching it means.
var Probes = []Probe{
	{ProbeRecoveryTransferred, "a recovery copied a missing suffix to the new owner (recovery.done with bytes > 0)"},
	{ProbeRecoveryRetried, "a recovery finished on its second or later attempt (recovery.done with attempt > 1)"},
	{ProbeRecoveryAbandoned, "a candidate gave a recovery up (recovery.abandoned)"},
	{ProbeCrashMidRecovery, "a node crashed between its recovery.start and that recovery's end"},
	{ProbeStaleOwnerFenced, "an owner learned from a replica that a newer epoch exists and stopped (queue.stale)"},
	{ProbePublishFenced, "a publish ended with the answer fenced from a superseded owner"},
	{ProbeUnknownDelivered, "a publish whose outcome the client could not know was delivered anyway"},
	{ProbeReplicaTruncated, "a replica dropped an unconfirmed suffix a newer epoch does not hold (queue.truncate)"},
	{ProbeRedeliveredNoNack, "a message was sent again though no consumer nacked it: a lease expired, or a new owner resent it"},
	{ProbeSuspectedRunning, "the failure detector suspected a node whose process was running (paused or cut off)"},
	{ProbeVouchedRunning, "a metadata leader heard a running peer it had gone without through another node's indirect probe (detect.vouched)"},
	{ProbeFlapDamped, "a metadata leader heard again a peer it had confirmed down while its process ran, and gave it a longer silence (detect.flapped)"},
	{ProbeCrashAtBoundary, "a crash-at fault fired: a process died at the named boundary"},
	{ProbeCrashAtStep, "a crash-at-step fault fired: the first process to reach an owner's step (a dead-letter record appended, a handoff about to be proposed) died there"},
	{ProbeHaltedItself, "a node halted itself on a storage error it may not carry on from, and was restarted"},
	{ProbeTornWrite, "a crash left a file holding part of its unsynced data, a torn tail the next open must set aside"},
	{ProbeSyncFailed, "a sync failed with EIO, which the node must treat as fatal for that storage"},
	{ProbeNameOpFailed, "an operation on a file or directory name (create, open, rename, remove, list, stat) failed with EIO"},
	{ProbeReplicaDamaged, "a replica found damage inside its synced range and fenced itself (queue.fenced)"},
	{ProbeReplicaReplaced, "a recovery that replaced a long-dead replica with a node outside the set activated (meta.replica-replaced)"},
	{ProbeCompacted, "a replica dropped log segments a certified checkpoint covers (queue.compacted)"},
	{ProbeCheckpointSent, "a replica behind its sender's retained log took a checkpoint in place of the history (checkpoint.installed)"},
	{ProbeCheckpointRecovery, "a recovery candidate took its source's checkpoint in place of pages the source no longer held"},
	{ProbeDiskFull, "a node passed its data quota and refused new messages with disk-full (node.disk-full)"},
	{ProbeDiskRoomAgain, "a node that was full took messages again once compaction freed space (node.disk-ok)"},
	{ProbeFollowerFull, "an owner heard that a follower's node is short of space and stopped taking messages (queue.follower-full)"},
	{ProbeDeadLettered, "a message used up its delivery limit and its owner took it out of delivery for its dead-letter queue (queue.dead-letter)"},
	{ProbeMoveAskedAgain, "a source owner asked the dead-letter queue to store a message it had asked for before: a lost answer, or a refusal"},
	{ProbeMoveResumed, "a move to a dead-letter queue was asked for by an owner other than the one that began it: a new owner finished it"},
	{ProbeMoveRemembered, "a dead-letter queue answered a repeated move from its ledger after its window forgot the ID (queue.move-remembered)"},
	{ProbeCountsCarried, "a recovered owner raised delivery counts to those its replicas had heard from the owner before it (queue.counts-carried)"},
	{ProbeHandoffDrained, "an owner handing its queue over proposed the next owner with no delivery left leased (queue.handoff-proposed leases=0)"},
	{ProbeHandoffUndrained, "an owner handing its queue over proposed the next owner with deliveries still leased past its drain bound"},
	{ProbeHandoffAborted, "a handoff ended without the metadata naming its target: a refused plan, or the queue changed hands otherwise"},
	{ProbeMemberAdded, "a node applied the admission of a new member as a learner (meta.membership kind=add)"},
	{ProbeMemberPromoted, "a node applied a learner's promotion to voter (meta.membership kind=promote)"},
	{ProbeMemberRemoved, "a node applied the removal of a member that had left (meta.membership kind=remove)"},
	{ProbeMembershipRefused, "a node applied a membership change the state machine turned down (meta.membership-refused)"},
	{ProbeRebalanceDone, "a node applied the end of a rebalance the leader found balanced (meta.rebalance outcome=done)"},
	{ProbePreparingReplaced, "a queue still being created had a replica that stayed down swapped for a live node (meta.replica-replaced at epoch 0)"},
	{ProbeRotFound, "a running node read a record that decayed since it was synced and fenced its replica, with no restart between (queue.fenced after a rot fault)"},
	{ProbeStateDamaged, "a replica whose state file (epoch or checkpoint) a crash left damaged fenced itself (queue.fenced after a damage-state fault)"},
	{ProbeSegmentCut, "a replica whose sealed log segment a crash left cut short fenced itself (queue.fenced after a truncate fault)"},
	{ProbeSyncStalled, "a sync of a queue owner waited out a stalled device"},
	{ProbeOwnerWokeReplaced, "a queue owner paused by a pause-owner fault woke after another node had taken its queue"},
	{ProbeOwnerOutwaited, "a recovered owner the metadata activated waited for the old owner's quorum to go stale before it delivered (queue.activation-outwaits)"},
	{ProbeOutwaitPublished, "a recovered owner appended publishes while it outwaited the old owner's quorum (queue.outwaited admitted>0)"},
	{ProbeLostDiskRejoined, "a node that lost its disk caught up with the metadata over an empty data directory (meta.caught-up after a lose-disk fault)"},
	{ProbeLostDiskRefilled, "a replica a lost disk emptied caught up and an owner verified it (queue.trusted after a lose-disk fault)"},
	{ProbeOwnerRested, "an owner of an idle queue stopped keeping its quorum's grant fresh (queue.resting)"},
	{ProbeRestedOwnerWoke, "a resting owner whose grant had lapsed woke for a request or new work (queue.waking after more than 100 ms)"},
	{ProbeCutReused, "a new owner asked for a checkpoint cut an owner of an earlier epoch had asked for (checkpoint.asked why=reused)"},
	{ProbeCutRaised, "a replica answered an ask with a later checkpoint and the owner moved its attempt up to it (checkpoint.asked why=raised)"},
	{ProbeCommitLearned, "a metadata member without a leader raised its commit index to what a member it asked for a vote counted committed (meta.commit-learned)"},
	{ProbeFiveReplicaRecovery, "a recovery of a queue with five replicas completed, its seal and install quorums three of five (recovery.done in a scenario with replicas 5)"},
	{ProbeRestingOwnerIsolated, "an isolate-resting-owner fault cut an owner's node off from its peers and clients as it rested"},
	{ProbeRestingOwnerCutOff, "a resting owner learned from its unanswered heartbeats that it was cut off, and sent its subscribers away (queue.rest-cut-off)"},
	{ProbeRestartReadFailed, "a restarted node's first read of a file a restart-eio fault trapped failed with EIO"},
	{ProbeStackLossArmed, "a stack-loss fault crashed both followers of an all-policy queue its owner served on three replicas"},
	{ProbeStackLossOwnerBroken, "a stack-loss fault saw both followers swapped out of a pending replacement and broke the owner's replica, the one prior member left in the set"},
	{ProbePriorSwappedBack, "a metadata leader swapped a prior member back into a pending replacement no member of both sets could lead, to lead its recovery (meta.plan-recovery naming the member meta.plan-replace swapped in)"},
	{ProbeQuietSubscriberPaused, "an owner paused a subscription whose leases ran out unanswered twice in a row (queue.subscriber-quiet with quiet > 1)"},
	{ProbeQuietSubscriberHeard, "a held-back subscription's connection spoke again and took its whole window back (queue.subscriber-heard)"},
	{ProbeAckAtOwner, "an ack sent by message ID to the queue's owner, not to the node that delivered the message, was confirmed"},
	{ProbeAckAtOwnerOvertook, "an ack by ID at the owner was confirmed for a message already sent again since the delivery it acked (another lease, or another owner)"},
	{ProbeExtendAtOwner, "a lease extension sent to the queue's owner by the owner's lease number was confirmed"},
	{ProbeMembershipAskedAgain, "an add-node or remove-node asked for a second time, after the first was applied, was answered OK"},
	{ProbeBadRequestRefused, "a request no node may take (a name, policy, window, delay, bound or node out of range) was answered bad-request"},
	{ProbeQueueDeleted, "a queue was deleted: a delete answered OK"},
}

// FaultKinds lists every kind of fault the swarm may schedule. A sweep
// names the kinds its seeds never scheduled.
func FaultKinds() []FaultKind {
	out := make([]FaultKind, 0, faultKinds)
	for k := FaultKind(0); k < faultKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Coverage is what one run reached.
type Coverage struct {
	// Probes counts, per probe name, how often the run reached it; a
	// probe never reached is absent.
	Probes map[string]int `json:"probes,omitempty"`
	// Hits counts every hit of each boundary.
	Hits map[string]int `json:"hits,omitempty"`
	// Near counts, per boundary and fault kind, the hits that fell within
	// NearWindow after a fault of that kind was scheduled; NoFault counts
	// the hits near none. A hit near two kinds counts under both.
	Near map[string]map[string]int `json:"near,omitempty"`
}

// coverage records a run's Coverage as the run goes. For the matrix it
// snapshots the boundary hit counts at every edge of every fault's
// window, which costs one comparison per event and no change to the run.
type coverage struct {
	faults []Fault
	// edges are the distinct window edges, ascending; snaps[i] holds the
	// hit counts of every event before edges[i].
	edges  []time.Duration
	snaps  []map[string]int
	probes map[string]int
	// spans are recoveries in the order they started; open finds the
	// running one of a node and queue.
	spans []recoverySpan
	open  map[recoveryKey]int
	// askedBy names, per moved message and source queue, the node that
	// last asked for its move to the dead-letter queue.
	askedBy map[movedMessage]node.NodeID
	// rotted holds, per node and queue whose replica a rot fault broke,
	// the process incarnation that was running then.
	rotted map[recoveryKey]uint64
	// broken holds, per node and queue whose replica's files a
	// damage-state or truncate fault broke, the fault's kind, until the
	// replica fences itself.
	broken map[recoveryKey]FaultKind
	// swappedIn is the member the last meta.plan-replace swapped in, by
	// the node that planned it and the queue: the recovery planned with
	// it names the member that leads, which is the one swapped in only
	// when a prior member is swapped back.
	swappedIn map[recoveryKey]uint32
	// lostDisk holds, per node whose disk a lose-disk fault took, the
	// queues whose replicas went with it, until each is trusted again;
	// rejoining the nodes still catching up with the metadata.
	lostDisk  map[recoveryKey]bool
	rejoining map[node.NodeID]bool
}

// noteLostDisk records that node id's disk was lost with its replicas of
// queues.
func (c *coverage) noteLostDisk(id node.NodeID, queues []string) {
	if c.lostDisk == nil {
		c.lostDisk, c.rejoining = make(map[recoveryKey]bool), make(map[node.NodeID]bool)
	}
	c.rejoining[id] = true
	for _, q := range queues {
		c.lostDisk[recoveryKey{id, q}] = true
	}
}

// noteBroken records that a fault of kind broke a file of node id's
// replica of queue.
func (c *coverage) noteBroken(id node.NodeID, queue string, kind FaultKind) {
	if c.broken == nil {
		c.broken = make(map[recoveryKey]FaultKind)
	}
	c.broken[recoveryKey{id, queue}] = kind
}

// noteRot records that a bit decayed in node id's replica of queue while
// its process incarnation inc ran.
func (c *coverage) noteRot(id node.NodeID, queue string, inc uint64) {
	if c.rotted == nil {
		c.rotted = make(map[recoveryKey]uint64)
	}
	c.rotted[recoveryKey{id, queue}] = inc
}

// movedMessage names a message on its way from a source queue to its
// dead-letter queue.
type movedMessage struct {
	queue, id string
}

type recoveryKey struct {
	node  node.NodeID
	queue string
}

// recoverySpan is one recovery attempt; end is zero while it runs.
type recoverySpan struct {
	node       node.NodeID
	start, end time.Duration
}

func newCoverage(sc Scenario) *coverage {
	c := &coverage{probes: make(map[string]int), open: make(map[recoveryKey]int)}
	for _, f := range sc.Faults {
		// Faults due once the calm phase has begun are never applied.
		if f.At < sc.Safety {
			c.faults = append(c.faults, f)
			c.edges = append(c.edges, f.At, f.At+NearWindow)
		}
	}
	slices.Sort(c.edges)
	c.edges = slices.Compact(c.edges)
	return c
}

// advance is called before each event at virtual time at: every window
// edge at or before it is snapshotted with the hits of earlier events.
func (c *coverage) advance(at time.Duration, hits map[string]int) {
	for len(c.snaps) < len(c.edges) && c.edges[len(c.snaps)] <= at {
		c.snaps = append(c.snaps, maps.Clone(hits))
	}
}

// observe sees every node event as it is emitted.
func (c *coverage) observe(w *World, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.RecoveryStart:
		c.endRecovery(w.now, id, e.Queue())
		c.open[recoveryKey{id, e.Queue()}] = len(c.spans)
		c.spans = append(c.spans, recoverySpan{node: id, start: w.now})
	case event.RecoveryDone:
		if e.Bytes() > 0 {
			c.probes[ProbeRecoveryTransferred]++
		}
		if e.Attempt() > 1 {
			c.probes[ProbeRecoveryRetried]++
		}
		if w.sc.ReplicaCount() == 5 {
			c.probes[ProbeFiveReplicaRecovery]++
		}
		c.endRecovery(w.now, id, e.Queue())
	case event.RecoveryAbandoned:
		c.probes[ProbeRecoveryAbandoned]++
		c.endRecovery(w.now, id, e.Queue())
	case event.MetaPlanReplace:
		if c.swappedIn == nil {
			c.swappedIn = make(map[recoveryKey]uint32)
		}
		c.swappedIn[recoveryKey{id, e.Queue()}] = e.In()
	case event.MetaPlanRecovery:
		k := recoveryKey{id, e.Queue()}
		if in, ok := c.swappedIn[k]; ok && in == e.ToNode() {
			c.probes[ProbePriorSwappedBack]++
		}
		delete(c.swappedIn, k)
	case event.QueueStale:
		c.probes[ProbeStaleOwnerFenced]++
	case event.QueueActivationOutwaits:
		c.probes[ProbeOwnerOutwaited]++
	case event.QueueResting:
		c.probes[ProbeOwnerRested]++
	case event.QueueRestCutOff:
		c.probes[ProbeRestingOwnerCutOff]++
	case event.CheckpointAsked:
		switch e.Why() {
		case "reused":
			c.probes[ProbeCutReused]++
		case "raised":
			c.probes[ProbeCutRaised]++
		}
	case event.QueueWaking:
		if e.Elapsed() > 100*time.Millisecond {
			c.probes[ProbeRestedOwnerWoke]++
		}
	case event.QueueOutwaited:
		if e.Admitted() > 0 {
			c.probes[ProbeOutwaitPublished]++
		}
	case event.QueueTruncate:
		c.probes[ProbeReplicaTruncated]++
	case event.QueueFenced:
		c.probes[ProbeReplicaDamaged]++
		if inc, ok := c.rotted[recoveryKey{id, e.Queue()}]; ok && w.procs[int(id)-1].inc == inc {
			c.probes[ProbeRotFound]++
		}
		if kind, ok := c.broken[recoveryKey{id, e.Queue()}]; ok {
			delete(c.broken, recoveryKey{id, e.Queue()})
			if kind == FaultDamageState {
				c.probes[ProbeStateDamaged]++
			} else {
				c.probes[ProbeSegmentCut]++
			}
		}
	case event.MetaReplicaReplaced:
		if e.Epoch() == 0 {
			c.probes[ProbePreparingReplaced]++
		} else {
			c.probes[ProbeReplicaReplaced]++
		}
	case event.QueueCompacted:
		c.probes[ProbeCompacted]++
	case event.MetaCommitLearned:
		c.probes[ProbeCommitLearned]++
	case event.MetaCaughtUp:
		if c.rejoining[id] {
			delete(c.rejoining, id)
			c.probes[ProbeLostDiskRejoined]++
		}
	case event.QueueTrusted:
		if k := (recoveryKey{id, e.Queue()}); c.lostDisk[k] {
			delete(c.lostDisk, k)
			c.probes[ProbeLostDiskRefilled]++
		}
	case event.NodeDiskFull:
		c.probes[ProbeDiskFull]++
	case event.NodeDiskOK:
		c.probes[ProbeDiskRoomAgain]++
	case event.QueueFollowerFull:
		c.probes[ProbeFollowerFull]++
	case event.QueueDeadLetter:
		c.probes[ProbeDeadLettered]++
	case event.QueueCountsCarried:
		c.probes[ProbeCountsCarried]++
	case event.QueueSubscriberQuiet:
		if e.Quiet() > 1 {
			c.probes[ProbeQuietSubscriberPaused]++
		}
	case event.QueueSubscriberHeard:
		c.probes[ProbeQuietSubscriberHeard]++
	case event.QueueMoveRemembered:
		c.probes[ProbeMoveRemembered]++
	case event.QueueHandoffProposed:
		if e.Leases() == 0 {
			c.probes[ProbeHandoffDrained]++
		} else {
			c.probes[ProbeHandoffUndrained]++
		}
	case event.QueueHandoffAborted:
		c.probes[ProbeHandoffAborted]++
	case event.MetaMembership:
		c.observeMembership(e.Kind())
	case event.MetaMembershipRefused:
		c.probes[ProbeMembershipRefused]++
	case event.MetaRebalance:
		if e.Outcome() == "done" {
			c.probes[ProbeRebalanceDone]++
		}
	case event.QueueDeadLetterSent:
		k := movedMessage{e.Queue(), e.ID()}
		if by, asked := c.askedBy[k]; asked {
			c.probes[ProbeMoveAskedAgain]++
			if by != id {
				c.probes[ProbeMoveResumed]++
			}
		}
		if c.askedBy == nil {
			c.askedBy = make(map[movedMessage]node.NodeID)
		}
		c.askedBy[k] = id
	case event.CheckpointInstalled:
		c.probes[ProbeCheckpointSent]++
		if _, recovering := c.open[recoveryKey{id, e.Queue()}]; recovering {
			c.probes[ProbeCheckpointRecovery]++
		}
	case event.DetectSuspect:
		if t := int(e.Node()); t >= 1 && t <= len(w.procs) && w.procs[t-1].state != stateDown {
			c.probes[ProbeSuspectedRunning]++
		}
	case event.DetectVouched:
		if t := int(e.Node()); t >= 1 && t <= len(w.procs) && w.procs[t-1].state != stateDown {
			c.probes[ProbeVouchedRunning]++
		}
	case event.DetectFlapped:
		c.probes[ProbeFlapDamped]++
	}
}

// endRecovery closes the running recovery of a node and queue, if any.
func (c *coverage) endRecovery(now time.Duration, id node.NodeID, queue string) {
	k := recoveryKey{id, queue}
	if i, ok := c.open[k]; ok {
		c.spans[i].end = now
		delete(c.open, k)
	}
}

// finish completes the run's Coverage from its history and disk totals.
func (c *coverage) finish(hits map[string]int, h *History, disk DiskStats) Coverage {
	c.advance(1<<62, hits) // windows still open at the end close on the final counts
	c.historyProbes(h)
	c.probes[ProbeTornWrite] += disk.TornFiles
	c.probes[ProbeSyncFailed] += disk.SyncErrors
	c.probes[ProbeNameOpFailed] += disk.NameErrors
	c.probes[ProbeRestartReadFailed] += disk.TrappedReads
	c.probes[ProbeSyncStalled] += disk.StalledSyncs
	cov := Coverage{Probes: make(map[string]int), Hits: maps.Clone(hits), Near: make(map[string]map[string]int)}
	for _, p := range Probes {
		if n := c.probes[p.Name]; n > 0 {
			cov.Probes[p.Name] = n
		}
	}
	names := slices.Sorted(maps.Keys(hits))
	anyFault := c.hitsWithin(names, func(Fault) bool { return true })
	for _, name := range names {
		if none := hits[name] - anyFault[name]; none > 0 {
			cov.note(name, NoFault, none)
		}
	}
	for k := FaultKind(0); k < faultKinds; k++ {
		near := c.hitsWithin(names, func(f Fault) bool { return f.Kind == k })
		for _, name := range names {
			if near[name] > 0 {
				cov.note(name, k.String(), near[name])
			}
		}
	}
	return cov
}

func (cov *Coverage) note(boundary, kind string, n int) {
	if cov.Near[boundary] == nil {
		cov.Near[boundary] = make(map[string]int)
	}
	cov.Near[boundary][kind] = n
}

// hitsWithin counts, per boundary, the hits inside the union of the
// windows of the faults that match. The union matters: two crashes 100ms
// apart must not count the hits they share twice.
func (c *coverage) hitsWithin(names []string, match func(Fault) bool) map[string]int {
	var spans [][2]time.Duration
	for _, f := range c.faults {
		if match(f) {
			spans = append(spans, [2]time.Duration{f.At, f.At + NearWindow})
		}
	}
	slices.SortFunc(spans, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
	out := make(map[string]int)
	for i := 0; i < len(spans); {
		from, to := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= to; i++ {
			to = max(to, spans[i][1])
		}
		before, after := c.snapAt(from), c.snapAt(to)
		for _, name := range names {
			out[name] += after[name] - before[name]
		}
	}
	return out
}

// snapAt returns the hit counts snapshotted at a window edge.
func (c *coverage) snapAt(edge time.Duration) map[string]int {
	i, ok := slices.BinarySearch(c.edges, edge)
	if !ok {
		panic("sim: coverage asked for a time that is no window edge")
	}
	return c.snaps[i]
}

// historyProbes counts the probes that read the finished history.
func (c *coverage) historyProbes(h *History) {
	for _, cr := range h.Crashed {
		switch {
		case strings.HasPrefix(cr.Reason, "at step "):
			c.probes[ProbeCrashAtStep]++
		case strings.HasPrefix(cr.Reason, "at "):
			c.probes[ProbeCrashAtBoundary]++
		case strings.HasPrefix(cr.Reason, "halt: "):
			c.probes[ProbeHaltedItself]++
		}
		// A crash ends every recovery its node was running: the memory
		// that held it is gone.
		for i := range c.spans {
			s := &c.spans[i]
			if s.node == cr.Node && s.start <= cr.At && (s.end == 0 || cr.At < s.end) {
				c.probes[ProbeCrashMidRecovery]++
				s.end = cr.At
			}
		}
	}
	nacked := make(map[wire.MessageID]bool)
	for _, op := range h.Ops {
		if op.Kind == "nack" {
			nacked[op.ID] = true
		}
		if op.Kind == "publish" && op.Status == wire.StatusFenced {
			c.probes[ProbePublishFenced]++
		}
	}
	for _, s := range h.Sends {
		if s.Attempt > 1 && !nacked[s.ID] {
			c.probes[ProbeRedeliveredNoNack]++
		}
	}
	c.noteAcksAtOwner(h)
	delivered := make(map[wire.MessageID]bool)
	for _, d := range h.Deliveries {
		delivered[d.ID] = true
	}
	for _, op := range h.Ops {
		if op.Kind == "publish" && op.Outcome == OutcomeUnknown && delivered[op.ID] {
			c.probes[ProbeUnknownDelivered]++
		}
	}
}

// noteAcksAtOwner counts the confirmed acks sent by ID at the queue's
// owner, and those that overtook their delivery: the message went out
// again, under another lease, after the delivery the ack was for and
// before the ack was confirmed, so the ack settled a message another
// lease (perhaps another owner's) held or was about to.
func (c *coverage) noteAcksAtOwner(h *History) {
	var sends map[wire.MessageID][]*DeliveryRecord
	for _, op := range h.Ops {
		if op.Kind == "extend" && op.AtOwner && op.Outcome == OutcomeOK {
			c.probes[ProbeExtendAtOwner]++
		}
		if op.Kind != "ack" || !op.AtOwner || op.Outcome != OutcomeOK {
			continue
		}
		c.probes[ProbeAckAtOwner]++
		if sends == nil {
			sends = make(map[wire.MessageID][]*DeliveryRecord)
			for i := range h.Sends {
				s := &h.Sends[i]
				sends[s.ID] = append(sends[s.ID], s)
			}
		}
		var acked Stamp
		for _, s := range sends[op.ID] {
			if s.Queue == op.Queue && s.Lease == op.Lease && s.From == op.From {
				acked = s.Sent
			}
		}
		for _, s := range sends[op.ID] {
			if s.Queue == op.Queue && acked.Before(s.Sent) && s.Sent.Before(op.Replied) {
				c.probes[ProbeAckAtOwnerOvertook]++
				break
			}
		}
	}
}
