package node

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// QueueState is where a queue is in its life, as the metadata records it.
type QueueState uint8

// Queue states.
const (
	QueuePreparing QueueState = 1 // replicas are preparing pristine storage
	QueueActive    QueueState = 2 // an exact quorum was prepared; the owner may serve
	QueueDeleted   QueueState = 3
	// QueueRecovering: the owner was lost; a candidate holds the next
	// epoch and is recovering the confirmed history. No one serves.
	QueueRecovering QueueState = 4
)

var queueStateNames = map[QueueState]string{QueuePreparing: "preparing", QueueActive: "active", QueueDeleted: "deleted", QueueRecovering: "recovering"}

// String names the state.
func (s QueueState) String() string { return queueStateNames[s] }

// QueueMeta is the metadata of one queue incarnation.
type QueueMeta struct {
	Name string
	// Incarnation, HistoryID and SessionID are drawn when the queue is
	// created. Replicas record them durably when they prepare, and refuse
	// to serve a queue whose identity does not match.
	Incarnation uint64
	HistoryID   uint64
	SessionID   uint64
	Policy      wire.Policy
	Replicas    []NodeID // the owner first
	Owner       NodeID
	// OwnerProcess is the process incarnation of the owner that holds the
	// current epoch: a restarted owner must take a new epoch.
	OwnerProcess uint64
	Epoch        uint64
	State        QueueState
	Prepared     []NodeID // replicas that reported prepared storage (sorted)
	Activated    []NodeID // the exact quorum activation used
	// CreatedBy is the proposal that created this incarnation, so a retried
	// proposal learns it succeeded.
	CreatedBy proposalID
	// Prior is set while a recovery that replaced replicas is pending: it
	// is the replica set before the replacement, whose confirmation
	// quorums hold the history. The candidate's seal evidence must come
	// from it; the replacement holds nothing yet. Activation clears it.
	Prior []NodeID
	// Lost lists replicas (sorted) whose storage was found damaged: they
	// are fenced for good, as if their node were down. An owner among them
	// is failed over (or, while the queue is still being created, gives
	// the ownership to another replica), and each is replaced as soon as
	// a node outside the set is available; a replaced one stays listed,
	// as a member of Prior, until the replacement activates.
	Lost []NodeID
	// CheckpointCut is the newest certified checkpoint cut: every replica
	// of the set checkpointed the same state there, and each may drop its
	// log before it.
	CheckpointCut uint64
	// DedupWindow is how long the queue remembers a published message
	// ID, chosen when it was created; zero (a queue created without one,
	// or before queues had one) means the owning node's default.
	DedupWindow time.Duration
	// DeadLetter names the queue a message moves to once it was
	// delivered MaxDeliveries times without an ack; empty, the queue has
	// no delivery limit. Both are chosen when the queue is created and
	// may be changed later (cmdSetDeadLetter).
	DeadLetter    string
	MaxDeliveries uint32
}

// Detection modes.
const (
	DetectHeartbeat uint8 = 1 // the metadata leader pings; silence beyond interval+grace, like a reset, is verified at once
	DetectEager     uint8 = 2 // plus: an idle connection is verified at once, zero grace
)

// DetectionPolicy configures failure detection; it is metadata, so every
// node uses the same one and a change is an ordinary command.
type DetectionPolicy struct {
	Mode     uint8
	Interval time.Duration
	Grace    time.Duration
}

// proposalID names one proposal: the proposing node and its sequence.
type proposalID struct {
	Node NodeID
	Seq  uint64
}

// metaState is the replicated metadata: applied in log order on every
// node, it reaches the same state everywhere.
type metaState struct {
	queues    map[string]*QueueMeta
	down      map[NodeID]bool // the liveness view: nodes confirmed down
	detection DetectionPolicy
	applied   uint64
	// members lists the cluster's nodes in ID order; lastMember is the
	// highest ID the cluster ever admitted, so no ID is used twice.
	members    []Member
	lastMember NodeID
	// rebalance is set while an operator's rebalance is under way.
	rebalance bool
	// names caches queues' keys in sorted order (nil: not built since
	// the last queue was added); several walks over every queue run
	// every few ticks, and sorting thousands of names each time showed
	// in an idle node's profile.
	names []string
}

func newMetaState(defaults DetectionPolicy) *metaState {
	return &metaState{queues: make(map[string]*QueueMeta), down: make(map[NodeID]bool), detection: defaults}
}

// queueNames returns queue names in sorted order. The slice is shared:
// callers must not change it.
func (s *metaState) queueNames() []string {
	if len(s.names) != len(s.queues) {
		s.names = slices.Sorted(maps.Keys(s.queues))
	}
	return s.names
}

// Command kinds.
const (
	cmdCreate       uint8 = 1
	cmdPrepared     uint8 = 2
	cmdActivate     uint8 = 3
	cmdBumpEpoch    uint8 = 4
	cmdDelete       uint8 = 5
	cmdSetDetection uint8 = 6
	cmdNodeDown     uint8 = 7
	cmdNodeUp       uint8 = 8
	// cmdStartRecovery hands a queue whose owner was lost to a candidate,
	// at the next epoch; cmdActivateRecovered admits the candidate once an
	// exact quorum has installed the recovered history.
	cmdStartRecovery     uint8 = 9
	cmdActivateRecovered uint8 = 10
	// cmdReplicaLost reports a replica fenced for damage.
	cmdReplicaLost uint8 = 11
	// cmdCertifyCheckpoint certifies a checkpoint cut every replica built
	// with the same state.
	cmdCertifyCheckpoint uint8 = 12
	// cmdSetDeadLetter sets, changes or removes a queue's dead-letter
	// queue and delivery limit.
	cmdSetDeadLetter uint8 = 13
	// cmdReplacePreparing swaps a replica of a queue still being created
	// for another node (see applyReplacePreparing).
	cmdReplacePreparing uint8 = 21
)

// command is one metadata change. Fields are used according to kind.
type command struct {
	kind    uint8
	from    proposalID
	queue   QueueMeta // create: the new queue's identity, policy and replicas
	name    string
	inc     uint64
	node    NodeID
	process uint64
	epoch   uint64
	members []NodeID
	policy  DetectionPolicy
	cut     uint64 // certify: the checkpoint cut
	// deadLetter and maxDeliveries are a set-dead-letter command's new
	// setting; both unset removes the limit.
	deadLetter    string
	maxDeliveries uint32
	// addr, clientAddr and httpAddr are an add-member's new node's peer,
	// client and HTTP addresses.
	addr, clientAddr, httpAddr string
}

// result is what applying a command did, for the proposer.
type result struct {
	ok     bool
	detail string
	// dropped says the proposal certainly never entered the log.
	dropped bool
	// replaced says a recovery activation completed a replacement.
	replaced bool
	// activated says the command activated a new queue: an explicit
	// activation, or the prepared report that completed its quorum.
	activated bool
	// refused says applying turned the command down for a reason the
	// requester should hear (detail): a setting that breaks a rule.
	refused bool
	// conf says a membership command changes the raft configuration.
	conf bool
}

// apply applies a committed command at index.
func (s *metaState) apply(index uint64, c command) result {
	if index <= s.applied {
		panic(fmt.Sprintf("node: metadata applies index %d after %d", index, s.applied))
	}
	s.applied = index
	switch c.kind {
	case cmdCreate:
		return s.applyCreate(c)
	case cmdPrepared:
		return s.applyPrepared(c)
	case cmdActivate:
		return s.applyActivate(c)
	case cmdBumpEpoch:
		return s.applyBumpEpoch(c)
	case cmdDelete:
		return s.applyDelete(c)
	case cmdSetDetection:
		s.detection = c.policy
		return result{ok: true}
	case cmdNodeDown:
		s.down[c.node] = true
		return result{ok: true}
	case cmdNodeUp:
		delete(s.down, c.node)
		return result{ok: true}
	case cmdStartRecovery:
		return s.applyStartRecovery(c)
	case cmdReplacePreparing:
		return s.applyReplacePreparing(c)
	case cmdActivateRecovered:
		return s.applyActivateRecovered(c)
	case cmdReplicaLost:
		return s.applyReplicaLost(c)
	case cmdCertifyCheckpoint:
		return s.applyCertifyCheckpoint(c)
	case cmdSetDeadLetter:
		return s.applySetDeadLetter(c)
	case cmdAddMember, cmdPromote, cmdDemote, cmdLeave, cmdRemoveMember:
		return s.applyMembership(c)
	case cmdRebalance, cmdRebalanced:
		s.rebalance = c.kind == cmdRebalance
		return result{ok: true}
	}
	panic(fmt.Sprintf("node: applying unknown metadata command %d", c.kind))
}

func (s *metaState) applyCreate(c command) result {
	if q, ok := s.queues[c.queue.Name]; ok && q.State != QueueDeleted {
		if q.CreatedBy == c.from {
			return result{ok: true} // a retry of the proposal that created it
		}
		return result{detail: "exists"}
	}
	if _, ok := s.queues[c.queue.Name]; !ok && len(s.queues) >= maxMetaQueues {
		return result{detail: fmt.Sprintf("the cluster keeps %d queue names (deleted ones included), its limit: "+
			"delete queues or reuse deleted queues' names", len(s.queues)), refused: true}
	}
	if why := s.unplaceable(c.queue.Replicas, nil); why != "" {
		return result{detail: why, refused: true}
	}
	q := c.queue
	q.Replicas = slices.Clone(q.Replicas)
	q.Owner, q.State, q.Epoch, q.CreatedBy = q.Replicas[0], QueuePreparing, 0, c.from
	q.Prepared, q.Activated = nil, nil
	s.queues[q.Name] = &q
	s.names = nil
	return result{ok: true}
}

// lookup finds the queue incarnation a command names.
func (s *metaState) lookup(name string, inc uint64) *QueueMeta {
	if q, ok := s.queues[name]; ok && q.Incarnation == inc {
		return q
	}
	return nil
}

func (s *metaState) applyPrepared(c command) result {
	q := s.lookup(c.name, c.inc)
	if q == nil || q.State != QueuePreparing || !slices.Contains(q.Replicas, c.node) {
		return result{detail: "not preparing"}
	}
	if containsSorted(q.Lost, c.node) {
		// A report sent before the damage was found may commit after the
		// loss: the storage it vouched for is gone, so it must not count.
		return result{detail: "replica is damaged"}
	}
	if i, found := slices.BinarySearch(q.Prepared, c.node); !found {
		q.Prepared = slices.Insert(q.Prepared, i, c.node)
	}
	if c.node == q.Owner && c.process != 0 {
		q.OwnerProcess = c.process
	}
	return result{ok: true, activated: s.activatePrepared(q)}
}

// firstEpoch is the epoch every new queue is activated in.
const firstEpoch = 1

// activatePrepared activates a preparing queue as soon as an exact quorum
// with the owner has prepared, in the same command that completed it: a
// separate activation would cost every create one more metadata round.
// The owner's own report carries its process, which takes epoch 1; a
// report without one (never sent today) leaves activation to the owner.
func (s *metaState) activatePrepared(q *QueueMeta) bool {
	members, ok := exactQuorum(q)
	if !ok || q.OwnerProcess == 0 {
		return false
	}
	q.State, q.Activated, q.Epoch = QueueActive, members, firstEpoch
	return true
}

// applyActivate admits an exact quorum of prepared replicas, the owner
// among them, and gives the owner epoch 1.
func (s *metaState) applyActivate(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || q.State != QueuePreparing:
		return result{detail: "not preparing"}
	case len(c.members) != quorum(q.Policy, len(q.Replicas)) || !slices.Contains(c.members, q.Owner):
		return result{detail: "not an exact quorum with the owner"}
	}
	for _, m := range c.members {
		if _, found := slices.BinarySearch(q.Prepared, m); !found {
			return result{detail: fmt.Sprintf("%s has not prepared", m)}
		}
		if containsSorted(q.Lost, m) {
			// Losing a replica drops its prepared report, so this is a
			// second line: damaged storage never joins the first quorum.
			return result{detail: fmt.Sprintf("%s is damaged", m)}
		}
	}
	q.State, q.Activated = QueueActive, slices.Clone(c.members)
	q.Epoch, q.OwnerProcess = firstEpoch, c.process
	return result{ok: true, activated: true}
}

// applyBumpEpoch gives the owner's new process the next epoch. It names
// the epoch it expects to replace, so a retried proposal cannot bump twice.
// A recovery candidate's first claim takes the plan's epoch as it is: no
// process has written in it yet. A restarted owner of an active queue gets
// its epoch as the candidate of a recovery: it proves what it holds against
// the other replicas before serving again.
func (s *metaState) applyBumpEpoch(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || (q.State != QueueActive && q.State != QueueRecovering):
		return result{detail: "not active"}
	case c.node != q.Owner:
		return result{detail: "not the owner"}
	case q.OwnerProcess == c.process:
		return result{ok: true} // already bumped for this process
	case q.Epoch != c.epoch:
		return result{detail: fmt.Sprintf("epoch is %d, not %d", q.Epoch, c.epoch)}
	case q.OwnerProcess == 0:
		q.OwnerProcess = c.process
		return result{ok: true}
	}
	q.Epoch++
	q.OwnerProcess = c.process
	if q.State == QueueActive && q.Policy != wire.PolicyOwnerOnly && !bugs.Active(bugs.RestartOwnerTrustsOwnLog) {
		// The owner's new process may hold less than its old one made
		// durable (a disk can lose synced writes), so it claims the queue
		// as any candidate does: seal the replicas, select the most
		// complete history, install it and activate on a quorum. An
		// owner-only queue's history is by definition what its owner's
		// disk holds; there is nothing to prove it against.
		q.State, q.Activated = QueueRecovering, nil
	}
	return result{ok: true}
}

// applyStartRecovery replaces a lost owner with a candidate at the next
// epoch. Naming the epoch it replaces makes it a compare-and-swap: two
// leaders' plans for the same loss cannot both apply. A plan with members
// also changes the replica set (a replica gone for good is replaced by a
// node outside the set); the old set becomes Prior until activation.
func (s *metaState) applyStartRecovery(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || (q.State != QueueActive && q.State != QueueRecovering):
		return result{detail: "not active"}
	case q.Epoch != c.epoch:
		return result{detail: fmt.Sprintf("epoch is %d, not %d", q.Epoch, c.epoch)}
	case !slices.Contains(q.Replicas, c.node) && !swapsBack(q, c):
		return result{detail: "candidate is not a replica"}
	case len(q.Prior) > 0 && !slices.Contains(q.Prior, c.node):
		return result{detail: "candidate holds no prior history"}
	case slices.Contains(q.Lost, c.node):
		return result{detail: "candidate's replica is damaged"}
	}
	if len(c.members) > 0 && !slices.Equal(c.members, q.Replicas) {
		if why := checkReplacement(q, c, s.down); why != "" {
			return result{detail: why}
		}
		if why := s.unplaceable(c.members, q.Replicas); why != "" {
			return result{detail: why}
		}
		// A replacement stacked on a pending one (it swaps out a damaged
		// replica of the pending set) keeps the prior set: nothing
		// activated in the pending set, so the prior set's quorums still
		// hold every confirmed record, and the seal must still ask them.
		if len(q.Prior) == 0 {
			q.Prior = q.Replicas
		}
		q.Replicas = slices.Clone(c.members)
		// A lost replica being replaced stays listed until activation:
		// the recovery's seal evidence still comes from the old set, and
		// knowing which of its members lied tells it whom to believe.
		q.Lost = slices.DeleteFunc(q.Lost, func(id NodeID) bool {
			return !slices.Contains(q.Replicas, id) && !slices.Contains(q.Prior, id)
		})
	}
	// A plan may name the candidate's process (a handoff learns it from
	// the target's checkpoint receipt): that process writes in the new
	// epoch without claiming it. Zero leaves the epoch to the first of
	// the candidate's processes that claims it.
	q.State, q.Owner, q.OwnerProcess = QueueRecovering, c.node, c.process
	q.Epoch++
	q.Activated = nil
	return result{ok: true}
}

// applyReplacePreparing gives a queue that is still being created the
// replica set members: one replica, down for long, swapped for a live
// node. Nothing is written in any epoch before a queue activates, so no
// history can be lost; what the dropped replica prepared it drops, what
// the others prepared stands, and the new member prepares. Without it a
// policy-all queue, whose creation needs every replica, or a queue whose
// first owner died, would wait for the dead node for good.
func (s *metaState) applyReplacePreparing(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || q.State != QueuePreparing:
		return result{detail: "not preparing"}
	case len(c.members) != len(q.Replicas):
		return result{detail: fmt.Sprintf("replica set of %d, not %d", len(c.members), len(q.Replicas))}
	}
	if why := namedTwice(c.members); why != "" {
		return result{detail: why}
	}
	if why := s.unplaceable(c.members, q.Replicas); why != "" {
		return result{detail: why}
	}
	q.Replicas = slices.Clone(c.members)
	q.Prepared = slices.DeleteFunc(q.Prepared, func(id NodeID) bool { return !slices.Contains(q.Replicas, id) })
	q.Lost = slices.DeleteFunc(q.Lost, func(id NodeID) bool { return !slices.Contains(q.Replicas, id) })
	// The leader drew the new set from its view, which may predate a loss
	// that moved the ownership away from the first replica.
	s.placePreparingOwner(q)
	return result{ok: true, replaced: true, activated: s.activatePrepared(q)}
}

// placePreparingOwner makes the first replica of a queue still being
// created its owner, first moving to the front, if the first one is
// lost, the replica best placed to activate the queue: one that is not
// lost, prepared and up if there is one, else prepared, else any. Nothing
// is written in any epoch before a queue activates, so ownership may move
// freely; without this a queue whose owner-designate's storage was damaged
// while it was made, with no node outside the set to replace it, would
// wait for that replica for good. The lost replica stays in the set, is
// never counted as prepared, and is replaced through the path of an active
// queue once a node becomes available. If every replica is lost the owner
// stays: no one else could activate the queue either.
func (s *metaState) placePreparingOwner(q *QueueMeta) {
	if containsSorted(q.Lost, q.Replicas[0]) {
		best, bestRank := -1, 3
		for i, id := range q.Replicas {
			if containsSorted(q.Lost, id) {
				continue
			}
			rank := 2
			switch {
			case containsSorted(q.Prepared, id) && !s.down[id]:
				rank = 0
			case containsSorted(q.Prepared, id):
				rank = 1
			}
			if rank < bestRank {
				best, bestRank = i, rank
			}
		}
		if best > 0 {
			q.Replicas = slices.Clone(q.Replicas) // never reorder a slice someone else holds
			q.Replicas[0], q.Replicas[best] = q.Replicas[best], q.Replicas[0]
		}
	}
	if q.Owner != q.Replicas[0] {
		// The new owner's process is unknown until it reports or asks to
		// activate; the old owner's process must not take epoch 1.
		q.Owner, q.OwnerProcess = q.Replicas[0], 0
	}
}

// applyActivateRecovered admits a recovered owner: its process holds the
// epoch, and an exact quorum including it installed the history.
func (s *metaState) applyActivateRecovered(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || q.State != QueueRecovering:
		return result{detail: "not recovering"}
	case q.Epoch != c.epoch || q.OwnerProcess != c.process || q.Owner != c.node:
		return result{detail: "stale plan"}
	case len(c.members) != quorum(q.Policy, len(q.Replicas)) || !slices.Contains(c.members, q.Owner):
		return result{detail: "not an exact quorum with the owner"}
	}
	for _, m := range c.members {
		if !slices.Contains(q.Replicas, m) {
			return result{detail: fmt.Sprintf("%s is not a replica", m)}
		}
	}
	replaced := len(q.Prior) > 0
	q.State, q.Activated, q.Prior = QueueActive, slices.Clone(c.members), nil
	q.Lost = slices.DeleteFunc(q.Lost, func(id NodeID) bool { return !slices.Contains(q.Replicas, id) })
	return result{ok: true, replaced: replaced}
}

// applyReplicaLost records that a replica found its storage damaged: a
// member of the set, or of the set a replacement is taking over from,
// whose seal still asks it.
func (s *metaState) applyReplicaLost(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || q.State == QueueDeleted:
		return result{detail: "no such queue"}
	case !slices.Contains(q.Replicas, c.node) && !slices.Contains(q.Prior, c.node):
		return result{detail: "not a replica"}
	}
	if i, found := slices.BinarySearch(q.Lost, c.node); !found {
		q.Lost = slices.Insert(q.Lost, i, c.node)
	}
	if q.State == QueuePreparing {
		// A queue still being created holds no history, so a lost replica
		// simply stops counting as prepared, and a lost owner-designate
		// hands the creation to a replica that can finish it.
		q.Prepared = slices.DeleteFunc(q.Prepared, func(id NodeID) bool { return id == c.node })
		s.placePreparingOwner(q)
	}
	return result{ok: true}
}

func (s *metaState) applyDelete(c command) result {
	q := s.lookup(c.name, c.inc)
	if q == nil || q.State == QueueDeleted {
		return result{detail: "no such queue"}
	}
	q.State = QueueDeleted
	return result{ok: true}
}

// certifiesSet reports whether a certificate naming members speaks for
// q's replica set: it names every replica, or every replica not lost.
// Logs written before owners left lost replicas out hold the first kind,
// and must apply as they did.
func certifiesSet(q *QueueMeta, members []NodeID) bool {
	named := slices.Sorted(slices.Values(members))
	return slices.Equal(named, slices.Sorted(slices.Values(q.Replicas))) ||
		slices.Equal(named, slices.Sorted(slices.Values(certifyMembers(q.Replicas, q))))
}

// applyCertifyCheckpoint certifies a cut proposed by the owner of the
// current epoch for exactly the current replica set (its lost replicas
// may be left out, see certifiesSet). A cut from an older epoch or
// another set may be fine, but proves nothing about the replicas now, so
// it is refused; cuts only move forward.
func (s *metaState) applyCertifyCheckpoint(c command) result {
	q := s.lookup(c.name, c.inc)
	switch {
	case q == nil || q.State != QueueActive:
		return result{detail: "not active"}
	case q.Epoch != c.epoch || q.Owner != c.node:
		return result{detail: fmt.Sprintf("epoch %d of %s, not %d of %s", q.Epoch, q.Owner, c.epoch, c.node)}
	case !certifiesSet(q, c.members):
		return result{detail: "the replica set, or which of its replicas are lost, changed"}
	case c.cut <= q.CheckpointCut:
		return result{ok: true} // a retry, or an older cut
	}
	q.CheckpointCut = c.cut
	return result{ok: true}
}
