// Package status defines the document a cairn node serves at /status,
// and fetches it. Tools (the cairn CLI, tests) decode it with these types
// without linking the server.
package status

import (
	"context"
	"time"
)

// Node is one node's view of itself.
type Node struct {
	// ID is the node's ID.
	ID uint32 `json:"id"`
	// Started is set once the node has opened every replica on its disk.
	Started bool `json:"started"`
	// Draining is set while the node shuts down.
	Draining bool `json:"draining"`
	// LeaderTerm is the last metadata term in which this node became the
	// metadata leader; zero if it never did in this process. The node
	// with the highest LeaderTerm is the current leader, unless an
	// election is under way.
	LeaderTerm uint64 `json:"leader_term,omitempty"`
	// MetaLeader is the metadata leader this node knows of (zero while it
	// knows none), and MetaTerm the term it knows.
	MetaLeader uint32 `json:"meta_leader"`
	MetaTerm   uint64 `json:"meta_term"`
	// MetaRole is this node's raft role in the metadata group ("leader",
	// "follower", "candidate", "pre-candidate"; "" before the group
	// starts), and MetaCommit and MetaApplied the commit and applied
	// indexes of its metadata log.
	MetaRole    string `json:"meta_role,omitempty"`
	MetaCommit  uint64 `json:"meta_commit,omitempty"`
	MetaApplied uint64 `json:"meta_applied,omitempty"`
	// Clients is the number of open client connections.
	Clients int `json:"clients"`
	// Peers lists the other nodes and whether a connection to each is up.
	Peers []Peer `json:"peers"`
	// Queues lists the queue replicas this node holds, by name.
	Queues []Queue `json:"queues"`
	// Host is what the node's machine has to spare, where the node can
	// tell cheaply; absent from older nodes.
	Host *Host `json:"host,omitempty"`
	// Recoveries lists the latest owner-recovery attempts this node ran,
	// a few per queue, each as its stages; Marks the latest detector
	// verdicts, elections and plans it saw. Both are bounded rings kept
	// in memory, so they start empty when the process does.
	Recoveries []Recovery `json:"recoveries,omitempty"`
	Marks      []Mark     `json:"marks,omitempty"`
}

// Host is what a node's machine has to spare. A field is nil when the
// node cannot tell it on its platform.
type Host struct {
	// Load1 is the one-minute load average.
	Load1 *float64 `json:"load1,omitempty"`
	// DiskFreeBytes and DiskTotalBytes describe the file system holding
	// the data directory; free counts what an unprivileged writer may use.
	DiskFreeBytes  *int64 `json:"disk_free_bytes,omitempty"`
	DiskTotalBytes *int64 `json:"disk_total_bytes,omitempty"`
}

// Recovery is one attempt a node made to recover a queue's ownership
// into an epoch, timed on that node's clock.
type Recovery struct {
	Queue   string `json:"queue"`
	Epoch   uint64 `json:"epoch"`
	Attempt int    `json:"attempt"`
	// Node is the node that ran the attempt (the epoch's candidate).
	Node uint32 `json:"node"`
	// Start is when the attempt began; End when it ended, zero while it
	// runs.
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Outcome is how the attempt ended: "ok", "retry" (the node began
	// again in the same epoch), "abandoned", "stale", "fenced",
	// "retired", or "" while it runs. Why says more, when known.
	Outcome string `json:"outcome"`
	Why     string `json:"why,omitempty"`
	// Stages lists the stages that ended, in order.
	Stages []Stage `json:"stages"`
	// Lead lists, for the first attempt into an epoch in a cluster view,
	// the stages before it as the marks show them: observation (the
	// first suspicion of the old owner to its confirmation), plan (to the
	// leader's plan) and dispatch (to the attempt's start). They are
	// measured across the clocks of the nodes that saw each moment.
	Lead []Stage `json:"lead,omitempty"`
	// RPCs, Bytes and Syncs are what a completed attempt reports:
	// requests sent, payload bytes copied, group commits of its log.
	RPCs  int    `json:"rpcs,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
	Syncs uint64 `json:"syncs,omitempty"`
}

// Stage is one stage of a recovery attempt: its name (seal, fetch,
// install, ...), how it ended ("ok" or "retry"), when it began and how
// long it ran.
type Stage struct {
	Name        string    `json:"name"`
	Outcome     string    `json:"outcome"`
	Start       time.Time `json:"start"`
	TookSeconds float64   `json:"took_seconds"`
}

// The kinds of Mark.
const (
	MarkSuspect   = "suspect"   // Node fell silent, as this node's detector sees it
	MarkConfirm   = "confirm"   // the detector confirmed Node down
	MarkRecovered = "recovered" // Node was heard from again
	MarkLeader    = "leader"    // Node became metadata leader in Term
	MarkCampaign  = "campaign"  // this node started an election for Term
	MarkPlan      = "plan"      // the leader planned Queue's move to Node in Epoch
	MarkReplace   = "replace"   // the leader planned a new replica of Queue on Node
)

// Mark is one moment on a node's timeline: what its failure detector
// concluded, an election, a plan the metadata leader made.
type Mark struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// By is the node that saw it; Node the node it is about. From is,
	// for a plan, the owner it moves the queue from, or the replica it
	// replaces.
	By   uint32 `json:"by"`
	Node uint32 `json:"node,omitempty"`
	From uint32 `json:"from,omitempty"`
	// Term is an election's metadata term; Queue and Epoch a plan's.
	Term  uint64 `json:"term,omitempty"`
	Queue string `json:"queue,omitempty"`
	Epoch uint64 `json:"epoch,omitempty"`
}

// Peer is another node as this one sees it.
type Peer struct {
	ID        uint32 `json:"id"`
	Addr      string `json:"addr"`
	HTTPAddr  string `json:"http_addr,omitempty"`
	Connected bool   `json:"connected"`
}

// Queue is one queue as this node sees it: the metadata it has applied
// and the part its own replica plays. Fields about the queue as a whole
// (its state, owner, epoch, replica set) are what the cluster's metadata
// says; the others are about this node's replica. The JSON names keep
// the two apart: "queue_state" is the queue's, "role" and "serving" are
// this node's, so a follower reads "queue_state":"active" next to
// "serving":false, which says the queue is up and served elsewhere.
type Queue struct {
	Name string `json:"name"`
	// State is the queue's state in the metadata: "preparing", "active",
	// "recovering", or "unknown" for a replica the applied metadata does
	// not name yet. It is the same on every node that has applied the
	// same metadata, whatever part the node plays.
	State string `json:"queue_state"`
	// Role is this node's part: "owner" (serving), "candidate"
	// (recovering or activating the epoch the metadata gave it), "stale"
	// (an owner a newer epoch fenced), "follower", or "none" (the
	// metadata names the queue but this node holds no replica).
	Role string `json:"role"`
	// Owner and Epoch are the owner and epoch the metadata names;
	// Replicas the replica set, placement owner first.
	Owner    uint32   `json:"owner"`
	Epoch    uint64   `json:"epoch"`
	Replicas []uint32 `json:"replicas"`
	// DedupWindowSeconds is how long the queue remembers a published
	// message ID: a publish retried later is a new message. It is the
	// window the queue was created with or, when DedupDefault is set,
	// this node's default (zero while the metadata does not name the
	// queue).
	DedupWindowSeconds float64 `json:"dedup_window_seconds"`
	DedupDefault       bool    `json:"dedup_window_default,omitempty"`
	// DeadLetter names the queue a message moves to once it was
	// delivered MaxDeliveries times without an ack; empty, the queue has
	// no delivery limit.
	DeadLetter    string `json:"dead_letter,omitempty"`
	MaxDeliveries uint32 `json:"max_deliveries,omitempty"`
	// ReplicaEpoch is the local replica's epoch: the owner's own, or the
	// highest a follower has seen.
	ReplicaEpoch uint64 `json:"replica_epoch"`
	// LastIndex is the local replica's last log index.
	LastIndex uint64 `json:"last_index"`
	// Commit is the owner's confirmed index (owners only).
	Commit uint64 `json:"commit,omitempty"`
	// Active is set when this node serves the queue's clients: it is the
	// owner and has activated its epoch (Role is "owner"). It is false on
	// every other replica, even while the queue is active.
	Active bool `json:"serving"`
	// NoQuorum is set on an owner that has heard from no quorum of its
	// replicas for as long as its peers wait before replacing it: it
	// refuses clients until it hears from one again, and Active is false.
	NoQuorum bool `json:"no_quorum,omitempty"`
	// Resting is set on an owner whose queue is idle: it sends its
	// replicas no heartbeats, and serves the next request after one round
	// trip to them. Active stays set.
	Resting bool `json:"resting,omitempty"`
	// Fenced says why a damaged replica takes no part, if it does not.
	Fenced string `json:"fenced,omitempty"`
	// Suspect is set while this replica, reopened from a disk an earlier
	// process wrote, has not yet been verified by an owner: until then a
	// recovery counts it as a weaker witness.
	Suspect bool `json:"suspect,omitempty"`
	// FirstIndex is the first record the local log retains; RetainedBytes
	// and Segments are what the log keeps on disk.
	FirstIndex    uint64 `json:"first_index"`
	RetainedBytes int64  `json:"retained_bytes"`
	Segments      int    `json:"segments"`
	// CheckpointIndex is the cut of the local replica's newest checkpoint
	// and CheckpointBytes its size; CertifiedIndex the newest cut the
	// metadata certified, below which replicas drop their logs.
	CheckpointIndex uint64 `json:"checkpoint_index"`
	CheckpointBytes int    `json:"checkpoint_bytes"`
	CertifiedIndex  uint64 `json:"certified_index"`
	// CheckpointAgeSeconds is how long ago the local replica made its
	// checkpoint (0: none, or made before ages were recorded).
	CheckpointAgeSeconds float64 `json:"checkpoint_age_seconds"`
	// Depth is the queue's backlog; only the serving owner reports it.
	Depth *Depth `json:"depth,omitempty"`
	// Traffic counts the queue's requests this node handled since it
	// started; a reader derives rates from two readings.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Followers is, on an owner or candidate, the last index each other
	// replica acknowledged durable; LastIndex minus it is the replica's
	// lag. Absent on other replicas.
	Followers []Follower `json:"followers,omitempty"`
}

// Follower is what a queue's owner knows of one other replica's log.
type Follower struct {
	Node  uint32 `json:"node"`
	Acked uint64 `json:"acked"`
}

// Lag is how many records of the owner's log the follower has not
// acknowledged; zero if it reports more than the owner holds.
func (f Follower) Lag(ownerLast uint64) uint64 { return ownerLast - min(f.Acked, ownerLast) }

// Traffic counts what one node handled for one queue since its process
// started: publish requests handed to the node, deliveries it sent, and
// acks and nacks it received. Counters only grow while the process
// lives; a smaller reading means the node restarted.
type Traffic struct {
	Published uint64 `json:"published"`
	Delivered uint64 `json:"delivered"`
	Acked     uint64 `json:"acked"`
	Nacked    uint64 `json:"nacked"`
}

// Depth counts a queue's unsettled messages by where they stand: Ready
// ones wait for a subscriber, Leased ones are out under a lease, Delayed
// ones wait for their delay, DeadLettering ones used up their delivery
// limit and are moving to the dead-letter queue. Consumers counts the
// owner's subscriptions, HeldBack those it holds back because their
// leases ran out with no word from their consumers.
type Depth struct {
	Ready         int `json:"ready"`
	Leased        int `json:"leased"`
	Delayed       int `json:"delayed"`
	DeadLettering int `json:"dead_lettering,omitempty"`
	Consumers     int `json:"consumers"`
	HeldBack      int `json:"consumers_held_back,omitempty"`
}

// Backlog is every unsettled message, whatever it waits for.
func (d Depth) Backlog() int { return d.Ready + d.Leased + d.Delayed + d.DeadLettering }

// Fetch reads the status document from a node's HTTP address (host:port)
// without a credential: enough for a node whose HTTP port leaves /status
// open; FetchAuth presents one.
func Fetch(ctx context.Context, httpAddr string) (*Node, error) {
	return FetchAuth(ctx, httpAddr, Auth{})
}
