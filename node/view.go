package node

import (
	"fmt"
	"slices"
	"time"
)

// QueueView is one queue as this node sees it: the metadata it has
// applied, and the part its own replica plays. Status pages and tools
// read it; nothing in the node depends on it.
type QueueView struct {
	Name        string
	Incarnation uint64
	// State is the metadata state ("preparing", "active", "recovering"),
	// or "unknown" for a replica on disk the metadata does not name.
	State string
	// Owner and Epoch are the owner and epoch the metadata names;
	// Replicas the replica set, placement owner first.
	Owner    NodeID
	Epoch    uint64
	Replicas []NodeID
	// Role is this node's part: "owner" (serving in its epoch),
	// "candidate" (recovering or activating the epoch the metadata gave
	// it), "stale" (an owner a newer epoch fenced), "follower", or "none"
	// when this node holds no replica.
	Role string
	// ReplicaEpoch is the local replica's epoch: the owner's own, or the
	// highest a follower has seen. LastIndex is its last log index, and
	// Commit the owner's confirmed index (zero on followers).
	ReplicaEpoch uint64
	LastIndex    uint64
	Commit       uint64
	// Fenced says why a damaged replica takes no part, if it does not.
	Fenced string
	// Suspect is set while the replica, opened over storage an earlier
	// process wrote, has not yet been verified against an owner: until
	// then its own log counts for less as evidence in a recovery.
	Suspect bool
	// FirstIndex is the first record the replica's log retains, and
	// RetainedBytes and Segments what the log keeps on disk.
	FirstIndex    uint64
	RetainedBytes int64
	Segments      int
	// CheckpointIndex is the cut of the replica's newest checkpoint and
	// CheckpointBytes the state it holds; CertifiedIndex the newest cut
	// the metadata certified (zero: none).
	CheckpointIndex uint64
	CheckpointBytes int
	CertifiedIndex  uint64
	// CheckpointAge is how long ago the replica made its checkpoint,
	// by its clock; zero when it has none or does not know.
	CheckpointAge time.Duration
	// Depth is the queue's content as its serving owner sees it; only
	// the owner's view carries it (Depth.Known).
	Depth QueueDepth
	// NoQuorum is set on an owner that has heard from no quorum of its
	// replicas for as long as its peers wait before replacing it: it
	// serves no client until it hears from one again (quorum.go).
	NoQuorum bool
}

// QueueDepth counts a queue's unsettled messages by where they stand,
// and the subscriptions its owner serves.
type QueueDepth struct {
	// Known is set on the serving owner's view; every count is zero
	// elsewhere.
	Known bool
	// Ready messages wait for a subscriber, Leased ones are out under a
	// lease, Delayed ones wait for their delay to pass. Their sum is the
	// queue's unsettled backlog.
	Ready, Leased, Delayed int
	// Consumers counts the subscriptions the owner serves.
	Consumers int
}

// Queues lists every queue the metadata names or this node holds a
// replica of, by name. Like every Node method it must be called on the
// node's goroutine.
func (n *Node) Queues() []QueueView {
	names := slices.Clone(n.names)
	if n.meta != nil && n.meta.state != nil {
		names = append(names, n.meta.state.queueNames()...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]QueueView, 0, len(names))
	for _, name := range names {
		out = append(out, n.queueView(name))
	}
	return out
}

func (n *Node) queueView(name string) QueueView {
	v := QueueView{Name: name, State: "unknown", Role: "none"}
	if n.meta != nil && n.meta.state != nil {
		if q := n.meta.state.queues[name]; q != nil {
			v.Incarnation, v.Owner, v.Epoch = q.Incarnation, q.Owner, q.Epoch
			v.Replicas, v.State = slices.Clone(q.Replicas), queueStateNames[q.State]
			v.CertifiedIndex = q.CheckpointCut
		}
	}
	r := n.queues[name]
	if r == nil {
		return v
	}
	if v.Incarnation == 0 {
		v.Incarnation = r.inc
	}
	v.ReplicaEpoch, v.Suspect = r.epoch, r.suspect
	if r.log != nil {
		// A replica fenced while opening has no log to read.
		v.LastIndex, v.FirstIndex = r.log.LastIndex(), r.log.FirstIndex()
		v.RetainedBytes, v.Segments = r.log.RetainedBytes(), r.log.Segments()
	}
	v.CheckpointIndex, v.CheckpointBytes = r.ckpt.cut, int(r.checkpointBytes())
	if r.ckpt.madeAt != 0 {
		v.CheckpointAge = max(0, n.env.Now().Sub(time.Unix(0, r.ckpt.madeAt)))
	}
	if r.fencedErr != nil {
		v.Fenced = r.fencedErr.Error()
	}
	switch r.role {
	case roleStale:
		v.Role = "stale"
	case roleOwner:
		v.Role, v.Commit = "owner", r.own.commit
		v.Depth, v.NoQuorum = r.own.depth(), r.own.cutOff()
	case roleCandidate:
		v.Role, v.Commit = "candidate", r.own.commit
	default:
		// Preparing, fenced (Fenced says why) and retired replicas take
		// no part; for a status page they are not owners.
		v.Role = "follower"
	}
	return v
}

// MetaLeader returns the metadata leader this node knows of and its
// term; the leader is zero while none is known.
func (n *Node) MetaLeader() (leader NodeID, term uint64) {
	if n.meta == nil {
		return 0, 0
	}
	return n.meta.leader, n.meta.term
}

// depth counts the owner's unsettled messages. Every leased, delayed or
// just-acked message is unsettled and a message is only ever one of
// them, so what remains of the unsettled count is ready (or about to be
// confirmed and ready).
func (o *ownerState) depth() QueueDepth {
	d := QueueDepth{Known: true, Delayed: len(o.state.delayed), Consumers: len(o.subs)}
	for _, s := range o.subs {
		d.Leased += len(s.leases)
	}
	settling := o.settlingCount()
	d.Ready = len(o.state.messages) - d.Leased - d.Delayed - settling
	if d.Ready < 0 {
		panic(fmt.Sprintf("node: queue %s has %d unsettled messages but %d leased, %d delayed and %d being settled",
			o.r.name, len(o.state.messages), d.Leased, d.Delayed, settling))
	}
	return d
}
