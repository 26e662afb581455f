package event

// NewCheckpointBuilt reports that q's replica made its checkpoint at index
// durable; bytes is the size of the state it holds.
func NewCheckpointBuilt(q string, index uint64, bytes int) Event {
	return newEvent(CheckpointBuilt, str(KeyQueue, q), u64(KeyIndex, index), num(KeyBytes, bytes))
}

// NewCheckpointInstalled reports that q's replica took a checkpoint at
// index from node from, in place of the history before it.
func NewCheckpointInstalled(q string, index uint64, from uint32) Event {
	return newEvent(CheckpointInstalled, str(KeyQueue, q), u64(KeyIndex, index), nodeStr(KeyFrom, from))
}

// NewCheckpointRefused reports that q's replica would not build or take a
// checkpoint at index, and why.
func NewCheckpointRefused(q string, index uint64, why string) Event {
	return newEvent(CheckpointRefused, str(KeyQueue, q), u64(KeyIndex, index), str(KeyWhy, why))
}

// NewCheckpointMismatch reports that q's owner found node from's
// checkpoint at index to hold another state than its own.
func NewCheckpointMismatch(q string, index uint64, from uint32) Event {
	return newEvent(CheckpointMismatch, str(KeyQueue, q), u64(KeyIndex, index), nodeStr(KeyFrom, from))
}

// NewCheckpointDurable reports that q's replica of incarnation inc holds
// a durable checkpoint at index whose state has the given digest: one it
// built, one it took from another replica, or one it found on its disk
// when it opened. Only such a checkpoint may back a receipt.
func NewCheckpointDurable(q string, inc, index uint64, digest string) Event {
	return newEvent(CheckpointDurable, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyIndex, index), str(KeyDigest, digest))
}

// NewCheckpointAsked reports that q's owner in epoch asks its replicas
// for a checkpoint at index, and why that cut: "commit" (its commit
// index), "reused" (a cut an owner of an earlier epoch asked for, which
// this replica holds or builds) or "raised" (a later cut a replica
// answered with).
func NewCheckpointAsked(q string, index, epoch uint64, why string) Event {
	return newEvent(CheckpointAsked, str(KeyQueue, q), u64(KeyIndex, index), u64(KeyEpoch, epoch), str(KeyWhy, why))
}

// NewCheckpointProposed reports that q's owner in epoch asks the metadata
// to certify incarnation inc's checkpoint at index, naming the replicas
// whose receipts it counted.
func NewCheckpointProposed(q string, inc, index, epoch uint64, members []uint32) Event {
	return newEvent(CheckpointProposed, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyIndex, index), u64(KeyEpoch, epoch),
		nodes(KeyMembers, members))
}

// NewCheckpointCertified reports that this node applied the metadata's
// certificate of incarnation inc of q at index, proposed in epoch for
// the replica set members.
func NewCheckpointCertified(q string, inc, index, epoch uint64, members []uint32) Event {
	return newEvent(CheckpointCertified, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyIndex, index), u64(KeyEpoch, epoch),
		nodes(KeyMembers, members))
}

// NewQueueCompacted reports that q's replica of incarnation inc dropped
// its log before index: its first retained record is there now.
func NewQueueCompacted(q string, inc, index uint64) Event {
	return newEvent(QueueCompacted, str(KeyQueue, q), u64(KeyInc, inc), u64(KeyIndex, index))
}

// NewQueueRebuilt reports that q's recovered owner rebuilt its state from
// the checkpoint at index through last, in steps steps, starting from
// base: the checkpoint's state as a build left it in memory ("memory"),
// decoded from the checkpoint file ("decoded"), or empty ("empty").
func NewQueueRebuilt(q string, index, last uint64, steps int, base string) Event {
	return newEvent(QueueRebuilt, str(KeyQueue, q), u64(KeyIndex, index), u64(KeyLast, last), u64(KeySteps, uint64(steps)), str(KeyBase, base))
}
