package node_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A handoff names its target owner of the next epoch, and the target
// claims that epoch; before the claim commits, the metadata leader plans
// the replacement of a replica that has been down for ReplaceAfter, into
// the epoch after, led by the same target. The claim is refused, since
// the epoch it names is gone. The apply of the replacement's plan asked
// the target to claim the new epoch while its first claim was still out,
// so the target claims it as soon as the refusal comes, not a lifecycle
// period later. Seed 283854 of the long sweep: n1 was refused just after
// a periodic reconcile, claimed the replacement's epoch 200 ms later, and
// the lost replica of dl was restored past the redundancy bound.
//
// The story holds the target's forward of its claim to the leader until
// the leader has planned the replacement, so that the plan commits
// before the claim (the copies the target forwards again meanwhile are
// lost); then it hands the forward over and lets the cluster settle
// without moving the clock.
func TestATargetWhoseClaimAReplacementOvertookClaimsTheNextEpochAtOnce(t *testing.T) {
	nodes := []node.NodeID{1, 2, 3, 4, 5}
	// Without checkpoints the handoff's plan names no process of the
	// target, which therefore claims its epoch.
	c := newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		ReplaceAfter: 2 * time.Second, CheckpointRecords: -1})
	leader := c.leader()
	// A queue whose owner's followers are not the leader: one is the
	// handoff's target, whose forward of its claim to the leader is held,
	// and the other dies.
	var name string
	var set []node.NodeID
	for i := 0; name == ""; i++ {
		candidate := fmt.Sprintf("orders-%d", i)
		set = node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet(candidate)
		if !slices.Contains(set[1:], leader) {
			name = candidate
		}
	}
	owner, target, dead := set[0], set[1], set[2]
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: name, Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	c.publishConfirmed(owner, name, 3)

	c.node(dead).crash()
	for start := c.now; !c.saw(event.MetaNodeDown, by(leader)); {
		c.advance(10 * time.Millisecond)
		if c.now.Sub(start) > 5*time.Second {
			t.Fatalf("the leader n%d did not record the crashed n%d down; events:\n%v", leader, dead, c.events)
		}
	}
	// The replacement falls due 2 s after the leader held the node down;
	// the handoff starts shortly before.
	c.advance(1700 * time.Millisecond)

	holdAt := c.now
	since := func(e emission) bool { return !e.at.Before(holdAt) }
	var held wire.Message
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		if !isProposal(t, m) || from != target || to != leader {
			return true
		}
		if held == nil {
			held = m
		}
		return false
	}
	c.request(owner, 9, &wire.MoveOwner{ReqID: 40, Queue: name, To: uint32(target)})
	for start := c.now; !c.saw(event.QueueClaim, onQueue(name), inEpoch(2), by(target)); {
		c.advance(10 * time.Millisecond)
		if c.now.Sub(start) > 500*time.Millisecond {
			t.Fatalf("the target n%d did not claim the handoff's epoch 2; events:\n%v", target, c.events)
		}
	}
	for start := c.now; !c.saw(event.MetaPlanReplace, onQueue(name), by(leader)); {
		c.advance(10 * time.Millisecond)
		if c.now.Sub(start) > time.Second {
			t.Fatalf("the leader n%d planned no replacement of n%d; events:\n%v", leader, dead, c.events)
		}
	}
	c.advance(50 * time.Millisecond) // the plan commits and the target applies it
	if c.saw(event.MetaProposalFailed, onQueue(name), by(target), since) {
		t.Fatalf("the target's claim ended before its messages were handed over; events:\n%v", c.events)
	}

	c.intercept = nil
	l := c.node(leader)
	l.run(func() { l.n.OnMessage(target, held) })
	c.settle()
	if !c.saw(event.MetaProposalFailed, onQueue(name), by(target), since) {
		t.Fatalf("the target's claim of epoch 2 was not refused; events:\n%v", c.events)
	}
	if !c.saw(event.QueueClaim, onQueue(name), inEpoch(3), by(target)) {
		t.Fatalf("the target n%d did not claim the replacement's epoch 3 once its claim of epoch 2 was refused; events:\n%v", target, c.events)
	}
	c.advance(time.Second)
	if !c.saw(event.MetaReplicaReplaced, onQueue(name)) {
		t.Fatalf("n%d's replica was not replaced; events:\n%v", dead, c.events)
	}
}

// isProposal reports whether m carries a proposal raft forwards from a
// follower to its leader.
func isProposal(t *testing.T, m wire.Message) bool {
	r, ok := m.(*wire.Raft)
	if !ok {
		return false
	}
	var msg pb.Message
	if err := proto.Unmarshal(r.Data, &msg); err != nil {
		t.Fatalf("a raft message does not decode: %v", err)
	}
	return msg.GetType() == pb.MessageType_MsgProp
}
