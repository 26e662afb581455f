package event

import "slices"

// The names of a queue replica's events. Each string is part of the
// simulator's trace: changing one changes every trace hash and stales the
// seed corpus.
const (
	// QueueOpen: a replica was opened from disk (NewQueueOpen).
	QueueOpen Name = "queue.open"
	// QueueActive: a replica became its queue's serving owner
	// (NewQueueActive).
	QueueActive Name = "queue.active"
	// QueueRole: a replica changed role (NewQueueRole).
	QueueRole Name = "queue.role"
	// QueueFenced: a replica found its storage damaged and stopped using
	// it (NewQueueFenced).
	QueueFenced Name = "queue.fenced"
	// QueueDeliver: the owner sent a delivery under a lease
	// (NewQueueDeliver).
	QueueDeliver Name = "queue.deliver"
	// QueueDeadLetter: an owner took a message that used up its delivery
	// limit out of delivery, to move it to the dead-letter queue
	// (NewQueueDeadLetter).
	QueueDeadLetter Name = "queue.dead-letter"
	// QueueDeadLetterSent: an owner asked the dead-letter queue's owner to
	// store a dead-lettered message whose record is confirmed
	// (NewQueueDeadLetterSent).
	QueueDeadLetterSent Name = "queue.dead-letter-sent"
	// QueueMoveRemembered: a dead-letter queue's owner answered a
	// repeated ask to store a moved message from its ledger of moves,
	// after its deduplication window had forgotten the message's ID
	// (NewQueueMoveRemembered).
	QueueMoveRemembered Name = "queue.move-remembered"
	// QueuePurgeWritten: an owner appended a purge record
	// (NewQueuePurgeWritten).
	QueuePurgeWritten Name = "queue.purge-written"
	// QueueHoldEnded: a recovered owner began delivering the history it
	// recovered (NewQueueHoldEnded).
	QueueHoldEnded Name = "queue.hold-ended"
	// QueueCountsCarried: a recovered owner raised the delivery counts of
	// messages it recovered to those its replicas had heard from the
	// owner before it (NewQueueCountsCarried).
	QueueCountsCarried Name = "queue.counts-carried"
	// QueueLeaseLapsed: an owner with messages to deliver stopped
	// delivering because no quorum renewed its delivery lease in time
	// (NewQueueLeaseLapsed).
	QueueLeaseLapsed Name = "queue.lease-lapsed"
	// QueueSubscriberQuiet: an owner held a subscription back because its
	// leases ran out with no word from its connection
	// (NewQueueSubscriberQuiet).
	QueueSubscriberQuiet Name = "queue.subscriber-quiet"
	// QueueSubscriberHeard: a held-back subscription's connection spoke,
	// and it takes deliveries again (NewQueueSubscriberHeard).
	QueueSubscriberHeard Name = "queue.subscriber-heard"
	// QueueQuorumLost: an owner heard from no quorum of its replicas for
	// as long as its peers wait before replacing it, and stopped serving
	// its clients (NewQueueQuorumLost).
	QueueQuorumLost Name = "queue.quorum-lost"
	// QueueQuorumRegained: an owner that had stopped serving for want of
	// a quorum heard from one again, in the same epoch, and serves again
	// (NewQueueQuorumRegained).
	QueueQuorumRegained Name = "queue.quorum-regained"
	// QueueResting: an owner whose queue has been idle, with every
	// replica caught up, stopped sending heartbeats; it wakes at the
	// next request or new work and serves once a quorum answers it again
	// (NewQueueResting).
	QueueResting Name = "queue.resting"
	// QueueWaking: a resting owner stopped resting after the elapsed time:
	// it had a request or new work and sent its followers appends again,
	// or no quorum answered its seldom heartbeats and it is cut off
	// (NewQueueWaking).
	QueueWaking Name = "queue.waking"
	// QueueRestCutOff: no quorum answered a resting owner's seldom
	// heartbeats for the silence given: it is cut off, stops resting (a
	// queue.waking comes first) and, as any owner cut off from its quorum,
	// sends its subscribers away to look for the queue elsewhere
	// (NewQueueRestCutOff).
	QueueRestCutOff Name = "queue.rest-cut-off"
	// QueueActivationWaits: an owner the metadata activated after a
	// recovery, or whose opening marker a quorum holds, last had its
	// appends accepted by a quorum longer ago than the silence limit, or
	// opens while the metadata holds its node down; it waits for a quorum
	// to accept one sent since it began waiting (and, opening, to be held
	// up) before it serves
	// (NewQueueActivationWaits).
	QueueActivationWaits Name = "queue.activation-waits"
	// QueueActivationOutwaits: a recovered owner the metadata activated
	// waits until an older owner's quorum, which may have accepted its
	// appends until just before the seal, has surely gone stale, before
	// it delivers or settles anything; it admits publishes meanwhile
	// (NewQueueActivationOutwaits).
	QueueActivationOutwaits Name = "queue.activation-outwaits"
	// QueueOutwaited: a recovered owner's wait for an older owner's
	// quorum is over, and it admits every client (NewQueueOutwaited).
	QueueOutwaited Name = "queue.outwaited"
	// QueueFollowerFull: an owner heard that a follower's node is short
	// of space, and takes no new messages until it has room again
	// (NewQueueFollowerFull).
	QueueFollowerFull Name = "queue.follower-full"
	// QueueFollowerRoom: a follower that was short of space has room
	// again (NewQueueFollowerRoom).
	QueueFollowerRoom Name = "queue.follower-room"
	// QueueSecondWriter: a follower heard from a second writer in its
	// epoch (NewQueueSecondWriter).
	QueueSecondWriter Name = "queue.second-writer"
	// QueueBadAppend: a follower refused an append it could not apply
	// (NewQueueBadAppend).
	QueueBadAppend Name = "queue.bad-append"
	// QueueRefusedTruncation: a replica refused to drop records at or
	// below a commit index it had been told (NewQueueRefusedTruncation).
	QueueRefusedTruncation Name = "queue.refused-truncation"
	// QueueTruncate: a replica dropped a conflicting suffix
	// (NewQueueTruncate).
	QueueTruncate Name = "queue.truncate"
	// QueueReported: a follower told the owner how much it holds durably
	// (NewQueueReported).
	QueueReported Name = "queue.reported"
	// QueueSealed: a replica answered a recovery candidate's seal: it
	// holds the candidate's epoch durably and refuses every older one
	// (NewQueueSealed).
	QueueSealed Name = "queue.sealed"
	// QueueDurable: a replica's log became durable up to an index
	// (NewQueueDurable).
	QueueDurable Name = "queue.durable"
	// QueueTrusted: a suspect replica's history is trusted again
	// (NewQueueTrusted).
	QueueTrusted Name = "queue.trusted"
	// QueueCommit: the owner advanced its commit index (NewQueueCommit).
	QueueCommit Name = "queue.commit"
	// QueueStale: an owner learned it no longer owns its epoch
	// (NewQueueStale).
	QueueStale Name = "queue.stale"
	// QueueOwnerStopped: an owner stopped serving because the metadata
	// named another (NewQueueOwnerStopped).
	QueueOwnerStopped Name = "queue.owner-stopped"
	// QueueClaim: a node's process asked the metadata for the epoch it is
	// to write in (NewQueueClaim).
	QueueClaim Name = "queue.claim"
	// QueueHandoffStarted: an owner began handing its queue over to
	// another replica on request (NewQueueHandoffStarted).
	QueueHandoffStarted Name = "queue.handoff-started"
	// QueueHandoffProposed: a handing-off owner, done draining, proposed
	// the next owner to the metadata (NewQueueHandoffProposed).
	QueueHandoffProposed Name = "queue.handoff-proposed"
	// QueueHandoffAborted: a handoff ended without the metadata naming
	// the next owner; the owner serves on (NewQueueHandoffAborted).
	QueueHandoffAborted Name = "queue.handoff-aborted"
	// QueueRetired: a node stopped serving a replica the metadata no
	// longer wants, deleted or replaced (NewQueueRetired).
	QueueRetired Name = "queue.retired"
	// QueueDropFailed: removing a replaced replica's files failed
	// (NewQueueDropFailed).
	QueueDropFailed Name = "queue.drop-failed"
	// QueueReplaced: a node dropped the replica the metadata replaced
	// (NewQueueReplaced).
	QueueReplaced Name = "queue.replaced"
)

// The names of an owner recovery's events.
const (
	// RecoveryStart: an owner began a recovery attempt
	// (NewRecoveryStart).
	RecoveryStart Name = "recovery.start"
	// RecoveryStage: one stage of a recovery attempt ended
	// (NewRecoveryStageSealed, NewRecoveryStageFetched,
	// NewRecoveryStageInstalled, NewRecoveryStageRetry).
	RecoveryStage Name = "recovery.stage"
	// RecoveryForeignHistory: a witness answered with another
	// incarnation's history (NewRecoveryForeignHistory).
	RecoveryForeignHistory Name = "recovery.foreign-history"
	// RecoveryLostWitness: a witness had lost what it once reported
	// (NewRecoveryLostWitness).
	RecoveryLostWitness Name = "recovery.lost-witness"
	// RecoveryUnsupported: no witness holds the known confirmed history
	// (NewRecoveryUnsupported).
	RecoveryUnsupported Name = "recovery.unsupported"
	// RecoveryContradiction: the copied history does not match the
	// source's witness (NewRecoveryContradiction).
	RecoveryContradiction Name = "recovery.contradiction"
	// RecoveryActivateFailed: the metadata refused the recovered owner's
	// activation (NewRecoveryActivateFailed).
	RecoveryActivateFailed Name = "recovery.activate-failed"
	// RecoveryDone: a recovery completed (NewRecoveryDone).
	RecoveryDone Name = "recovery.done"
	// RecoveryAbandoned: a recovery attempt gave up (NewRecoveryAbandoned).
	RecoveryAbandoned Name = "recovery.abandoned"
	// RecoverySourceReadFailed: a replica asked for history by a recovery
	// could not read its log (NewRecoverySourceReadFailed).
	RecoverySourceReadFailed Name = "recovery.source-read-failed"
)

// The names of the metadata member's events.
const (
	// MetaLeader: a node became metadata leader (NewMetaLeader).
	MetaLeader Name = "meta.leader"
	// MetaSnapshotInstalled: a member installed a metadata snapshot
	// (NewMetaSnapshotInstalled).
	MetaSnapshotInstalled Name = "meta.snapshot-installed"
	// MetaApplied: a member applied a committed metadata entry
	// (NewMetaApplied).
	MetaApplied Name = "meta.applied"
	// MetaCatchingUp: a member found its metadata log behind what it
	// acknowledged and stopped voting (NewMetaCatchingUp).
	MetaCatchingUp Name = "meta.catching-up"
	// MetaCaughtUp: a catching-up member caught up (NewMetaCaughtUp).
	MetaCaughtUp Name = "meta.caught-up"
	// MetaCampaign: a member started an election (NewMetaCampaign).
	MetaCampaign Name = "meta.campaign"
	// MetaBadMessage: a peer's metadata message did not decode or named
	// another sender (NewMetaBadMessage).
	MetaBadMessage Name = "meta.bad-message"
	// MetaFollowerLostLog: the leader heard that a follower lost log
	// entries (NewMetaFollowerLostLog).
	MetaFollowerLostLog Name = "meta.follower-lost-log"
	// MetaCommitLearned: a member without a leader raised its commit
	// index to what a peer reported committed (NewMetaCommitLearned).
	MetaCommitLearned Name = "meta.commit-learned"
	// MetaActivated: a node applied a queue's first activation
	// (NewMetaActivated).
	MetaActivated Name = "meta.activated"
	// MetaDeleted: a node applied a queue's deletion (NewMetaDeleted).
	MetaDeleted Name = "meta.deleted"
	// MetaRecoveryActivated: a node applied a recovered owner's
	// activation (NewMetaRecoveryActivated).
	MetaRecoveryActivated Name = "meta.recovery-activated"
	// MetaReplicaReplaced: a node applied a replica replacement
	// (NewMetaReplicaReplaced).
	MetaReplicaReplaced Name = "meta.replica-replaced"
	// MetaProposalFailed: a queue lifecycle proposal failed
	// (NewMetaProposalFailed).
	MetaProposalFailed Name = "meta.proposal-failed"
	// MetaPlanReplace: the leader planned to replace a replica
	// (NewMetaPlanReplace).
	MetaPlanReplace Name = "meta.plan-replace"
	// MetaPlanRecovery: the leader planned an owner recovery
	// (NewMetaPlanRecovery).
	MetaPlanRecovery Name = "meta.plan-recovery"
	// MetaNodeDown: a node applied a down mark (NewMetaNodeDown).
	MetaNodeDown Name = "meta.node-down"
	// MetaNodeUp: a node applied an up mark (NewMetaNodeUp).
	MetaNodeUp Name = "meta.node-up"
	// MetaDetection: a node applied a detection policy (NewMetaDetection).
	MetaDetection Name = "meta.detection"
	// MetaMembership: a node applied a change of the cluster's members
	// (NewMetaMembership).
	MetaMembership Name = "meta.membership"
	// MetaMembershipRefused: a node applied a membership change that
	// the state machine turned down (NewMetaMembershipRefused).
	MetaMembershipRefused Name = "meta.membership-refused"
	// MetaRebalance: a node applied the start or the end of a rebalance
	// (NewMetaRebalance).
	MetaRebalance Name = "meta.rebalance"
)

// The names of the failure detector's events.
const (
	// DetectSuspect: a node suspected a silent peer (NewDetectSuspect).
	DetectSuspect Name = "detect.suspect"
	// DetectConfirm: a suspicion was confirmed (NewDetectConfirm).
	DetectConfirm Name = "detect.confirm"
	// DetectRecovered: a suspected peer was heard from again
	// (NewDetectRecovered).
	DetectRecovered Name = "detect.recovered"
	// DetectReset: in eager detection, a peer's connection was reset
	// (NewDetectReset).
	DetectReset Name = "detect.reset"
	// DetectRefused: a connection to a peer was refused, no process
	// listening on its port (NewDetectRefused).
	DetectRefused Name = "detect.refused"
	// DetectVouched: another node heard from a peer this node was
	// verifying (NewDetectVouched).
	DetectVouched Name = "detect.vouched"
	// DetectFlapped: a peer this node had confirmed down answered again
	// with no connection reset, so its process never died; it is allowed
	// a longer silence for a while (NewDetectFlapped).
	DetectFlapped Name = "detect.flapped"
	// DetectLeaderLost: the metadata leader fell silent
	// (NewDetectLeaderLost).
	DetectLeaderLost Name = "detect.leader-lost"
)

// The names of a node process's own events.
const (
	// NodeStarted: a node finished starting (NewNodeStarted).
	NodeStarted Name = "node.started"
	// NodeStrayDirectory: a node found a directory among its queues that
	// names no replica (NewNodeStrayDirectory).
	NodeStrayDirectory Name = "node.stray-directory"
	// NodeUnexpectedMessage: a peer sent a message of a kind the node
	// does not take from peers (NewNodeUnexpectedMessage).
	NodeUnexpectedMessage Name = "node.unexpected-message"
	// NodeUnexpectedRequest: a client sent a request of a kind the node
	// does not take from clients (NewNodeUnexpectedRequest).
	NodeUnexpectedRequest Name = "node.unexpected-request"
	// NodeStamped: a node stamped a fresh data directory with its
	// identity (NewNodeStamped).
	NodeStamped Name = "node.stamped"
	// NodeDiskFull: a node's disk went past its free-space watermark or
	// data quota, and it refuses new messages (NewNodeDiskFull).
	NodeDiskFull Name = "node.disk-full"
	// NodeDiskOK: a node's disk has room again (NewNodeDiskOK).
	NodeDiskOK Name = "node.disk-ok"
)

// The names of the counter's events: the trivial replicated counter
// (node/counter) the simulator runs to test itself.
const (
	// CounterOpen: a counter node opened its log (NewCounterOpen).
	CounterOpen Name = "counter.open"
	// CounterFenced: a counter node found its log damaged
	// (NewCounterFenced).
	CounterFenced Name = "counter.fenced"
	// CounterAcked: a follower acknowledged increments as durable
	// (NewCounterAcked).
	CounterAcked Name = "counter.acked"
	// CounterConfirmed: the leader confirmed increments
	// (NewCounterConfirmed).
	CounterConfirmed Name = "counter.confirmed"
	// CounterDisconnect: a counter node lost a peer's connection
	// (NewCounterDisconnect).
	CounterDisconnect Name = "counter.disconnect"
)

// The names of checkpoint and compaction events.
const (
	// CheckpointBuilt: a replica made a checkpoint of its queue durable
	// (NewCheckpointBuilt).
	CheckpointBuilt Name = "checkpoint.built"
	// CheckpointInstalled: a replica took a checkpoint from another in
	// place of the history before it (NewCheckpointInstalled).
	CheckpointInstalled Name = "checkpoint.installed"
	// CheckpointRefused: a replica would not build or take a checkpoint
	// (NewCheckpointRefused).
	CheckpointRefused Name = "checkpoint.refused"
	// CheckpointMismatch: two replicas' checkpoints at one cut differ
	// (NewCheckpointMismatch).
	CheckpointMismatch Name = "checkpoint.mismatch"
	// CheckpointDurable: a replica holds a durable checkpoint, built,
	// taken or found at open (NewCheckpointDurable).
	CheckpointDurable Name = "checkpoint.durable"
	// CheckpointAsked: an owner asked its replicas for a checkpoint at
	// a cut (NewCheckpointAsked).
	CheckpointAsked Name = "checkpoint.asked"
	// CheckpointProposed: an owner proposed a certificate for a cut
	// (NewCheckpointProposed).
	CheckpointProposed Name = "checkpoint.proposed"
	// CheckpointCertified: a node applied the metadata's certificate of a
	// cut every replica checkpointed (NewCheckpointCertified).
	CheckpointCertified Name = "checkpoint.certified"
	// QueueCompacted: a replica dropped log segments a certified
	// checkpoint covers (NewQueueCompacted).
	QueueCompacted Name = "queue.compacted"
	// QueueRebuilt: a recovered owner rebuilt the state it serves from,
	// from its checkpoint through its last record, in steps
	// (NewQueueRebuilt).
	QueueRebuilt Name = "queue.rebuilt"
)

// names lists every constant above, in declaration order. A test parses
// this file and fails if a constant is missing here.
var names = []Name{
	QueueOpen, QueueActive, QueueRole, QueueFenced, QueueDeliver, QueueDeadLetter, QueueDeadLetterSent, QueueMoveRemembered, QueuePurgeWritten, QueueHoldEnded, QueueCountsCarried, QueueLeaseLapsed, QueueSubscriberQuiet, QueueSubscriberHeard, QueueQuorumLost,
	QueueQuorumRegained, QueueResting, QueueWaking, QueueRestCutOff, QueueActivationWaits, QueueActivationOutwaits, QueueOutwaited, QueueFollowerFull, QueueFollowerRoom, QueueSecondWriter, QueueBadAppend,
	QueueRefusedTruncation, QueueTruncate, QueueReported, QueueSealed, QueueDurable, QueueTrusted, QueueCommit,
	QueueStale, QueueOwnerStopped, QueueClaim, QueueHandoffStarted, QueueHandoffProposed, QueueHandoffAborted, QueueRetired, QueueDropFailed, QueueReplaced,
	RecoveryStart, RecoveryStage, RecoveryForeignHistory, RecoveryLostWitness, RecoveryUnsupported,
	RecoveryContradiction, RecoveryActivateFailed, RecoveryDone, RecoveryAbandoned, RecoverySourceReadFailed,
	MetaLeader, MetaSnapshotInstalled, MetaApplied, MetaCatchingUp, MetaCaughtUp, MetaCampaign, MetaBadMessage,
	MetaFollowerLostLog, MetaCommitLearned, MetaActivated, MetaDeleted, MetaRecoveryActivated, MetaReplicaReplaced, MetaProposalFailed,
	MetaPlanReplace, MetaPlanRecovery, MetaNodeDown, MetaNodeUp, MetaDetection, MetaMembership, MetaMembershipRefused, MetaRebalance,
	DetectSuspect, DetectConfirm, DetectRecovered, DetectReset, DetectRefused, DetectVouched, DetectFlapped, DetectLeaderLost,
	NodeStarted, NodeStrayDirectory, NodeUnexpectedMessage, NodeUnexpectedRequest, NodeStamped, NodeDiskFull, NodeDiskOK,
	CounterOpen, CounterFenced, CounterAcked, CounterConfirmed, CounterDisconnect,
	CheckpointBuilt, CheckpointInstalled, CheckpointRefused, CheckpointMismatch, CheckpointDurable, CheckpointAsked, CheckpointProposed,
	CheckpointCertified, QueueCompacted, QueueRebuilt,
}

// Names lists every event name a node emits, in a fixed order: for tests
// that must know the whole vocabulary (the literal lint at the
// repository root) and for tools. The slice is a copy.
func Names() []Name { return slices.Clone(names) }
