package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
	"go.etcd.io/raft/v3"
)

// QueueView is one queue as this node sees it: the metadata it has
// applied, and the part its own replica plays. Status pages and tools
// read it; nothing in the node depends on it.
type QueueView struct {
	Name        string
	Incarnation uint64
	// HeldIncarnation is the incarnation of the replica this node holds
	// (zero: none); it differs from Incarnation only until the node
	// retires a replica of an incarnation the metadata has left.
	HeldIncarnation uint64
	// State is the metadata state ("preparing", "active", "recovering"),
	// or "unknown" for a replica on disk the metadata does not name.
	State string
	// Owner and Epoch are the owner and epoch the metadata names;
	// Replicas the replica set, placement owner first.
	Owner    NodeID
	Epoch    uint64
	Replicas []NodeID
	// DedupWindow is how long the queue remembers a published message
	// ID: the window it was created with or, for a queue created without
	// one, this node's default (zero while the metadata does not name it).
	// DedupDefault says it is the default.
	DedupWindow  time.Duration
	DedupDefault bool
	// DeadLetter names the queue a message moves to once it was
	// delivered MaxDeliveries times without an ack; empty, none.
	DeadLetter    string
	MaxDeliveries uint32
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
	// FrontLast is the last index of the first of several segments, the
	// next that compaction may drop (zero with one segment).
	FrontLast uint64
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
	// Resting is set on an owner whose queue is idle and that sends no
	// heartbeats (rest.go): once its grant has lapsed it is NoQuorum too,
	// yet serves the next request after one round trip to its quorum.
	Resting bool
	// Followers is what an owner or candidate knows of each other
	// replica's log, in replica-set order; nil on every other replica.
	Followers []FollowerView
}

// FollowerView is an owner's knowledge of one follower's log: Acked is
// the last index the follower reported durable and agreeing with the
// owner's log, the most it counts toward confirmation. The owner's
// LastIndex minus Acked is how far the follower is behind.
type FollowerView struct {
	Node  NodeID
	Acked uint64
}

// MetaView is this node's member of the metadata raft group: its role
// ("leader", "follower", "candidate", "pre-candidate", or "" before the
// group starts), the term, the leader it knows (zero: none), and the
// commit and applied indexes of its raft log.
type MetaView struct {
	Role            string
	Term            uint64
	Leader          NodeID
	Commit, Applied uint64
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
	// DeadLettering counts the messages that used up their delivery
	// limit and wait for their dead-letter queue to confirm it holds
	// them; they count in the backlog too.
	DeadLettering int
	// Consumers counts the subscriptions the owner serves; HeldBack how
	// many of them it holds back because their leases ran out with no
	// word from their consumers (quiet.go).
	Consumers, HeldBack int
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
			v.DedupWindow, v.DedupDefault = n.dedupWindowOf(name, q.Incarnation), q.DedupWindow == 0
			v.DeadLetter, v.MaxDeliveries = q.DeadLetter, q.MaxDeliveries
		}
	}
	r := n.queues[name]
	if r == nil {
		return v
	}
	if v.Incarnation == 0 {
		v.Incarnation = r.inc
	}
	v.HeldIncarnation = r.inc
	v.ReplicaEpoch, v.Suspect = r.epoch, r.suspect
	if r.log != nil {
		// A replica fenced while opening has no log to read.
		v.LastIndex, v.FirstIndex = r.log.LastIndex(), r.log.FirstIndex()
		v.RetainedBytes, v.Segments = r.log.RetainedBytes(), r.log.Segments()
		v.FrontLast, _ = r.log.FrontLastIndex()
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
		if r.own.outwaiting() {
			// It admits publishes, but serves its queue only once an
			// older owner's quorum has gone stale.
			v.Role = "candidate"
		}
		v.Depth, v.NoQuorum, v.Resting = r.own.depth(), r.own.cutOff(), r.own.resting
		v.Followers = r.own.followerViews()
	case roleCandidate:
		v.Role, v.Commit = "candidate", r.own.commit
		v.Followers = r.own.followerViews()
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

// Meta returns this node's view of the metadata raft group. Like every
// Node method it must be called on the node's goroutine.
func (n *Node) Meta() MetaView {
	if n.meta == nil || n.meta.rn == nil {
		return MetaView{}
	}
	st := n.meta.rn.BasicStatus()
	return MetaView{Role: metaRoleNames[st.RaftState], Term: st.HardState.GetTerm(), Leader: n.meta.leader,
		Commit: st.HardState.GetCommit(), Applied: st.Applied}
}

// metaRoleNames names raft's states for MetaView.
var metaRoleNames = map[raft.StateType]string{
	raft.StateFollower:     "follower",
	raft.StateCandidate:    "candidate",
	raft.StateLeader:       "leader",
	raft.StatePreCandidate: "pre-candidate",
}

// followerViews lists what the owner knows of each follower's log.
func (o *ownerState) followerViews() []FollowerView {
	out := make([]FollowerView, 0, len(o.followers))
	for _, p := range o.followers {
		out = append(out, FollowerView{Node: p.id, Acked: min(p.match, p.durable)})
	}
	return out
}

// depth counts the owner's unsettled messages. Every leased, delayed or
// just-acked message is unsettled and a message is only ever one of
// them, so what remains of the unsettled count is ready (or about to be
// confirmed and ready).
func (o *ownerState) depth() QueueDepth {
	d := QueueDepth{Known: true, Delayed: len(o.state.delayed)}
	for _, s := range o.subs {
		if !s.closed {
			d.Consumers++
		}
		d.Leased += len(s.leases)
		if s.quiet > 0 {
			d.HeldBack++
		}
	}
	settling := o.settlingCount()
	d.DeadLettering = o.state.dead
	d.Ready = len(o.state.messages) - d.Leased - d.Delayed - settling - d.DeadLettering
	if d.Ready < 0 {
		panic(fmt.Sprintf("node: queue %s has %d unsettled messages but %d leased, %d delayed, %d dead-lettering and %d being settled",
			o.r.name, len(o.state.messages), d.Leased, d.Delayed, d.DeadLettering, settling))
	}
	return d
}

// onQueueInfo answers a client with the queue's depth, as its serving
// owner counts it: the same counts /status and /metrics show.
func (n *Node) onQueueInfo(conn ConnID, m *wire.QueueInfo) {
	if n.parkWhileWaking(conn, m.Queue, m) {
		return
	}
	o := n.liveQueue(conn, m.ReqID, m.Queue)
	if o == nil {
		return
	}
	d := o.depth()
	n.env.Reply(conn, &wire.Reply{ReqID: m.ReqID, Status: wire.StatusOK, Depth: &wire.QueueDepth{
		Ready: uint32(d.Ready), Leased: uint32(d.Leased), Delayed: uint32(d.Delayed),
		DeadLettering: uint32(d.DeadLettering), Consumers: uint32(d.Consumers)}})
}
