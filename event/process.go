package event

import "time"

// The constructors of the failure detector's events, of a node process's
// own events and of the counter's.

// NewDetectSuspect reports that this node suspects peer id, silent for
// silent; the event carries it in whole milliseconds.
func NewDetectSuspect(id uint32, silent time.Duration) Event {
	return newEvent(DetectSuspect, nodeNum(KeyNode, id), u64(KeySilent, uint64(silent.Milliseconds())))
}

// NewDetectConfirm reports that this node's suspicion of id was confirmed.
func NewDetectConfirm(id uint32) Event { return newEvent(DetectConfirm, nodeNum(KeyNode, id)) }

// NewDetectRecovered reports that this node heard from a suspected peer
// id again; wasConfirmed says whether it had been confirmed down.
func NewDetectRecovered(id uint32, wasConfirmed bool) Event {
	return newEvent(DetectRecovered, nodeNum(KeyNode, id), flag(KeyWasConfirmed, wasConfirmed))
}

// NewDetectFlapped reports that peer id, confirmed down while its process
// ran, answered again: flaps counts how often lately, and the leader
// allows it a longer silence before it verifies it again.
func NewDetectFlapped(id uint32, flaps int) Event {
	return newEvent(DetectFlapped, nodeNum(KeyNode, id), num(KeyFlaps, flaps))
}

// NewDetectReset reports that the connection to peer id was reset, in
// eager detection.
func NewDetectReset(id uint32) Event { return newEvent(DetectReset, nodeNum(KeyNode, id)) }

// NewDetectRefused reports that a connection to peer id was refused: its
// host answered, and no process listens on its port.
func NewDetectRefused(id uint32) Event { return newEvent(DetectRefused, nodeNum(KeyNode, id)) }

// NewDetectVouched reports that node from answered this node's Probe:
// peer id, which this node was verifying, answered from's ping.
func NewDetectVouched(id, from uint32) Event {
	return newEvent(DetectVouched, nodeNum(KeyNode, id), nodeNum(KeyFrom, from))
}

// NewDetectLeaderLost reports that metadata leader id fell silent.
func NewDetectLeaderLost(id uint32) Event { return newEvent(DetectLeaderLost, nodeNum(KeyNode, id)) }

// NewNodeStarted reports that this node finished starting with queues
// queue replicas open.
func NewNodeStarted(queues int) Event { return newEvent(NodeStarted, num(KeyQueues, queues)) }

// NewNodeStrayDirectory reports that this node found a directory named
// dir among its queues that names no replica.
func NewNodeStrayDirectory(dir string) Event { return newEvent(NodeStrayDirectory, str(KeyDir, dir)) }

// NewNodeUnexpectedMessage reports that peer from sent a message of kind,
// which peers do not send.
func NewNodeUnexpectedMessage(kind string, from uint32) Event {
	return newEvent(NodeUnexpectedMessage, str(KeyKind, kind), nodeStr(KeyFrom, from))
}

// NewNodeUnexpectedRequest reports that a client sent a request of kind,
// which clients do not send.
func NewNodeUnexpectedRequest(kind string) Event {
	return newEvent(NodeUnexpectedRequest, str(KeyKind, kind))
}

// NewNodeStamped reports that this node stamped its fresh data directory
// as its own in cluster.
func NewNodeStamped(cluster string) Event { return newEvent(NodeStamped, str(KeyCluster, cluster)) }

// NewNodeDiskFull reports that the node's queues hold bytes of data and
// its disk has free bytes left (-1: unknown), past a limit: why says which.
func NewNodeDiskFull(bytes, free int64, why string) Event {
	return newEvent(NodeDiskFull, i64(KeyBytes, bytes), i64(KeyFree, free), str(KeyWhy, why))
}

// NewNodeDiskOK reports that the node's disk has room again.
func NewNodeDiskOK(bytes, free int64) Event {
	return newEvent(NodeDiskOK, i64(KeyBytes, bytes), i64(KeyFree, free))
}

// NewCounterOpen reports that a counter node opened its log, which ends at
// last with digest.
func NewCounterOpen(last uint64, digest string) Event {
	return newEvent(CounterOpen, u64(KeyLast, last), str(KeyDigest, digest))
}

// NewCounterFenced reports that a counter node's log did not open, damaged.
func NewCounterFenced(err error) Event { return newEvent(CounterFenced, errStr(KeyErr, err)) }

// NewCounterAcked reports that a counter follower acknowledged increments
// through durable as durable.
func NewCounterAcked(durable uint64) Event { return newEvent(CounterAcked, u64(KeyDurable, durable)) }

// NewCounterConfirmed reports that the counter's leader confirmed
// increments through index.
func NewCounterConfirmed(index uint64) Event {
	return newEvent(CounterConfirmed, u64(KeyIndex, index))
}

// NewCounterDisconnect reports that a counter node's connection to peer
// was reset.
func NewCounterDisconnect(peer uint32) Event {
	return newEvent(CounterDisconnect, nodeStr(KeyPeer, peer))
}
