package node

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func newQueueCmd(name string) command {
	return command{kind: cmdCreate, from: proposalID{1, 1}, queue: QueueMeta{
		Name: name, Incarnation: 7, HistoryID: 8, SessionID: 9, Policy: wire.PolicyMajority, Replicas: []NodeID{2, 3, 1},
	}}
}

// applyAll applies commands at consecutive indexes and returns the last
// result.
func applyAll(s *metaState, cmds ...command) result {
	var res result
	for _, c := range cmds {
		res = s.apply(s.applied+1, c)
	}
	return res
}

func TestActivationNeedsAnExactQuorumOfPreparedReplicasWithTheOwner(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, newQueueCmd("q"))
	prepared := func(id NodeID) command { return command{kind: cmdPrepared, name: "q", inc: 7, node: id} }
	activate := func(ids ...NodeID) command {
		return command{kind: cmdActivate, name: "q", inc: 7, members: ids, process: 42}
	}
	applyAll(s, prepared(3), prepared(1))
	for _, tc := range []struct {
		members []NodeID
		why     string
	}{
		{[]NodeID{1, 3}, "the owner (2) is not among them"},
		{[]NodeID{2, 3}, "2 has not prepared"},
	} {
		if res := applyAll(s, activate(tc.members...)); res.ok {
			t.Fatalf("activation with %v succeeded, but %s", tc.members, tc.why)
		}
	}
	applyAll(s, prepared(2))
	if res := applyAll(s, activate(1, 2, 3)); res.ok {
		t.Fatal("activation with all three succeeded; majority needs exactly two")
	}
	if res := applyAll(s, activate(2, 3)); !res.ok {
		t.Fatalf("activation with an exact quorum failed: %s", res.detail)
	}
	q := s.queues["q"]
	if q.State != QueueActive || q.Epoch != 1 || q.OwnerProcess != 42 {
		t.Fatalf("after activation: %+v", q)
	}
	if res := applyAll(s, prepared(1)); res.ok {
		t.Fatal("a replica prepared into an active queue")
	}
}

func TestThePreparedReportCompletingAQuorumWithTheOwnerActivates(t *testing.T) {
	prepared := func(id NodeID, process uint64) command {
		return command{kind: cmdPrepared, name: "q", inc: 7, node: id, process: process}
	}
	for _, tc := range []struct {
		name  string
		order []command
		want  []NodeID // the owner and the lowest other IDs prepared
	}{
		{"owner first", []command{prepared(2, 42), prepared(3, 0)}, []NodeID{2, 3}},
		{"owner last", []command{prepared(3, 0), prepared(1, 0), prepared(2, 42)}, []NodeID{1, 2}},
	} {
		s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
		applyAll(s, newQueueCmd("q"))
		for i, c := range tc.order {
			res := applyAll(s, c)
			last := i == len(tc.order)-1
			if !res.ok || res.activated != last {
				t.Fatalf("%s: report %d: ok %v, activated %v", tc.name, i+1, res.ok, res.activated)
			}
		}
		q := s.queues["q"]
		if q.State != QueueActive || q.Epoch != 1 || q.OwnerProcess != 42 || !cmp.Equal(q.Activated, tc.want) {
			t.Fatalf("%s: after the quorum's reports: %+v, want active at epoch 1, process 42, activated %v", tc.name, q, tc.want)
		}
	}
	// Without the owner, or without the owner's process, no quorum is
	// complete: the owner's explicit activation stays the way.
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, newQueueCmd("q"), prepared(1, 0), prepared(3, 0), prepared(2, 0))
	if q := s.queues["q"]; q.State != QueuePreparing {
		t.Fatalf("activated without the owner's process: %+v", q)
	}
}

func TestEpochBumpIsACompareAndSwapPerOwnerProcess(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, newQueueCmd("q"),
		command{kind: cmdPrepared, name: "q", inc: 7, node: 2}, command{kind: cmdPrepared, name: "q", inc: 7, node: 3},
		command{kind: cmdActivate, name: "q", inc: 7, members: []NodeID{2, 3}, process: 42})
	bump := func(node NodeID, process, from uint64) result {
		return applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 7, node: node, process: process, epoch: from})
	}
	if bump(3, 50, 1).ok {
		t.Fatal("a non-owner bumped the epoch")
	}
	if !bump(2, 50, 1).ok || s.queues["q"].Epoch != 2 {
		t.Fatalf("the restarted owner's bump failed: epoch %d", s.queues["q"].Epoch)
	}
	if !bump(2, 50, 1).ok || s.queues["q"].Epoch != 2 {
		t.Fatal("a retried bump from the same process bumped twice")
	}
	if bump(2, 51, 1).ok {
		t.Fatal("a bump naming a stale epoch succeeded")
	}
	if !bump(2, 51, 2).ok || s.queues["q"].Epoch != 3 {
		t.Fatalf("the next process's bump failed: epoch %d", s.queues["q"].Epoch)
	}
	if res := applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 99, node: 2, process: 52, epoch: 3}); res.ok {
		t.Fatal("a bump for another incarnation succeeded")
	}
}

func TestCreateIsIdempotentPerProposalAndDeletedNamesAreReusable(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	c := newQueueCmd("q")
	if !applyAll(s, c).ok || !applyAll(s, c).ok {
		t.Fatal("a retried create proposal did not report success")
	}
	other := c
	other.from = proposalID{2, 1}
	if res := applyAll(s, other); res.ok || res.detail != "exists" {
		t.Fatalf("a second create of a live name: %+v", res)
	}
	applyAll(s, command{kind: cmdDelete, name: "q", inc: 7})
	other.queue.Incarnation = 11
	if !applyAll(s, other).ok || s.queues["q"].Incarnation != 11 {
		t.Fatal("a deleted name could not be reused by a new incarnation")
	}
}

func TestCommandsAndSnapshotsRoundTrip(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectEager, Interval: 5, Grace: 6})
	cmds := []command{
		newQueueCmd("q"), newQueueCmd("r"),
		{kind: cmdPrepared, from: proposalID{3, 4}, name: "q", inc: 7, node: 2},
		{kind: cmdNodeDown, node: 3},
		{kind: cmdSetDetection, policy: DetectionPolicy{Mode: DetectHeartbeat, Interval: 100, Grace: 300}},
		{kind: cmdSetDeadLetter, from: proposalID{2, 9}, name: "r", inc: 7, deadLetter: "q", maxDeliveries: 3},
		{kind: cmdReplacePreparing, from: proposalID{2, 10}, name: "q", inc: 7, members: []NodeID{2, 4, 1}},
	}
	cmds[1].queue.Name, cmds[1].queue.DedupWindow = "r", 90*time.Second
	cmds[0].queue.DeadLetter, cmds[0].queue.MaxDeliveries = "r", 4
	for _, c := range cmds {
		got, err := decodeCommand(encodeCommand(c))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c, got, cmp.AllowUnexported(command{}, proposalID{}), cmp.AllowUnexported(QueueMeta{})); diff != "" {
			t.Fatalf("command %d round trip (-sent +decoded):\n%s", c.kind, diff)
		}
		applyAll(s, c)
	}
	back, err := decodeMetaState(s.encode())
	if err != nil {
		t.Fatal(err)
	}
	// The sorted-names cache is not state: the decoded copy builds it
	// when first asked.
	opts := cmp.Options{cmp.AllowUnexported(metaState{}, proposalID{}), cmp.AllowUnexported(QueueMeta{}),
		cmpopts.IgnoreFields(metaState{}, "names")}
	if diff := cmp.Diff(s, back, opts); diff != "" {
		t.Fatalf("snapshot round trip (-state +decoded):\n%s", diff)
	}
	if _, err := decodeCommand([]byte{cmdCreate, 1}); err == nil {
		t.Fatal("a truncated command decoded")
	}
}

// A snapshot written before queues had a deduplication window, and a
// create command without one, decode with the default window (zero); one
// with a window keeps it.
func TestOlderSnapshotsAndCommandsDecodeWithTheDefaultWindow(t *testing.T) {
	c := newQueueCmd("q")
	c.queue.DedupWindow = 5 * time.Second
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, c)
	current := s.encode()
	// A version 5 snapshot is the same but for the dead-letter queue and
	// its limit, the last fields of the one queue; a version 4 one lacks
	// the window before them too.
	// Version 7 added the member list after the queues: here empty, a
	// count and the last member's ID, and the rebalance flag.
	current = current[:len(current)-9]
	deadBytes := len(wire.AppendString(nil, "")) + 4
	v5 := append([]byte{5}, current[1:len(current)-deadBytes]...)
	v4 := append([]byte{4}, current[1:len(current)-deadBytes-8]...)
	current = s.encode()
	for _, tc := range []struct {
		data []byte
		want time.Duration
	}{{current, 5 * time.Second}, {v5, 5 * time.Second}, {v4, 0}} {
		back, err := decodeMetaState(tc.data)
		if err != nil || back.queues["q"].DedupWindow != tc.want {
			t.Fatalf("a version %d snapshot: %v, window %v, want %v", tc.data[0], err, back.queues["q"].DedupWindow, tc.want)
		}
	}
	enc := encodeCommand(c)
	for _, tc := range []struct {
		data []byte
		want time.Duration
	}{{enc, 5 * time.Second}, {enc[:len(enc)-8], 0}} {
		got, err := decodeCommand(tc.data)
		if err != nil || got.queue.DedupWindow != tc.want {
			t.Fatalf("a %d-byte create command: %v, window %v, want %v", len(tc.data), err, got.queue.DedupWindow, tc.want)
		}
	}
}

// activeQueue returns a state holding queue q, active at epoch 1 on
// replicas 2 (owner), 3 and 1.
func activeQueue() *metaState {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, newQueueCmd("q"),
		command{kind: cmdPrepared, name: "q", inc: 7, node: 2}, command{kind: cmdPrepared, name: "q", inc: 7, node: 3},
		command{kind: cmdActivate, name: "q", inc: 7, members: []NodeID{2, 3}, process: 42})
	return s
}

// A handoff's plan names the target's process: that process writes in
// the plan's epoch as it is and may be activated without claiming it,
// while another process of the target (it restarted since its receipt)
// claims the next epoch, as a plan without a process would have it do.
func TestAPlanNamingTheCandidatesProcessNeedsNoClaim(t *testing.T) {
	s := activeQueue()
	if res := applyAll(s, command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 1, node: 3, process: 60}); !res.ok {
		t.Fatalf("the plan failed: %+v", res)
	}
	q := s.queues["q"]
	if q.Epoch != 2 || q.OwnerProcess != 60 || q.Owner != 3 || q.State != QueueRecovering {
		t.Fatalf("after the plan: owner %s process %d epoch %d state %v, want n3's process 60 recovering epoch 2", q.Owner, q.OwnerProcess, q.Epoch, q.State)
	}
	if res := applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 7, node: 3, process: 60, epoch: 2}); !res.ok || q.Epoch != 2 {
		t.Fatalf("a claim by the named process moved the epoch to %d (%+v)", q.Epoch, res)
	}
	if res := applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 7, node: 3, process: 61, epoch: 2}); !res.ok || q.Epoch != 3 || q.OwnerProcess != 61 {
		t.Fatalf("a restarted target's claim left epoch %d process %d (%+v), want epoch 3 for process 61", q.Epoch, q.OwnerProcess, res)
	}
	if res := applyAll(s, command{kind: cmdActivateRecovered, name: "q", inc: 7, epoch: 2, node: 3, process: 60, members: []NodeID{3, 1}}); res.ok {
		t.Fatal("the process named by the plan was activated in an epoch a later process claimed")
	}
	unnamed := activeQueue()
	applyAll(unnamed, command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 1, node: 3})
	if q := unnamed.queues["q"]; q.OwnerProcess != 0 || q.Epoch != 2 {
		t.Fatalf("a plan without a process left process %d epoch %d, want none at epoch 2", q.OwnerProcess, q.Epoch)
	}
}

// A queue still being created has a replica swapped for another node:
// the prepared reports of the replicas that stay count, the dropped one's
// does not, and a new first replica becomes the owner, whose process is
// then unknown. A queue that activated is no longer swapped this way.
func TestAPreparingQueueHasAReplicaSwapped(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	create := newQueueCmd("q")
	create.queue.Policy = wire.PolicyAll
	applyAll(s, create,
		command{kind: cmdPrepared, name: "q", inc: 7, node: 2, process: 50},
		command{kind: cmdPrepared, name: "q", inc: 7, node: 3})
	swap := func(members ...NodeID) result {
		return applyAll(s, command{kind: cmdReplacePreparing, name: "q", inc: 7, members: members})
	}
	if res := swap(2, 3); res.ok {
		t.Fatal("a swap that shrinks the set applied")
	}
	if res := swap(2, 3, 3); res.ok {
		t.Fatal("a swap naming a node twice applied")
	}
	res := swap(4, 3, 1)
	q := s.queues["q"]
	if !res.ok || !res.replaced || res.activated {
		t.Fatalf("swapping n2 for n4: %+v", res)
	}
	if !cmp.Equal(q.Replicas, []NodeID{4, 3, 1}) || !cmp.Equal(q.Prepared, []NodeID{3}) || q.Owner != 4 || q.OwnerProcess != 0 {
		t.Fatalf("after the swap: replicas %v prepared %v owner %s process %d", q.Replicas, q.Prepared, q.Owner, q.OwnerProcess)
	}
	applyAll(s, command{kind: cmdPrepared, name: "q", inc: 7, node: 1})
	if res := applyAll(s, command{kind: cmdPrepared, name: "q", inc: 7, node: 4, process: 60}); !res.activated || q.Epoch != 1 || q.OwnerProcess != 60 {
		t.Fatalf("the new owner's report did not activate the queue: %+v, epoch %d process %d", res, q.Epoch, q.OwnerProcess)
	}
	if res := swap(2, 3, 1); res.ok {
		t.Fatal("an active queue had a replica swapped as if still preparing")
	}
}

func TestReplacementKeepsASealQuorumOfThePriorSet(t *testing.T) {
	plan := func(epoch uint64, cand NodeID, members ...NodeID) command {
		return command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: epoch, node: cand, members: members}
	}
	s := activeQueue()
	for _, tc := range []struct {
		c   command
		why string
	}{
		{plan(1, 3, 3, 4, 5), "it keeps one of three replicas, fewer than a seal quorum"},
		{plan(1, 4, 2, 3, 4), "the candidate 4 holds no history"},
		{plan(1, 3, 3, 4), "it shrinks the set"},
		{plan(1, 3, 3, 3, 4), "it names 3 twice"},
	} {
		if res := applyAll(s, tc.c); res.ok {
			t.Fatalf("plan %v applied, but %s", tc.c.members, tc.why)
		}
	}
	if res := applyAll(s, plan(1, 3, 2, 3, 4)); !res.ok {
		t.Fatalf("replacing 1 by 4 failed: %s", res.detail)
	}
	q := s.queues["q"]
	if diff := cmp.Diff([]NodeID{2, 3, 1}, q.Prior); diff != "" || q.Owner != 3 || q.Epoch != 2 {
		t.Fatalf("after the plan: owner %s epoch %d, prior (-want +got):\n%s", q.Owner, q.Epoch, diff)
	}
	if res := applyAll(s, plan(2, 2, 2, 3, 5)); res.ok {
		t.Fatal("a second replacement stacked on a pending one")
	}
	if res := applyAll(s, plan(2, 4, nil...)); res.ok {
		t.Fatal("a new plan made the replacement, which holds nothing, the candidate")
	}
	if res := applyAll(s, plan(2, 2, nil...)); !res.ok || s.queues["q"].Prior == nil {
		t.Fatalf("a new plan for the pending replacement: %+v, prior %v", res, s.queues["q"].Prior)
	}
	back, err := decodeMetaState(s.encode())
	if err != nil || !cmp.Equal(back.queues["q"].Prior, q.Prior) {
		t.Fatalf("the prior set did not survive a snapshot: %v, %v", err, back.queues["q"])
	}
	activate := command{kind: cmdActivateRecovered, name: "q", inc: 7, epoch: 3, node: 2, process: 43, members: []NodeID{2, 4}}
	applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 7, node: 2, process: 43, epoch: 3})
	if res := applyAll(s, activate); !res.ok || s.queues["q"].Prior != nil {
		t.Fatalf("activation with the replacement in the quorum: %+v, prior %v", res, s.queues["q"].Prior)
	}
}

func TestALostReplicaCannotLeadAndLeavesWithItsReplacement(t *testing.T) {
	s := activeQueue()
	lost := command{kind: cmdReplicaLost, name: "q", inc: 7, node: 3}
	if res := applyAll(s, lost); !res.ok || !cmp.Equal(s.queues["q"].Lost, []NodeID{3}) {
		t.Fatalf("reporting 3 lost: %+v, lost %v", res, s.queues["q"].Lost)
	}
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 9}); res.ok {
		t.Fatal("a node outside the set was recorded lost")
	}
	if got, err := decodeCommand(encodeCommand(lost)); err != nil || got.kind != cmdReplicaLost || got.node != 3 {
		t.Fatalf("the command does not round-trip: %+v, %v", got, err)
	}
	plan := command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 1, node: 3}
	if res := applyAll(s, plan); res.ok {
		t.Fatal("the damaged replica became the recovery candidate")
	}
	plan.node, plan.members = 2, []NodeID{2, 4, 1}
	// The lost replica stays listed while the old set's evidence counts.
	if res := applyAll(s, plan); !res.ok || !cmp.Equal(s.queues["q"].Lost, []NodeID{3}) {
		t.Fatalf("replacing the lost replica: %+v, lost %v", res, s.queues["q"].Lost)
	}
	back, err := decodeMetaState(s.encode())
	if err != nil || !cmp.Equal(back.queues["q"].Prior, []NodeID{2, 3, 1}) || !cmp.Equal(back.queues["q"].Lost, []NodeID{3}) {
		t.Fatalf("snapshot round trip: %v, %+v", err, back.queues["q"])
	}
	q := s.queues["q"]
	applyAll(s, command{kind: cmdBumpEpoch, name: "q", inc: 7, node: 2, process: 77, epoch: q.Epoch})
	activate := command{kind: cmdActivateRecovered, name: "q", inc: 7, epoch: q.Epoch, node: 2, process: 77, members: []NodeID{1, 2}}
	if res := applyAll(s, activate); !res.ok || len(q.Lost) != 0 || len(q.Prior) != 0 {
		t.Fatalf("activating the replacement: %+v, lost %v, prior %v", res, q.Lost, q.Prior)
	}
}

// A replica the metadata is replacing stays a witness of the replacement's
// seal, so it may still report its storage lost; a node in neither set
// may not.
func TestAReplicaBeingReplacedCanReportItselfLost(t *testing.T) {
	s := activeQueue()
	plan := command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 1, node: 2, members: []NodeID{2, 4, 1}}
	if res := applyAll(s, plan); !res.ok || !cmp.Equal(s.queues["q"].Prior, []NodeID{2, 3, 1}) {
		t.Fatalf("replacing 3 with 4: %+v, prior %v", res, s.queues["q"].Prior)
	}
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 3}); !res.ok || !cmp.Equal(s.queues["q"].Lost, []NodeID{3}) {
		t.Fatalf("the replaced replica reporting itself lost: %+v, lost %v", res, s.queues["q"].Lost)
	}
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 9}); res.ok {
		t.Fatal("a node in neither set was recorded lost")
	}
}

// A proposer places replicas on the members its applied metadata knows,
// but a leave or a removal may commit first: then the command that would
// place a replica on that node is refused where it applies, on every
// node alike (seed 6519 of the long sweep).
func TestNoReplicaIsPlacedOnANodeThatLeftOrIsLeaving(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	s.members = foundingMembers([]NodeID{1, 2, 3, 4, 5})
	applyAll(s, command{kind: cmdLeave, node: 5})
	if res := applyAll(s, command{kind: cmdLeave, node: 3}, command{kind: cmdRemoveMember, node: 3}); !res.ok {
		t.Fatalf("removing n3: %s", res.detail)
	}
	if res := applyAll(s, newQueueCmd("q")); res.ok || !res.refused || s.queues["q"] != nil {
		t.Fatalf("a create naming the removed n3 applied: %+v", res)
	}
	create := newQueueCmd("q")
	create.queue.Replicas = []NodeID{2, 4, 1}
	if res := applyAll(s, create); !res.ok {
		t.Fatalf("a create on members that stay: %s", res.detail)
	}
	swap := func(members ...NodeID) result {
		return applyAll(s, command{kind: cmdReplacePreparing, name: "q", inc: 7, members: members})
	}
	if res := swap(2, 3, 1); res.ok {
		t.Fatal("a swap placed a replica on the removed n3")
	}
	if res := swap(2, 5, 1); res.ok {
		t.Fatal("a swap placed a replica on the leaving n5")
	}
	applyAll(s, command{kind: cmdPrepared, name: "q", inc: 7, node: 2, process: 50}, command{kind: cmdPrepared, name: "q", inc: 7, node: 4})
	plan := func(members ...NodeID) result {
		return applyAll(s, command{kind: cmdStartRecovery, name: "q", inc: 7, epoch: 1, node: 2, members: members})
	}
	if res := plan(2, 4, 3); res.ok {
		t.Fatal("a replacement placed a replica on the removed n3")
	}
	if res := plan(2, 4, 5); res.ok {
		t.Fatal("a replacement placed a replica on the leaving n5")
	}
}

// A queue still being created loses its first owner's storage: the lost
// replica's prepared report stops counting (also one that commits late),
// the first prepared replica that is not lost becomes the owner, its
// process unknown until it activates, and the queue activates on the
// healthy replicas alone. The lost replica stays in the set and in Lost,
// for the ordinary replacement of an active queue.
func TestAPreparingQueueWhoseOwnerIsLostIsCreatedByAnotherReplica(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	prepared := func(id NodeID, process uint64) command {
		return command{kind: cmdPrepared, name: "q", inc: 7, node: id, process: process}
	}
	activate := func(process uint64, members ...NodeID) command {
		return command{kind: cmdActivate, name: "q", inc: 7, members: members, process: process}
	}
	// The owner's report carries no process, so it does not activate yet.
	applyAll(s, newQueueCmd("q"), prepared(2, 0), prepared(3, 0))
	q := s.queues["q"]
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 2}); !res.ok || res.activated {
		t.Fatalf("reporting the owner lost: %+v", res)
	}
	if q.Owner != 3 || q.OwnerProcess != 0 || !cmp.Equal(q.Replicas, []NodeID{3, 2, 1}) ||
		!cmp.Equal(q.Prepared, []NodeID{3}) || !cmp.Equal(q.Lost, []NodeID{2}) || q.State != QueuePreparing {
		t.Fatalf("after the loss: owner %s process %d replicas %v prepared %v lost %v state %s",
			q.Owner, q.OwnerProcess, q.Replicas, q.Prepared, q.Lost, q.State)
	}
	if res := applyAll(s, prepared(2, 50)); res.ok || !cmp.Equal(q.Prepared, []NodeID{3}) {
		t.Fatalf("a late prepared report of the lost replica counted: %+v, prepared %v", res, q.Prepared)
	}
	if res := applyAll(s, activate(50, 2, 3)); res.ok {
		t.Fatal("an activation with the lost replica in the quorum applied")
	}
	// A replacement drawn from a view before the loss puts the lost
	// replica first again; the ownership stays where it can finish.
	if res := applyAll(s, command{kind: cmdReplacePreparing, name: "q", inc: 7, members: []NodeID{2, 3, 4}}); !res.ok ||
		q.Owner != 3 || !cmp.Equal(q.Replicas, []NodeID{3, 2, 4}) || !cmp.Equal(q.Lost, []NodeID{2}) {
		t.Fatalf("a stale swap: %+v, owner %s replicas %v lost %v", res, q.Owner, q.Replicas, q.Lost)
	}
	if res := applyAll(s, prepared(4, 0), activate(60, 3, 4)); !res.ok || !res.activated {
		t.Fatalf("activating on the healthy replicas: %+v", res)
	}
	if q.State != QueueActive || q.Epoch != 1 || q.OwnerProcess != 60 || !cmp.Equal(q.Activated, []NodeID{3, 4}) || !cmp.Equal(q.Lost, []NodeID{2}) {
		t.Fatalf("after activation: state %s epoch %d process %d activated %v lost %v", q.State, q.Epoch, q.OwnerProcess, q.Activated, q.Lost)
	}
	back, err := decodeMetaState(s.encode())
	if err != nil || !cmp.Equal(back.queues["q"].Lost, []NodeID{2}) || back.queues["q"].Owner != 3 {
		t.Fatalf("snapshot round trip: %v, %+v", err, back.queues["q"])
	}
}

// A lost replica that is not the owner stops counting as prepared, so
// the owner's report cannot complete a quorum with it.
func TestALostPreparedReplicaIsNotCountedForActivation(t *testing.T) {
	s := newMetaState(DetectionPolicy{Mode: DetectHeartbeat})
	applyAll(s, newQueueCmd("q"), command{kind: cmdPrepared, name: "q", inc: 7, node: 3},
		command{kind: cmdReplicaLost, name: "q", inc: 7, node: 3})
	q := s.queues["q"]
	if q.Owner != 2 || len(q.Prepared) != 0 {
		t.Fatalf("after losing a follower: owner %s prepared %v", q.Owner, q.Prepared)
	}
	if res := applyAll(s, command{kind: cmdPrepared, name: "q", inc: 7, node: 2, process: 50}); res.activated {
		t.Fatal("the owner's report activated on a quorum with the lost replica")
	}
	if res := applyAll(s, command{kind: cmdPrepared, name: "q", inc: 7, node: 1}); !res.activated || !cmp.Equal(q.Activated, []NodeID{1, 2}) {
		t.Fatalf("activation with the healthy follower: %+v, activated %v", res, q.Activated)
	}
}

// A certificate speaks for the replica set when it names every replica,
// as owners of earlier versions always did, or every replica not lost;
// one that leaves out a healthy replica is refused.
func TestACertificateMayLeaveOutOnlyLostReplicas(t *testing.T) {
	s := activeQueue()
	certify := func(cut uint64, members ...NodeID) result {
		q := s.queues["q"]
		return applyAll(s, command{kind: cmdCertifyCheckpoint, name: "q", inc: 7, epoch: q.Epoch, node: q.Owner, cut: cut, members: members})
	}
	if res := certify(10, 2, 3); res.ok {
		t.Fatal("a certificate without the healthy replica 1 was taken")
	}
	if res := certify(10, 1, 2, 3); !res.ok || s.queues["q"].CheckpointCut != 10 {
		t.Fatalf("a certificate naming every replica: %+v, cut %d", res, s.queues["q"].CheckpointCut)
	}
	applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 3})
	if res := certify(20, 1, 2); !res.ok || s.queues["q"].CheckpointCut != 20 {
		t.Fatalf("a certificate without the lost replica 3: %+v, cut %d", res, s.queues["q"].CheckpointCut)
	}
	if res := certify(30, 2, 3, 1); !res.ok || s.queues["q"].CheckpointCut != 30 {
		t.Fatalf("a certificate naming every replica, the lost one too: %+v, cut %d", res, s.queues["q"].CheckpointCut)
	}
	if res := certify(40, 2); res.ok {
		t.Fatal("a certificate without the healthy replica 1 was taken while 3 is lost")
	}
}

// A lost report names a replica of a queue that exists: one for a queue
// never made, or deleted since the replica fenced itself, is refused and
// changes nothing.
func TestALostReportForAQueueThatIsGoneIsRefused(t *testing.T) {
	s := activeQueue()
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "nowhere", inc: 7, node: 3}); res.ok {
		t.Fatal("a replica of a queue never made was recorded lost")
	}
	applyAll(s, command{kind: cmdDelete, name: "q", inc: 7})
	if res := applyAll(s, command{kind: cmdReplicaLost, name: "q", inc: 7, node: 3}); res.ok {
		t.Fatal("a replica of a deleted queue was recorded lost")
	}
}
