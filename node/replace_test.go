package node

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
)

// clockEnv is nullEnv with a monotonic clock the test moves.
type clockEnv struct {
	nullEnv
	now *time.Duration
}

func (e clockEnv) Monotonic() time.Duration { return *e.now }

// A dead node's queues are spread over the spares, the least loaded
// first, and a node down for less than ReplaceAfter is left alone. The
// wait is read from the monotonic clock: a leader that was stopped runs
// no ticks meanwhile, yet the member stayed down all along.
func TestReplacementSpreadsOverTheLeastLoadedSpares(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	for _, name := range []string{"a", "b", "c"} {
		s.queues[name] = &QueueMeta{Name: name, State: QueueActive, Replicas: []NodeID{1, 2, 3}, Owner: 1}
	}
	s.queues["busy"] = &QueueMeta{Name: "busy", State: QueueActive, Replicas: []NodeID{2, 3, 4}, Owner: 2}
	s.down[1] = true
	now := 5 * time.Second
	n := plannerOn(s, &now, 5, 4, 3, 2, 1)
	n.noteDownSince()
	load := n.replicaLoad()
	now += 950 * time.Millisecond
	if set, _, _ := n.replacementSet(s.queues["a"], load); set != nil {
		t.Fatalf("node 1 was replaced after %v of being down: %v", 950*time.Millisecond, set)
	}
	now += 50 * time.Millisecond // a second in all, and not one metadata tick
	var got [][]NodeID
	for _, name := range []string{"a", "b", "c"} {
		set, out, _ := n.replacementSet(s.queues[name], load)
		if out != 1 {
			t.Fatalf("queue %s: replaced %s, want node 1", name, out)
		}
		got = append(got, set)
	}
	// Node 4 already holds "busy"; node 5 holds nothing, so it takes the
	// first queue, then they alternate by load, lowest ID on a tie.
	want := [][]NodeID{{5, 2, 3}, {4, 2, 3}, {5, 2, 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replacement sets (-want +got):\n%s", diff)
	}
}

// While a replacement's plan is pending, an owner still serving the epoch
// before it keeps replicating to and counting quorums in the prior set,
// which the plan's seal collects from; every other replica, the
// candidate among them, follows the new set (seed 9597: an owner that
// counted the newcomer confirmed a record a prior-set seal quorum lacked).
func TestAnOwnerServingTheOldEpochKeepsThePriorSet(t *testing.T) {
	q := &QueueMeta{Replicas: []NodeID{4, 2, 3}, Prior: []NodeID{1, 2, 3}, Epoch: 3, State: QueueRecovering}
	for i, tc := range []struct {
		r    *replica
		want []NodeID
	}{
		{&replica{role: roleOwner, epoch: 2}, q.Prior},
		{&replica{role: roleCandidate, epoch: 3}, q.Replicas},
		{&replica{role: roleFollower, epoch: 2}, q.Replicas},
		{nil, q.Replicas},
	} {
		if got := servedMembers(tc.r, q); !cmp.Equal(got, tc.want) {
			t.Errorf("case %d serves %v, want %v", i, got, tc.want)
		}
	}
	q.Prior, q.State = nil, QueueActive
	if got := servedMembers(&replica{role: roleOwner, epoch: 3}, q); !cmp.Equal(got, q.Replicas) {
		t.Errorf("the activated owner serves %v, want %v", got, q.Replicas)
	}
}

// A pending replacement whose new set holds a damaged replica cannot
// activate under the all policy, so the damaged replica is swapped out
// at once, for a node that is neither in the set nor damaged, and the
// prior set stays the one the seal asks. A stacked plan that swaps out a
// healthy replica is still refused (seed 15576 of the long sweep: the
// owner of a policy-all queue being replaced fenced itself for a damaged
// journal, and its queue waited for it for good).
func TestADamagedReplicaOfAPendingReplacementIsReplaced(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	q := &QueueMeta{Name: "a", Incarnation: 7, State: QueueRecovering, Policy: wire.PolicyAll, Owner: 4, Epoch: 7,
		Replicas: []NodeID{2, 4, 5}, Prior: []NodeID{1, 4, 5}, Lost: []NodeID{1, 5}}
	s.queues["a"] = q
	n := &Node{
		cfg:  Config{Nodes: []NodeID{1, 2, 3, 4, 5}, MetaTick: 50 * time.Millisecond, ReplaceAfter: time.Second},
		meta: &metaNode{state: s, ticks: 100},
	}
	set, out, in := n.replacementSet(q, n.replicaLoad())
	if want := []NodeID{2, 4, 3}; out != 5 || in != 3 || !cmp.Equal(set, want) {
		t.Fatalf("replacement swaps %s for %s into %v, want 5 for 3 into %v", out, in, set, want)
	}
	healthy := command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 7, node: 4, members: []NodeID{3, 4, 5}}
	if res := applyAll(s, healthy); res.ok || res.detail != "a replacement is already pending" {
		t.Fatalf("a plan stacked on a pending replacement swapping out a healthy replica: ok %v, %q", res.ok, res.detail)
	}
	if res := applyAll(s, command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 7, node: 4, members: set}); !res.ok {
		t.Fatalf("the plan swapping out the damaged replica was refused: %s", res.detail)
	}
	if !cmp.Equal(q.Prior, []NodeID{1, 4, 5}) || !cmp.Equal(q.Replicas, set) || q.Epoch != 8 {
		t.Fatalf("after the plan: prior %v, replicas %v, epoch %d; want prior [1 4 5], replicas %v, epoch 8", q.Prior, q.Replicas, q.Epoch, set)
	}
}

// A replacement is pending (leaving node 1 swapped for 3) while node 2,
// a member of both sets, is down. Under the all policy the new set cannot
// activate without node 2, so once node 2 has been down for ReplaceAfter
// it is swapped out of the pending set too, for node 4, and the prior set
// stays the one the seal asks. Before that, nothing is stacked, and a
// stacked plan that swaps out a replica that is up is still refused (seed
// 120751 of the long sweep: the pending replacement waited 4.8 s for node
// 2 with two nodes free to take its place).
func TestADownReplicaOfAPendingReplacementIsReplaced(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	q := &QueueMeta{Name: "a", Incarnation: 7, State: QueueRecovering, Policy: wire.PolicyAll, Owner: 5, Epoch: 2,
		Replicas: []NodeID{5, 3, 2}, Prior: []NodeID{5, 1, 2}}
	s.queues["a"] = q
	s.down[2] = true
	now := 5 * time.Second
	n := plannerOn(s, &now, 2, 3, 4, 5)
	n.noteDownSince()
	now += 900 * time.Millisecond
	if set, _, _ := n.replacementSet(q, n.replicaLoad()); set != nil {
		t.Fatalf("node 2 was swapped out after %v of being down: %v", 900*time.Millisecond, set)
	}
	now += 100 * time.Millisecond
	set, out, in := n.replacementSet(q, n.replicaLoad())
	if want := []NodeID{5, 3, 4}; out != 2 || in != 4 || !cmp.Equal(set, want) {
		t.Fatalf("replacement swaps %s for %s into %v, want 2 for 4 into %v", out, in, set, want)
	}
	upSwapped := command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 2, node: 5, members: []NodeID{5, 4, 2}}
	if res := applyAll(s, upSwapped); res.ok || res.detail != "a replacement is already pending" {
		t.Fatalf("a plan stacked on a pending replacement swapping out a replica that is up: ok %v, %q", res.ok, res.detail)
	}
	if res := applyAll(s, command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 2, node: 5, members: set}); !res.ok {
		t.Fatalf("the plan swapping out the down replica was refused: %s", res.detail)
	}
	if !cmp.Equal(q.Prior, []NodeID{5, 1, 2}) || !cmp.Equal(q.Replicas, set) || q.Epoch != 3 {
		t.Fatalf("after the plan: prior %v, replicas %v, epoch %d; want prior [5 1 2], replicas %v, epoch 3", q.Prior, q.Replicas, q.Epoch, set)
	}
}

// A majority queue's replacement is pending (node 2 swapped for 3, prior
// set 5 1 2) while node 1, a member of both sets, is down. Swapping node 1
// out as well would leave node 5 the only prior member in the set, and
// only a member of both sets can lead the recovery: once node 5 is lost,
// no one could. So node 1 stays and the queue waits for it; a down
// newcomer may still be swapped out, and a lost node 5 is left for a
// plain recovery led by node 1 (seed 876782 of the long sweep: node 5
// was found damaged after the second swap, and the queue, its confirmed
// records on nodes 1 and 2 outside the set, never activated again).
func TestAStackedReplacementKeepsASealQuorumOfThePriorSet(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	q := &QueueMeta{Name: "a", Incarnation: 7, State: QueueRecovering, Policy: wire.PolicyMajority, Owner: 5, Epoch: 4,
		Replicas: []NodeID{5, 1, 3}, Prior: []NodeID{5, 1, 2}}
	s.queues["a"] = q
	s.down[1] = true
	s.down[2] = true // gone from the cluster: no place for the queue
	now := 5 * time.Second
	n := plannerOn(s, &now, 1, 2, 3, 4, 5, 6)
	n.noteDownSince()
	now += 2 * time.Second
	if set, out, _ := n.replacementSet(q, n.replicaLoad()); set != nil {
		t.Fatalf("node %s was swapped out of the pending set into %v, leaving one prior member", out, set)
	}
	dropsPrior := command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 4, node: 5, members: []NodeID{5, 4, 3}}
	if res := applyAll(s, dropsPrior); res.ok || res.detail != "keeps fewer than a seal quorum of the prior set" {
		t.Fatalf("a stacked plan keeping one prior member: ok %v, %q", res.ok, res.detail)
	}

	// The newcomer down instead: it holds no prior history, and swapping
	// it keeps nodes 5 and 1.
	delete(s.down, 1)
	s.down[3] = true
	n.noteDownSince()
	now += 2 * time.Second
	set, out, in := n.replacementSet(q, n.replicaLoad())
	if want := []NodeID{5, 1, 4}; out != 3 || in != 4 || !cmp.Equal(set, want) {
		t.Fatalf("replacement swaps %s for %s into %v, want 3 for 4 into %v", out, in, set, want)
	}
	if res := applyAll(s, command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 4, node: 5, members: set}); !res.ok {
		t.Fatalf("the plan swapping out the down newcomer was refused: %s", res.detail)
	}

	// Node 5 lost: swapping it out would keep node 1 alone, so nothing is
	// stacked, and node 1 leads a plain recovery of the pending set.
	delete(s.down, 3)
	q.Lost = []NodeID{5}
	if set, out, _ := n.replacementSet(q, n.replicaLoad()); set != nil {
		t.Fatalf("lost node %s was swapped out into %v, leaving one prior member", out, set)
	}
	if cand, ok := n.recoveryCandidate(q, true, 0, func(id NodeID) bool { return s.down[id] }); !ok || cand != 1 {
		t.Fatalf("candidate %s (%v), want node 1", cand, ok)
	}
}

// stackedOnALostOwner is six nodes' metadata and a planner on node 1
// for an all-policy queue whose pending replacement set (5, 3, 4) keeps
// a single member of its prior set (5, 1, 2), node 5, the owner, which
// is lost.
func stackedOnALostOwner() (*metaState, *QueueMeta, *Node) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	q := &QueueMeta{Name: "a", Incarnation: 7, State: QueueRecovering, Policy: wire.PolicyAll, Owner: 5, Epoch: 4,
		Replicas: []NodeID{5, 3, 4}, Prior: []NodeID{5, 1, 2}, Lost: []NodeID{5}}
	s.queues["a"] = q
	now := 5 * time.Second
	return s, q, plannerOn(s, &now, 1, 2, 3, 4, 5, 6)
}

// Under the all policy a stacked replacement may keep one prior member
// (node 5) in the pending set, and here that member, the owner, is then
// found damaged: no member of both sets can lead the recovery. Nodes 1
// and 2, members of the prior set swapped out earlier, are up and hold
// every confirmed record, so node 1 is swapped back in for node 5 and
// leads the recovery from outside the set it replaces. A plan naming a
// node of neither set is still refused.
func TestAPriorMemberIsSwappedBackWhenNoMemberOfBothSetsCanLead(t *testing.T) {
	s, q, n := stackedOnALostOwner()
	isDown := func(id NodeID) bool { return s.down[id] }
	if set, out, _ := n.replacementSet(q, n.replicaLoad()); set != nil {
		t.Fatalf("lost node %s was swapped for a newcomer into %v, leaving no prior member", out, set)
	}
	if cand, ok := n.recoveryCandidate(q, true, 0, isDown); ok {
		t.Fatalf("node %s may lead, though every member of both sets is lost", cand)
	}
	set, out, back := n.swapBackSet(q, isDown)
	if want := []NodeID{1, 3, 4}; out != 5 || back != 1 || !cmp.Equal(set, want) {
		t.Fatalf("swap back %s for %s into %v, want 1 for 5 into %v", back, out, set, want)
	}
	stranger := command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 4, node: 6, members: []NodeID{6, 3, 4}}
	if res := applyAll(s, stranger); res.ok {
		t.Fatal("a plan led by a node of neither set was accepted")
	}
	if res := applyAll(s, command{kind: cmdStartRecovery, name: "a", inc: 7, epoch: 4, node: back, members: set}); !res.ok {
		t.Fatalf("the swap-back plan was refused: %s", res.detail)
	}
	if !cmp.Equal(q.Prior, []NodeID{5, 1, 2}) || !cmp.Equal(q.Replicas, set) || q.Owner != 1 || q.Epoch != 5 {
		t.Fatalf("after the plan: prior %v, replicas %v, owner %s, epoch %d; want prior [5 1 2], replicas %v, owner 1, epoch 5",
			q.Prior, q.Replicas, q.Owner, q.Epoch, set)
	}
}

// The member swapped back in must be able to lead the recovery: a prior
// member that is down, or lost itself, is passed over for the next one,
// and with none left there is no swap: a plan led by a node that cannot
// answer would hold the queue until that node came back.
func TestOnlyALivePriorMemberIsSwappedBack(t *testing.T) {
	s, q, n := stackedOnALostOwner()
	isDown := func(id NodeID) bool { return s.down[id] }
	s.down[1] = true
	if set, out, back := n.swapBackSet(q, isDown); out != 5 || back != 2 || !cmp.Equal(set, []NodeID{2, 3, 4}) {
		t.Fatalf("with node 1 down: swap back %s for %s into %v, want 2 for 5 into [2 3 4]", back, out, set)
	}
	q.Lost = []NodeID{2, 5}
	if set, out, back := n.swapBackSet(q, isDown); set != nil {
		t.Fatalf("with node 1 down and node 2 lost: swap back %s for %s into %v, want no swap", back, out, set)
	}
}

// An owner-only queue confirms on its owner alone, so its seal needs
// every replica, and a plan that keeps fewer is refused as a rule. Led by
// its live owner, whose log holds all it confirmed, a plan may swap out a
// replica that is up and sound, such as a leaving member's: the seal
// reaches the whole prior set. One that swaps out a replica that is down
// or damaged, or is led by another node, is still refused.
func TestAnOwnerOnlyQueueHandsALeavingMembersReplicaOver(t *testing.T) {
	plan := func(down NodeID, lost []NodeID, cand NodeID) result {
		s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
		s.queues["q"] = &QueueMeta{Name: "q", Incarnation: 7, State: QueueActive, Policy: wire.PolicyOwnerOnly, Owner: 2, Epoch: 3,
			Replicas: []NodeID{2, 1, 3}, Lost: lost}
		if down != 0 {
			s.down[down] = true
		}
		return applyAll(s, command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 3, node: cand, members: []NodeID{2, 4, 3}})
	}
	if res := plan(0, nil, 2); !res.ok {
		t.Fatalf("the live owner's plan swapping the live n1 for n4 was refused: %s", res.detail)
	}
	const refused = "keeps 2 replicas, fewer than a seal quorum"
	for _, c := range []struct {
		why  string
		down NodeID
		lost []NodeID
		cand NodeID
	}{
		{"n1 is down", 1, nil, 2},
		{"n1 is damaged", 0, []NodeID{1}, 2},
		{"n3 leads it, not the owner", 0, nil, 3},
	} {
		if res := plan(c.down, c.lost, c.cand); res.ok || res.detail != refused {
			t.Errorf("a plan for an owner-only queue where %s: ok %v, %q; want refused with %q", c.why, res.ok, res.detail, refused)
		}
	}
}

// The owner of an owner-only queue cannot leave: no other replica is
// known to hold what it confirmed, so the queue cannot move, and a leave
// would wait for it for good. The operator hears why at once.
func TestTheOwnerOfAnOwnerOnlyQueueCannotLeave(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	s.members = foundingMembers([]NodeID{1, 2, 3, 4, 5})
	s.queues["q"] = &QueueMeta{Name: "q", Incarnation: 7, State: QueueActive, Policy: wire.PolicyOwnerOnly, Owner: 2, Epoch: 3,
		Replicas: []NodeID{2, 1, 3}}
	want := "n2 owns queue q, which confirms on its owner alone and cannot move; delete the queue first"
	if res := applyAll(s, command{kind: cmdLeave, node: 2}); res.ok || res.detail != want {
		t.Fatalf("the leave of the owner-only queue's owner: ok %v, %q; want refused with %q", res.ok, res.detail, want)
	}
	if res := applyAll(s, command{kind: cmdLeave, node: 1}); !res.ok {
		t.Fatalf("the leave of one of its followers: %s", res.detail)
	}
	// A queue still being created activates with the owner it names
	// (seed 841670 of the long sweep).
	s.queues["q"].State = QueuePreparing
	if res := applyAll(s, command{kind: cmdLeave, node: 2}); res.ok || res.detail != want {
		t.Fatalf("the leave of the owner of an owner-only queue being created: ok %v, %q; want refused with %q", res.ok, res.detail, want)
	}
}

// A leaving voter is removed as long as the voters it leaves behind are
// at least the floor of the smaller group, the floor itself included;
// below it, it keeps its seat until a learner takes it.
func TestALeavingVoterIsRemovedDownToTheVoterFloor(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	s.members = foundingMembers([]NodeID{1, 2, 3, 4})
	if res := applyAll(s, command{kind: cmdLeave, node: 4}); !res.ok {
		t.Fatalf("n4's leave: %s", res.detail)
	}
	if res := applyAll(s, command{kind: cmdRemoveMember, node: 4}); !res.ok {
		t.Fatalf("removing voter n4 leaves three voters among three members, the floor: refused with %q", res.detail)
	}

	s = newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	s.members = foundingMembers([]NodeID{1, 2, 3, 4, 5})
	s.members[3].Learner, s.members[4].Learner = true, true
	if res := applyAll(s, command{kind: cmdLeave, node: 3}); !res.ok {
		t.Fatalf("n3's leave: %s", res.detail)
	}
	want := "removing voter n3 would leave 2 voters among 4 members"
	if res := applyAll(s, command{kind: cmdRemoveMember, node: 3}); res.ok || res.detail != want {
		t.Fatalf("removing voter n3 below the floor: ok %v, %q; want refused with %q", res.ok, res.detail, want)
	}
}

// plannerOn is a node that plans replacements over the metadata state s as
// its leader would, on a cluster of nodes, its monotonic clock reading
// *now and ReplaceAfter one second.
func plannerOn(s *metaState, now *time.Duration, nodes ...NodeID) *Node {
	return &Node{
		env:  clockEnv{now: now},
		cfg:  Config{Nodes: nodes, MetaTick: 50 * time.Millisecond, ReplaceAfter: time.Second},
		meta: &metaNode{state: s, ticks: 100},
	}
}
