package event

import (
	"log/slog"
	"time"
)

// The constructors of the metadata member's events.

// NewMetaLeader reports that leader became metadata leader in term.
func NewMetaLeader(term uint64, leader uint32) Event {
	return newEvent(MetaLeader, u64(KeyTerm, term), nodeNum(KeyNode, leader))
}

// NewMetaApplied reports that this member applied the committed metadata
// entry at index, written in term. Raft promises that every member
// applies the same entry at an index, and an index and term name one
// entry, so the simulator holds the members to agreeing on the term at
// each index they applied.
func NewMetaApplied(index, term uint64) Event {
	return newEvent(MetaApplied, u64(KeyIndex, index), u64(KeyTerm, term))
}

// NewMetaSnapshotInstalled reports that this member installed a metadata
// snapshot taken at index.
func NewMetaSnapshotInstalled(index uint64) Event {
	return newEvent(MetaSnapshotInstalled, u64(KeyIndex, index))
}

// NewMetaCatchingUp reports that this member holds less of the metadata
// log than it acknowledged, or may, and votes for no one until it has
// caught up; why says how it knows.
func NewMetaCatchingUp(why string) Event {
	return newEvent(MetaCatchingUp, str(KeyWhy, why))
}

// NewMetaCaughtUp reports that a catching-up member holds the metadata
// log through commit again.
func NewMetaCaughtUp(commit uint64) Event {
	return newEvent(MetaCaughtUp, u64(KeyCommit, commit))
}

// NewMetaCampaign reports that this member started an election for term,
// and why.
func NewMetaCampaign(why string, term uint64) Event {
	return newEvent(MetaCampaign, str(KeyWhy, why), u64(KeyTerm, term))
}

// NewMetaBadMessage reports that a metadata message from node from did not
// decode or named another sender.
func NewMetaBadMessage(from uint32) Event {
	return newEvent(MetaBadMessage, nodeStr(KeyFrom, from))
}

// NewMetaCommitLearned reports that this member, without a leader, raised
// its commit index to commit on the word of from, whose log holds the
// same entry there and counts it committed.
func NewMetaCommitLearned(from uint32, commit uint64) Event {
	return newEvent(MetaCommitLearned, nodeStr(KeyFrom, from), u64(KeyCommit, commit))
}

// NewMetaFollowerLostLog reports that follower's metadata log ends at
// last although the leader counted it through counted; the leader hands
// leadership to transferTo (zero for no one).
func NewMetaFollowerLostLog(follower uint32, last, counted uint64, transferTo uint32) Event {
	return newEvent(MetaFollowerLostLog, nodeStr(KeyNode, follower), u64(KeyLast, last), u64(KeyCounted, counted),
		nodeNum(KeyTransferTo, transferTo))
}

// NewMetaDeleted reports that this node applied the deletion of
// incarnation inc of queue q.
func NewMetaDeleted(q string, inc uint64) Event {
	return newEvent(MetaDeleted, str(KeyQueue, q), u64(KeyInc, inc))
}

// NewMetaActivated reports that this node applied the activation of
// incarnation inc of q.
func NewMetaActivated(q string, inc uint64) Event {
	return newEvent(MetaActivated, str(KeyQueue, q), u64(KeyInc, inc))
}

// NewMetaRecoveryActivated reports that this node applied the activation
// of q's recovered owner in epoch of incarnation inc, naming the members
// that hold the recovered history.
func NewMetaRecoveryActivated(q string, inc, epoch uint64, members []uint32) Event {
	return newEvent(MetaRecoveryActivated, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyEpoch, epoch), nodes(KeyMembers, members))
}

// NewMetaReplicaReplaced reports that this node applied a replacement in
// q's replica set as of epoch, leaving replicas.
func NewMetaReplicaReplaced(q string, epoch uint64, replicas []uint32) Event {
	return newEvent(MetaReplicaReplaced, str(KeyQueue, q), u64(KeyEpoch, epoch), nodes(KeyReplicas, replicas))
}

// NewMetaProposalFailed reports that a lifecycle proposal for q, of
// command kind kind, failed, and why.
func NewMetaProposalFailed(q string, kind int, why string) Event {
	return newEvent(MetaProposalFailed, str(KeyQueue, q), num(KeyKind, kind), str(KeyWhy, why))
}

// NewMetaPlanReplace reports that the leader plans to replace q's replica
// on out with one on in, in epoch.
func NewMetaPlanReplace(q string, out, in uint32, epoch uint64) Event {
	return newEvent(MetaPlanReplace, str(KeyQueue, q), nodeNum(KeyOut, out), nodeNum(KeyIn, in), u64(KeyEpoch, epoch))
}

// NewMetaPlanRecovery reports that the leader plans to move q's ownership
// from node from to node to, in epoch.
func NewMetaPlanRecovery(q string, from, to uint32, epoch uint64) Event {
	return newEvent(MetaPlanRecovery, str(KeyQueue, q), nodeNum(KeyFrom, from), nodeNum(KeyTo, to), u64(KeyEpoch, epoch))
}

// NewMetaNodeDown reports that this node applied the mark of id as down.
func NewMetaNodeDown(id uint32) Event { return newEvent(MetaNodeDown, nodeNum(KeyNode, id)) }

// NewMetaNodeUp reports that this node applied the mark of id as up.
func NewMetaNodeUp(id uint32) Event { return newEvent(MetaNodeUp, nodeNum(KeyNode, id)) }

// NewMetaDetection reports that this node applied a failure detection
// policy: mode's number, the heartbeat interval and the grace period.
func NewMetaDetection(mode int, interval, grace time.Duration) Event {
	return newEvent(MetaDetection, num(KeyMode, mode),
		slog.Duration(string(KeyInterval), interval), slog.Duration(string(KeyGrace), grace))
}

// NewMetaMembership reports that this node applied a membership change
// of kind (add, promote, demote, leave, remove) for node id, leaving the
// metadata group with voters and learners, while the largest replica set
// of any queue held largestSet replicas.
func NewMetaMembership(kind string, id uint32, voters, learners []uint32, largestSet int) Event {
	return newEvent(MetaMembership, str(KeyKind, kind), nodeNum(KeyNode, id), nodes(KeyVoters, voters), nodes(KeyLearners, learners),
		num(KeyLargestSet, largestSet))
}

// NewMetaMembershipRefused reports that this node applied a membership
// change of kind for node id that the state machine refused, and why.
func NewMetaMembershipRefused(kind string, id uint32, why string) Event {
	return newEvent(MetaMembershipRefused, str(KeyKind, kind), nodeNum(KeyNode, id), str(KeyWhy, why))
}

// NewMetaRebalance reports that this node applied the start (on) or the
// end of a rebalance of queue replicas.
func NewMetaRebalance(on bool) Event {
	state := "done"
	if on {
		state = "started"
	}
	return newEvent(MetaRebalance, str(KeyOutcome, state))
}
