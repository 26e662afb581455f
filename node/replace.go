package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// planFailovers runs on the metadata leader. Every queue whose owner the
// liveness view holds down, or whose storage was found damaged, gets a
// recovery plan with the first live replica as candidate; a queue whose
// candidate is down gets a new plan. A replica that has stayed down for
// Config.ReplaceAfter, or is damaged, is replaced by a live node outside
// the set, through a recovery at the next epoch (led by the current owner
// when it is alive), so the queue regains redundancy. An owner-only
// queue is never failed over: its confirmed history lives only on the
// owner's storage, so only the owner can bring it back. A replica of it
// that is up and sound (a leaving member's) is replaced all the same
// while its owner is alive and active, the owner leading the recovery: a
// member that leaves holding one would otherwise stay leaving for good
// (41 of seeds 1-500, once the checker leave-completes asked).
func (n *Node) planFailovers() { n.planFailoversFor(0) }

// planFailoversFor plans as planFailovers does, counting confirmed (if
// not zero) as down already: its node-down entry is proposed but not yet
// applied.
func (n *Node) planFailoversFor(confirmed NodeID) {
	s := n.meta.state
	isDown := func(id NodeID) bool { return s.down[id] || (id != 0 && id == confirmed) }
	if !n.meta.isLeader() {
		n.meta.downSince, n.meta.planned = nil, nil
		return
	}
	n.noteDownSince()
	n.manageMembership()
	defer n.rebalanceStep()
	load, pace, now := n.replicaLoad(), n.newRecoveryPace(), n.env.Monotonic()
	for _, name := range s.queueNames() {
		q := s.queues[name]
		if q.State == QueuePreparing {
			n.replacePreparing(q, load)
			continue
		}
		if q.State != QueueActive && q.State != QueueRecovering {
			continue
		}
		ownerDown := isDown(q.Owner) || containsSorted(q.Lost, q.Owner)
		if q.Policy == wire.PolicyOwnerOnly && (ownerDown || q.State != QueueActive || bugs.Active(bugs.OwnerOnlyReplicasStay)) {
			continue // planted (the last condition): as before 021c9d3
		}
		replicas, out, in := n.replacementSet(q, load)
		if q.Policy == wire.PolicyOwnerOnly && (replicas == nil || isDown(out) || containsSorted(q.Lost, out)) {
			// Its seal needs every replica of the prior set, the one
			// swapped out included (ownerSealsWithOutgoing): a replica
			// down or damaged stays until it is back.
			continue
		}
		if !ownerDown && replicas == nil {
			// The owner is alive, serving or recovering, and no replica
			// needs replacing. A live candidate's recovery may still be
			// superseded by a replacement: one that needs every replica
			// (the all policy, or a restarted owner's seal) could
			// otherwise wait forever for a replica that is gone.
			continue
		}
		cand, ok := n.recoveryCandidate(q, ownerDown, out, isDown)
		if !ok {
			if replicas, out, in = n.swapBackSet(q, isDown); replicas != nil {
				cand, ok = in, true
			}
		}
		if !ok || !pace.admit(q, cand, now) {
			continue
		}
		if replicas != nil {
			n.emit(event.NewMetaPlanReplace(name, uint32(out), uint32(in), q.Epoch+1))
		}
		n.emit(event.NewMetaPlanRecovery(name, uint32(q.Owner), uint32(cand), q.Epoch+1))
		n.proposeLife(name, command{kind: cmdStartRecovery, name: name, inc: q.Incarnation, epoch: q.Epoch, node: cand, members: replicas})
	}
}

// replacePreparing swaps a replica of a queue still being created that
// has been down for Config.ReplaceAfter (or is leaving, or damaged) for a
// live node outside the set, as a replacement does for a serving queue.
// An owner-only queue is replaced too: it holds no history yet.
func (n *Node) replacePreparing(q *QueueMeta, load *replicaLoads) {
	replicas, out, in := n.replacementSet(q, load)
	if replicas == nil {
		return
	}
	n.emit(event.NewMetaPlanReplace(q.Name, uint32(out), uint32(in), q.Epoch))
	n.proposeLife(q.Name, command{kind: cmdReplacePreparing, name: q.Name, inc: q.Incarnation, members: replicas})
}

// noteDownSince keeps, on the leader, the moment each node was first seen
// confirmed down. The moment is read from the monotonic clock, not
// counted in metadata ticks: ticks stop while the process is stopped, so
// a leader paused for a second would wait a second longer than
// ReplaceAfter to replace a member its metadata held down all along,
// though the member was down for all of it.
func (n *Node) noteDownSince() {
	m := n.meta
	if m.downSince == nil {
		m.downSince = make(map[NodeID]time.Duration)
	}
	for _, id := range n.clusterNodes() {
		_, seen := m.downSince[id]
		switch {
		case !m.state.down[id]:
			delete(m.downSince, id)
		case !seen || bugs.Active(bugs.ReplaceNeverDue):
			// Planted (the second condition): the count starts over at
			// every pass.
			m.downSince[id] = n.env.Monotonic()
		}
	}
}

// replicaLoads counts, per node, the replicas the metadata places on
// it. The count is taken when first asked for: most passes over the
// queues replace nothing, and counting walks every queue (with 10,000
// queues, about 3% of an idle node's time).
type replicaLoads struct {
	n      *Node
	counts map[NodeID]int
}

// replicaLoad returns the replica counts of this moment's metadata.
func (n *Node) replicaLoad() *replicaLoads { return &replicaLoads{n: n} }

// get returns the counts, counting them the first time.
func (l *replicaLoads) get() map[NodeID]int {
	if l.counts != nil {
		return l.counts
	}
	l.counts = make(map[NodeID]int)
	s := l.n.meta.state
	for _, name := range s.queueNames() {
		if q := s.queues[name]; q.State != QueueDeleted {
			for _, id := range q.Replicas {
				l.counts[id]++
			}
		}
	}
	return l.counts
}

// downForReplaceAfter reports, on the leader, whether id has been
// confirmed down for Config.ReplaceAfter: its replicas are replaced, and
// a voter's seat goes to a learner. A negative ReplaceAfter disables both.
func (n *Node) downForReplaceAfter(id NodeID) bool {
	since, seen := n.meta.downSince[id]
	return n.cfg.ReplaceAfter >= 0 && seen && n.env.Monotonic()-since >= n.cfg.ReplaceAfter
}

// replacementSet returns q's replica set with one replica that is damaged
// or has been down for Config.ReplaceAfter swapped for the live node
// outside the set that holds the fewest replicas (lowest ID on a tie), or
// nil if there is nothing to replace or no one to replace it with. load
// counts the choice, so one round of plans spreads a dead node's queues
// over the spares instead of piling them on one. One replacement at a
// time per queue: a pending one must activate first, unless its new set
// holds a damaged replica or one down for Config.ReplaceAfter. A set that
// needs every replica (the all policy) could not activate without it, and
// the pending replacement would wait for it forever, or for as long as
// the node stays down (seed 120751 of the long sweep: a leaving member's
// replacement waited 4.8 s for a member down since before it was planned,
// with two nodes free to take its place). A stacked swap must keep a seal
// quorum of the prior set in the new one (keepsPriorSealQuorum): a
// majority queue waits for its down prior member instead, as its
// recovery's seal does anyway.
func (n *Node) replacementSet(q *QueueMeta, loads *replicaLoads) (replicas []NodeID, out, in NodeID) {
	m := n.meta
	pending := len(q.Prior) > 0
	for _, id := range q.Replicas {
		// A leaving replica goes at once, but an owner that is leaving
		// and alive hands its queue away first: it cannot lead its own
		// replacement.
		leaving := n.isLeaving(id) && (id != q.Owner || m.state.down[id])
		lost := n.cfg.ReplaceAfter >= 0 && containsSorted(q.Lost, id)
		due := lost || n.downForReplaceAfter(id) || !pending && leaving
		if due && keepsPriorSealQuorum(q, slices.DeleteFunc(slices.Clone(q.Replicas), func(x NodeID) bool { return x == id })) {
			out = id
			break
		}
	}
	if out == 0 {
		return nil, 0, 0
	}
	load := loads.get()
	for _, id := range n.placement().Nodes {
		// A damaged replica of the prior set is outside the new set, but
		// it is no place for the queue.
		if !slices.Contains(q.Replicas, id) && !m.state.down[id] && !containsSorted(q.Lost, id) && (in == 0 || load[id] < load[in]) {
			in = id
		}
	}
	if in == 0 {
		return nil, 0, 0
	}
	load[in]++
	replicas = slices.Clone(q.Replicas)
	replicas[slices.Index(replicas, out)] = in
	return replicas, out, in
}

// swapBackSet returns, for a pending replacement that no member of both
// sets can lead (each is damaged or has been down for
// Config.ReplaceAfter), its new set with one of them swapped for a live,
// sound and placeable member of the prior set outside it, which leads
// the recovery: it holds the prior history, as a candidate must, and the
// seal still asks the prior set. Nil if there is no such swap. Under the
// all policy a stacked plan may keep a single prior member (its seal
// needs one witness); once that member is lost, no one else could lead,
// and the queue would wait for good though prior members that hold every
// confirmed record are up outside the set.
func (n *Node) swapBackSet(q *QueueMeta, isDown func(NodeID) bool) (replicas []NodeID, out, back NodeID) {
	if len(q.Prior) == 0 || bugs.Active(bugs.StackDropsPriorQuorum) || bugs.Active(bugs.PriorNeverSwappedBack) {
		return nil, 0, 0 // planted (the last two conditions)
	}
	placeable := n.placement().Nodes
	for _, id := range q.Prior {
		if !slices.Contains(q.Replicas, id) && !isDown(id) && !containsSorted(q.Lost, id) && slices.Contains(placeable, id) {
			back = id
			break
		}
	}
	for _, id := range q.Replicas {
		if slices.Contains(q.Prior, id) && (containsSorted(q.Lost, id) || n.downForReplaceAfter(id)) {
			out = id
			break
		}
	}
	if back == 0 || out == 0 {
		return nil, 0, 0
	}
	replicas = slices.Clone(q.Replicas)
	replicas[slices.Index(replicas, out)] = back
	if !keepsPriorSealQuorum(q, replicas) {
		return nil, 0, 0
	}
	return replicas, out, back
}

// recoveryCandidate picks who leads the recovery: the owner itself when
// it is alive (a replacement only), else the first live replica that
// holds prior history and is not being replaced; isDown says who is not
// live.
func (n *Node) recoveryCandidate(q *QueueMeta, ownerDown bool, out NodeID, isDown func(NodeID) bool) (NodeID, bool) {
	if !ownerDown {
		return q.Owner, true
	}
	for _, id := range q.Replicas {
		if id != q.Owner && id != out && !isDown(id) && !containsSorted(q.Lost, id) && (len(q.Prior) == 0 || slices.Contains(q.Prior, id)) {
			return id, true
		}
	}
	return 0, false
}

// setMembers adopts the metadata's replica set. An owner keeps what it
// knows of followers that stay and starts probing new ones from its end.
func (r *replica) setMembers(members []NodeID) {
	r.members = slices.Clone(members)
	o := r.own
	if o == nil {
		return
	}
	o.certify = nil // its receipts are of the old set
	var followers []*progress
	for _, id := range members {
		if id == r.n.cfg.ID {
			continue
		}
		i := slices.IndexFunc(o.followers, func(f *progress) bool { return f.id == id })
		if i >= 0 {
			followers = append(followers, o.followers[i])
			continue
		}
		followers = append(followers, &progress{id: id, next: r.log.LastIndex() + 1, probing: true})
	}
	o.followers = followers
}

// replacedSuffix marks a replica directory on its way out.
const replacedSuffix = ".replaced"

// dropReplaced retires a replica the metadata replaced: the queue lives
// on other nodes now, and nobody will ask this one for its history. The
// directory is renamed away and the rename made durable (a crash then
// leaves no half-removed replica to reopen), then the files are removed.
func (n *Node) dropReplaced(r *replica) {
	n.retire(r)
	fs := n.env.FS()
	dir := n.replicaDir(r.name, r.inc)
	gone := dir + replacedSuffix
	if err := fs.Rename(dir, gone); err != nil {
		n.emit(event.NewQueueDropFailed(r.name, err))
		return
	}
	storage.SyncDir(fs, fs.PathDir(dir), n.syncs, func(err error) {
		if err != nil {
			n.env.Halt(fmt.Sprintf("dropping replaced queue %s: %v", r.name, err))
			return
		}
		if err := fs.RemoveAll(gone); err != nil {
			n.emit(event.NewQueueDropFailed(r.name, err))
		}
		n.emit(event.NewQueueReplaced(r.name, r.inc))
	})
}
