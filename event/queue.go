package event

import (
	"log/slog"
	"time"
)

// The constructors of a queue replica's events. Each fixes its event's
// attributes in the order the trace prints them.

// NewQueueOpen reports that the replica of incarnation inc of q was
// opened from disk with its log ending at last, in epoch.
func NewQueueOpen(q string, inc, last, epoch uint64) Event {
	return newEvent(QueueOpen, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyLast, last), u64(KeyEpoch, epoch))
}

// NewQueueActive reports that this node now serves q as owner of epoch in
// incarnation inc, its log ending at last.
func NewQueueActive(q string, epoch, inc, last uint64) Event {
	return newEvent(QueueActive, str(KeyQueue, q), u64(KeyEpoch, epoch), u64(KeyInc, inc), u64(KeyLast, last))
}

// NewQueueRole reports that q's replica moved from role from to role to
// in epoch, and why.
func NewQueueRole(q, from, to string, epoch uint64, why string) Event {
	return newEvent(QueueRole, str(KeyQueue, q), str(KeyFrom, from), str(KeyTo, to), u64(KeyEpoch, epoch), str(KeyWhy, why))
}

// NewQueueFenced reports that q's replica stopped using its storage after
// err.
func NewQueueFenced(q string, err error) Event {
	return newEvent(QueueFenced, str(KeyQueue, q), errStr(KeyErr, err))
}

// NewQueueDeliver reports that q's owner sent message id under lease.
func NewQueueDeliver(q, id string, lease uint64) Event {
	return newEvent(QueueDeliver, str(KeyQueue, q), str(KeyID, id), u64(KeyLease, lease))
}

// NewQueueDeadLetter reports that q's owner took message id out of
// delivery after it went out deliveries times, to move it to the
// dead-letter queue.
func NewQueueDeadLetter(q, id string, deliveries uint32) Event {
	return newEvent(QueueDeadLetter, str(KeyQueue, q), str(KeyID, id), u64(KeyDeliveries, uint64(deliveries)))
}

// NewQueueDeadLetterSent reports that q's owner asked node owner to store
// message id in the dead-letter queue to.
func NewQueueDeadLetterSent(q, id, to string, owner uint32) Event {
	return newEvent(QueueDeadLetterSent, str(KeyQueue, q), str(KeyID, id), str(KeyTo, to), nodeNum(KeyNode, owner))
}

// NewQueueMoveRemembered reports that the owner of dead-letter queue q
// answered source's repeated ask to store message id from its ledger of
// moves: the queue's deduplication window no longer held the ID.
func NewQueueMoveRemembered(q, id, source string) Event {
	return newEvent(QueueMoveRemembered, str(KeyQueue, q), str(KeyID, id), str(KeyFrom, source))
}

// NewQueuePurgeWritten reports that q's owner appended the purge named
// by token at index, settling everything published at or before after.
// A purge is written when its request is taken, which may be long after
// its client sent it (an owner still recovering parks it, and a hold
// defers it), so the simulator's checkers learn from this event, not
// from the client, when the purge may have landed.
func NewQueuePurgeWritten(q, token string, index, after uint64) Event {
	return newEvent(QueuePurgeWritten, str(KeyQueue, q), str(KeyID, token), u64(KeyIndex, index), u64(KeyAfter, after))
}

// NewQueueOutwaited reports that q's owner of epoch, which admitted
// publishes only while an older owner's quorum might still be fresh,
// serves in full now, having appended admitted publishes meanwhile.
func NewQueueOutwaited(q string, epoch uint64, admitted int) Event {
	return newEvent(QueueOutwaited, str(KeyQueue, q), u64(KeyEpoch, epoch), num(KeyAdmitted, admitted))
}

// NewQueueCountsCarried reports that q's owner of epoch, activated by a
// recovery, raised the delivery counts of raised messages to what its
// replicas had heard from the owner before it.
func NewQueueCountsCarried(q string, epoch uint64, raised int) Event {
	return newEvent(QueueCountsCarried, str(KeyQueue, q), u64(KeyEpoch, epoch), num(KeyRaised, raised))
}

// NewQueueHoldEnded reports that q's owner of epoch, activated by a
// recovery, began delivering the history it recovered, in which held
// messages were unsettled.
func NewQueueHoldEnded(q string, epoch uint64, held int) Event {
	return newEvent(QueueHoldEnded, str(KeyQueue, q), u64(KeyEpoch, epoch), num(KeyHeld, held))
}

// NewQueueSubscriberQuiet reports that q's owner holds back the
// subscription of connection conn for pause, then hands it one delivery
// at a time: its leases ran out quiet times in a row with no word from
// the connection.
func NewQueueSubscriberQuiet(q string, conn uint64, quiet int, pause time.Duration) Event {
	return newEvent(QueueSubscriberQuiet, str(KeyQueue, q), u64(KeyConn, conn), i64(KeyQuiet, int64(quiet)),
		slog.Int64(string(KeyElapsed), pause.Microseconds()))
}

// NewQueueSubscriberHeard reports that the held-back subscription of
// connection conn to q spoke, and takes deliveries again.
func NewQueueSubscriberHeard(q string, conn uint64) Event {
	return newEvent(QueueSubscriberHeard, str(KeyQueue, q), u64(KeyConn, conn))
}

// NewQueueLeaseLapsed reports that q's owner of epoch stopped delivering:
// the quorum's latest renewal of its delivery lease is age old, which is
// past the lease. It delivers again once replies renew it.
func NewQueueLeaseLapsed(q string, epoch uint64, age time.Duration) Event {
	return newEvent(QueueLeaseLapsed, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), age.Microseconds()))
}

// NewQueueQuorumLost reports that q's owner of epoch has heard from no
// quorum of its replicas for silence and stopped serving its clients.
func NewQueueQuorumLost(q string, epoch uint64, silence time.Duration) Event {
	return newEvent(QueueQuorumLost, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), silence.Microseconds()))
}

// NewQueueQuorumRegained reports that q's owner of epoch, which had
// stopped serving for want of a quorum, heard from one again after
// silence and serves again.
func NewQueueQuorumRegained(q string, epoch uint64, silence time.Duration) Event {
	return newEvent(QueueQuorumRegained, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), silence.Microseconds()))
}

// NewQueueResting reports that q's owner of epoch, idle with every
// replica caught up, stopped sending heartbeats.
func NewQueueResting(q string, epoch uint64) Event {
	return newEvent(QueueResting, str(KeyQueue, q), u64(KeyEpoch, epoch))
}

// NewQueueWaking reports that q's resting owner of epoch woke after
// resting for rested: it sends its followers appends again.
func NewQueueWaking(q string, epoch uint64, rested time.Duration) Event {
	return newEvent(QueueWaking, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), rested.Microseconds()))
}

// NewQueueRestCutOff reports that q's resting owner of epoch heard from
// no quorum for silence, past what its seldom heartbeats allow: it is cut
// off.
func NewQueueRestCutOff(q string, epoch uint64, silence time.Duration) Event {
	return newEvent(QueueRestCutOff, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), silence.Microseconds()))
}

// NewQueueActivationWaits reports that q's owner of epoch, activated by
// the metadata after a recovery or holding its opening marker on a
// quorum, found its quorum had been silent for silence, past the limit an
// owner may serve on, or, opening, found the metadata holds its node
// down; it serves once a quorum accepts appends it sent since it began
// waiting (and the metadata holds it up), or goes stale if a newer epoch
// sealed them.
func NewQueueActivationWaits(q string, epoch uint64, silence time.Duration) Event {
	return newEvent(QueueActivationWaits, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), silence.Microseconds()))
}

// NewQueueActivationOutwaits reports that q's owner of epoch, activated
// by the metadata after a recovery, admits publishes and serves in full
// in remaining, when the acceptances its sealed witnesses gave an older
// owner are past the silence limit.
func NewQueueActivationOutwaits(q string, epoch uint64, remaining time.Duration) Event {
	return newEvent(QueueActivationOutwaits, str(KeyQueue, q), u64(KeyEpoch, epoch), slog.Int64(string(KeyElapsed), remaining.Microseconds()))
}

// NewQueueFollowerFull reports that q's owner heard from the follower on
// node that its node is short of space.
func NewQueueFollowerFull(q string, node uint32) Event {
	return newEvent(QueueFollowerFull, str(KeyQueue, q), nodeStr(KeyNode, node))
}

// NewQueueFollowerRoom reports that q's owner heard from the follower on
// node, short of space before, that it has room again.
func NewQueueFollowerRoom(q string, node uint32) Event {
	return newEvent(QueueFollowerRoom, str(KeyQueue, q), nodeStr(KeyNode, node))
}

// NewQueueSecondWriter reports that node from appended to q in epoch,
// whose writer this follower already knows to be another node.
func NewQueueSecondWriter(q string, from uint32, epoch uint64) Event {
	return newEvent(QueueSecondWriter, str(KeyQueue, q), nodeStr(KeyFrom, from), u64(KeyEpoch, epoch))
}

// NewQueueBadAppend reports that q's replica refused an append of epoch
// from node from with err.
func NewQueueBadAppend(q string, epoch uint64, from uint32, err error) Event {
	return refusal(QueueBadAppend, q, epoch, from, err)
}

// NewQueueRefusedTruncation reports that q's replica refused to drop
// records at or below a commit index it had been told, asked in epoch by
// node from; err says what it was asked.
func NewQueueRefusedTruncation(q string, epoch uint64, from uint32, err error) Event {
	return refusal(QueueRefusedTruncation, q, epoch, from, err)
}

// refusal builds the two events of a refused append, which carry the same
// attributes.
func refusal(name Name, q string, epoch uint64, from uint32, err error) Event {
	return newEvent(name, str(KeyQueue, q), u64(KeyEpoch, epoch), nodeStr(KeyFrom, from), errStr(KeyErr, err))
}

// NewQueueTruncate reports that the replica of incarnation inc of q
// dropped its log after index after.
func NewQueueTruncate(q string, inc, after uint64) Event {
	return newEvent(QueueTruncate, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyAfter, after))
}

// NewQueueReported reports that q's follower (of incarnation inc) told
// the owner of epoch it holds durable records through durable.
func NewQueueReported(q string, inc, epoch, durable uint64) Event {
	return newEvent(QueueReported, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyEpoch, epoch), u64(KeyDurable, durable))
}

// NewQueueSealed reports that q's replica answered the seal of the
// candidate from, as a witness sealed at epoch: the epoch is durable, and
// the replica refuses every older one.
func NewQueueSealed(q string, inc, epoch uint64, from uint32) Event {
	return newEvent(QueueSealed, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyEpoch, epoch), nodeStr(KeyFrom, from))
}

// NewQueueDurable reports that the log of q's replica of incarnation
// inc is durable through index.
func NewQueueDurable(q string, inc, index uint64) Event {
	return newEvent(QueueDurable, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyIndex, index))
}

// NewQueueTrusted reports that q's suspect replica is trusted again in
// epoch, and why.
func NewQueueTrusted(q string, epoch uint64, why string) Event {
	return newEvent(QueueTrusted, str(KeyQueue, q), u64(KeyEpoch, epoch), str(KeyWhy, why))
}

// NewQueueCommit reports that q's owner of epoch advanced its commit
// index to index.
func NewQueueCommit(q string, index, epoch uint64) Event {
	return newEvent(QueueCommit, str(KeyQueue, q), u64(KeyIndex, index), u64(KeyEpoch, epoch))
}

// NewQueueStale reports that q's owner of epoch learned it is stale, and
// how.
func NewQueueStale(q string, epoch uint64, why string) Event {
	return newEvent(QueueStale, str(KeyQueue, q), u64(KeyEpoch, epoch), str(KeyWhy, why))
}

// NewQueueOwnerStopped reports that q's owner of epoch stopped serving
// because the metadata names next as owner.
func NewQueueOwnerStopped(q string, epoch uint64, next uint32) Event {
	return newEvent(QueueOwnerStopped, str(KeyQueue, q), u64(KeyEpoch, epoch), nodeNum(KeyNext, next))
}

// NewQueueClaim reports that this node's process asked the metadata for
// q's epoch after epoch: the metadata named this node owner without
// naming the process, or the process restarted.
func NewQueueClaim(q string, epoch uint64) Event {
	return newEvent(QueueClaim, str(KeyQueue, q), u64(KeyEpoch, epoch))
}

// NewQueueHandoffStarted reports that q's owner of epoch began handing
// the queue over to node to, with leases deliveries leased.
func NewQueueHandoffStarted(q string, epoch uint64, to uint32, leases int) Event {
	return newEvent(QueueHandoffStarted, str(KeyQueue, q), u64(KeyEpoch, epoch), nodeNum(KeyNext, to), num(KeyLeases, leases))
}

// NewQueueHandoffProposed reports that q's owner of epoch proposed node to
// as the next owner, with leases deliveries still leased: zero if its
// consumers settled or gave back everything in time.
func NewQueueHandoffProposed(q string, epoch uint64, to uint32, leases int) Event {
	return newEvent(QueueHandoffProposed, str(KeyQueue, q), u64(KeyEpoch, epoch), nodeNum(KeyNext, to), num(KeyLeases, leases))
}

// NewQueueHandoffAborted reports that q's owner of epoch gave up handing
// the queue to node to, and why.
func NewQueueHandoffAborted(q string, epoch uint64, to uint32, why string) Event {
	return newEvent(QueueHandoffAborted, str(KeyQueue, q), u64(KeyEpoch, epoch), nodeNum(KeyNext, to), str(KeyWhy, why))
}

// NewQueueRetired reports that this node stopped serving incarnation inc
// of q.
func NewQueueRetired(q string, inc uint64) Event {
	return newEvent(QueueRetired, str(KeyQueue, q), u64(KeyInc, inc))
}

// NewQueueDropFailed reports that removing q's replaced replica failed
// with err.
func NewQueueDropFailed(q string, err error) Event {
	return newEvent(QueueDropFailed, str(KeyQueue, q), errStr(KeyErr, err))
}

// NewQueueReplaced reports that this node dropped its replica of
// incarnation inc of q, which the metadata replaced.
func NewQueueReplaced(q string, inc uint64) Event {
	return newEvent(QueueReplaced, str(KeyQueue, q), u64(KeyInc, inc))
}
