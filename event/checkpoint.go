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

// NewCheckpointCertified reports that the metadata certified q's
// checkpoint at index, built by every replica in epoch.
func NewCheckpointCertified(q string, index, epoch uint64) Event {
	return newEvent(CheckpointCertified, str(KeyQueue, q), u64(KeyIndex, index), u64(KeyEpoch, epoch))
}

// NewQueueCompacted reports that q's replica dropped its log before index:
// its first retained record is there now.
func NewQueueCompacted(q string, index uint64) Event {
	return newEvent(QueueCompacted, str(KeyQueue, q), u64(KeyIndex, index))
}
