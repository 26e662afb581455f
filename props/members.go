package props

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// Membership. Every node reports each membership change it applies, with
// the voters and learners of the metadata group after it. Two rules hold
// whatever the faults:
//
//   - voter-floor: no applied change leaves fewer voters than three, or
//     all the members of a smaller cluster. A group below its floor while
//     a learner stood by is one failure from losing its quorum, which
//     the leader's promotions exist to prevent.
//   - rebalance-ends (liveness): a rebalance an operator started is over
//     by the end of the calm phase: the leader moves one replica at a
//     time until no member holds more than one above another, then ends
//     it. At the end of the run, some node that applied a start must
//     have applied an end after it.
//   - removed-placed: once a node has applied a member's removal, it
//     never afterwards plans a recovery onto that member or applies a
//     recovery or replacement that names it among a queue's replicas: a
//     removed node holds no replica, and placing one on it would leave
//     the queue a member short.
//   - voters-wanted (liveness): at the end of a run with a calm phase,
//     the metadata group has as many voters as its staying members want
//     (five of five or more, three of three or four, else all of them),
//     or no staying learner is left that could take a seat. A cluster
//     grown by joins whose learners are never promoted runs with the
//     fault tolerance of its founding size.
//   - leave-completes (liveness): at the end of a run with a calm
//     phase, no member is still leaving. Every leave the metadata takes
//     can finish (one that could not is refused when asked): the
//     member's replicas move away, a voter gives up its seat, and it is
//     removed.
//   - leave-keeps-replicas: once a node has applied the activation of a
//     queue, no leave it applies keeps fewer staying members (members
//     not leaving) than the largest replica set of its metadata's queues
//     (the run's replica count, or fewer for a queue created while fewer
//     members could take one): a leaving member's replicas are replaced
//     elsewhere, and with too few members left there is nowhere to put
//     them.
//
// The others judge events as the nodes emit them, in each node's apply
// order; voters-wanted and leave-completes read the metadata leader's
// members at the end.
// A node that restarts applies again from its snapshot, so the rules
// that remember forget what a node learned when it starts a new
// incarnation: it may then count a leaving member as staying, which
// can hide a violation but never report a false one.

// memberWatch holds the membership rules to the events as they happen.
type memberWatch struct {
	// removed holds, per node, the members it applied the removal of in
	// its current incarnation.
	removed map[node.NodeID][]uint32
	// leaving holds, per node, the members it applied the leave of and
	// not yet their removal, in its current incarnation; queued holds
	// the nodes that applied a queue's activation in theirs.
	leaving map[node.NodeID][]uint32
	queued  map[node.NodeID]bool
	// rebalancing holds, per node, whether the last rebalance event it
	// applied was a start.
	rebalancing map[node.NodeID]bool
	seen        map[string]bool
	violations  []sim.Violation
}

// restarted forgets what node id learned in its last incarnation.
func (mw *memberWatch) restarted(id node.NodeID) {
	delete(mw.removed, id)
	delete(mw.leaving, id)
	delete(mw.queued, id)
}

// observe judges one node event.
func (mw *memberWatch) observe(w *sim.World, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.MetaMembership:
		mw.checkFloor(w, id, e)
		switch e.Kind() {
		case "remove":
			if mw.removed == nil {
				mw.removed = make(map[node.NodeID][]uint32)
			}
			mw.removed[id] = append(mw.removed[id], e.Node())
			if mw.leaving != nil {
				mw.leaving[id] = slices.DeleteFunc(mw.leaving[id], func(n uint32) bool { return n == e.Node() })
			}
		case "leave":
			mw.checkLeave(w, id, e)
		}
	case event.MetaActivated:
		if mw.queued == nil {
			mw.queued = make(map[node.NodeID]bool)
		}
		mw.queued[id] = true
	case event.MetaRebalance:
		if mw.rebalancing == nil {
			mw.rebalancing = make(map[node.NodeID]bool)
		}
		mw.rebalancing[id] = e.Outcome() == "started"
	case event.MetaPlanRecovery:
		mw.checkPlaced(w, id, e, []uint32{e.ToNode()})
	case event.MetaRecoveryActivated:
		mw.checkPlaced(w, id, e, e.Members())
	case event.MetaReplicaReplaced:
		mw.checkPlaced(w, id, e, e.Replicas())
	}
}

// checkFloor holds an applied change to the voter floor.
func (mw *memberWatch) checkFloor(w *sim.World, id node.NodeID, e event.Event) {
	voters, learners := len(e.Voters()), len(e.Learners())
	if floor := min(3, voters+learners); voters < floor {
		mw.fail(w, "voter-floor", fmt.Sprintf("the %s of n%d left %d voters %v and %d learners %v, below the floor of %d",
			e.Kind(), e.Node(), voters, e.Voters(), learners, e.Learners(), floor), id)
	}
}

// checkLeave records an applied leave and holds it to the replica count.
func (mw *memberWatch) checkLeave(w *sim.World, id node.NodeID, e event.Event) {
	if mw.leaving == nil {
		mw.leaving = make(map[node.NodeID][]uint32)
	}
	if !slices.Contains(mw.leaving[id], e.Node()) {
		mw.leaving[id] = append(mw.leaving[id], e.Node())
	}
	members := append(slices.Clone(e.Voters()), e.Learners()...)
	staying := 0
	for _, m := range members {
		if !slices.Contains(mw.leaving[id], m) {
			staying++
		}
	}
	// A queue is placed on as many members as can take a replica, up to
	// the run's count, so one created while fewer could (seed 955354 of
	// the long sweep: a leave before any queue existed, then a queue of
	// five replicas placed on the four members staying) keeps fewer, and
	// a later leave need keep only as many. The metadata says how many
	// its largest set holds; at most the run's count.
	replicas := min(w.Scenario().ReplicaCount(), e.LargestSet())
	if mw.queued[id] && staying < replicas {
		mw.fail(w, "leave-keeps-replicas", fmt.Sprintf("the leave of n%d kept %d staying members of %v (leaving %v), fewer than a queue's %d replicas",
			e.Node(), staying, members, mw.leaving[id], replicas), id)
	}
}

// checkPlaced fails an event that places a replica on a member the node
// applied the removal of.
func (mw *memberWatch) checkPlaced(w *sim.World, id node.NodeID, e event.Event, nodes []uint32) {
	for _, n := range nodes {
		if slices.Contains(mw.removed[id], n) {
			mw.fail(w, "removed-placed", fmt.Sprintf("%s naming n%d for queue %s came after the node applied n%d's removal",
				e, n, e.Queue(), n), id)
		}
	}
}

// rebalanceEnded fails a run in which nodes applied the start of a
// rebalance and none applied its end after it.
func (mw *memberWatch) rebalanceEnded() []sim.Violation {
	if len(mw.rebalancing) == 0 {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(mw.rebalancing)) {
		if !mw.rebalancing[id] {
			return nil
		}
	}
	return []sim.Violation{liveness("rebalance-ends", "a rebalance started and never ended: every node that applied its start (%v) applied no end after it",
		slices.Sorted(maps.Keys(mw.rebalancing)))}
}

// fail records a violation once per distinct detail, naming the first
// node that showed it: every node applies the same change.
func (mw *memberWatch) fail(w *sim.World, checker, detail string, id node.NodeID) {
	if mw.seen == nil {
		mw.seen = make(map[string]bool)
	}
	if mw.seen[detail] {
		return
	}
	mw.seen[detail] = true
	detail = fmt.Sprintf("%s (first applied on %s)", detail, id)
	w.Tracef("%s: %s", checker, detail)
	mw.violations = append(mw.violations, sim.Violation{Kind: sim.Safety, Checker: checker, Detail: detail})
}

// membersSettled holds the end of a run to voters-wanted and
// leave-completes: it fails a metadata group that ends with fewer voters
// than its staying members want while a staying learner the leader does
// not hold down could take a seat, and one that ends with a member still
// leaving. It asks the node that leads the highest term among the last
// incarnations in nodes; a run without a calm phase owes nothing.
func membersSettled(nodes map[node.NodeID]*node.Node, live bool) []sim.Violation {
	if !live {
		return nil
	}
	var leader *node.Node
	var leaderID node.NodeID
	var term uint64
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		if l, t := nodes[id].MetaLeader(); l == id && (leader == nil || t > term) {
			leader, leaderID, term = nodes[id], id, t
		}
	}
	if leader == nil {
		return nil // no node leads at the end: there is no final word to ask
	}
	members := leader.Members()
	var voters, staying, ready []uint32
	for _, m := range members {
		if m.Voter {
			voters = append(voters, m.ID)
		}
		if !m.Leaving {
			staying = append(staying, m.ID)
			if !m.Voter && !m.Down {
				ready = append(ready, m.ID)
			}
		}
	}
	want := len(staying)
	switch {
	case want >= 5:
		want = 5
	case want >= 3:
		want = 3
	}
	var out []sim.Violation
	if len(voters) < want && len(ready) > 0 {
		out = append(out, liveness("voters-wanted", "at the end the metadata leader %s (term %d) counts %d voters %v among %d staying members %v, which want %d, while learners %v stand by",
			leaderID, term, len(voters), voters, len(staying), staying, want, ready))
	}
	for _, m := range members {
		if m.Leaving {
			out = append(out, liveness("leave-completes", "at the end the metadata leader %s (term %d) still counts n%d as leaving (voter %t, %d replicas)",
				leaderID, term, m.ID, m.Voter, m.Replicas))
		}
	}
	return out
}
