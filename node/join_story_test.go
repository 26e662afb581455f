package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestJoiningNodeGetsASnapshotThatNamesIt adds a fourth node to a cluster
// that has taken no metadata snapshot since it was founded. The joining
// node's log is empty, so the leader catches it up with a snapshot, and
// raft restores only a snapshot whose configuration names the receiver:
// the bootstrap snapshot does not, and sent alone it was refused forever,
// so the node never received the metadata. Every member now snapshots
// the entry that adds a member.
func TestJoiningNodeGetsASnapshotThatNamesIt(t *testing.T) {
	c := newCluster(t)
	// A refused snapshot is sent again at once, and refused again: past
	// a bound the messages to the joiner are dropped, so the story ends
	// and says what went wrong instead of spinning.
	sent := 0
	c.intercept = func(_, to node.NodeID, _ wire.Message) bool {
		if to == 4 {
			sent++
		}
		return sent < 1000
	}
	joiner := c.startJoiner(4)
	c.advance(time.Second)
	if got := joiner.n.Members(); len(got) != 0 {
		t.Fatalf("the joining node knows members %+v before it was added", got)
	}
	c.request(1, 7, &wire.AddNode{ReqID: 1, Node: 4, Addr: "n4:7104"})
	c.advance(2 * time.Second)
	if r := c.reply(1); r == nil || r.Status != wire.StatusOK {
		t.Fatalf("AddNode answered %+v, want OK", r)
	}
	got := joiner.n.Members()
	if len(got) != 4 || got[3].ID != 4 || got[3].Voter || got[3].Addr != "n4:7104" {
		t.Fatalf("the joining node's members %+v, want nodes 1 to 4, node 4 a learner at n4:7104", got)
	}
	if recs := joiner.n.MemberRecords(); len(recs) != 4 || !recs[3].Learner || recs[3].Addr != "n4:7104" {
		t.Errorf("the joining node's member records %+v disagree with its members", recs)
	}
	for _, mem := range got[:3] {
		if !mem.Voter {
			t.Errorf("founder %d is not a voter: %+v", mem.ID, got)
		}
	}
}

// A node admitted to the cluster takes a create before the leader's
// snapshot, which brings it the member list, has reached it (here the
// snapshot is held back; in the simulator the metadata had no leader for
// seconds). Its own node list names only itself, so a queue it placed
// would get one replica where three were asked for, and nothing ever adds
// the others. It sends the client away instead; once the snapshot is in,
// it places the queue on three members.
func TestAJoiningNodePlacesNoQueueBeforeItKnowsTheMembers(t *testing.T) {
	c := newCluster(t)
	snapshots := false
	c.intercept = func(_, to node.NodeID, msg wire.Message) bool {
		r, ok := msg.(*wire.Raft)
		if !ok || to != 4 || snapshots {
			return true
		}
		m := &raftpb.Message{}
		return proto.Unmarshal(r.Data, m) != nil || m.GetType() != raftpb.MessageType_MsgSnap
	}
	joiner := c.startJoiner(4)
	c.request(1, 7, &wire.AddNode{ReqID: 1, Node: 4, Addr: "n4:7104"})
	c.advance(2 * time.Second)
	c.mustReply(1, wire.StatusOK)
	if got := joiner.n.Members(); len(got) != 0 {
		t.Fatalf("the joining node knows members %+v without the snapshot", got)
	}
	if leader, _ := joiner.n.MetaLeader(); leader == 0 {
		t.Fatal("the joining node knows no metadata leader: its create could not be proposed anyway")
	}
	c.request(4, 9, &wire.CreateQueue{ReqID: 2, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(time.Second)
	for _, v := range c.node(1).n.Queues() {
		t.Fatalf("queue %s was placed on %v by a node that knows no members", v.Name, v.Replicas)
	}
	c.mustReply(2, wire.StatusUnavailable)

	snapshots = true
	c.advance(2 * time.Second)
	c.request(4, 9, &wire.CreateQueue{ReqID: 3, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(time.Second)
	c.mustReply(3, wire.StatusOK)
	if vs := c.node(1).n.Queues(); len(vs) != 1 || len(vs[0].Replicas) != 3 {
		t.Fatalf("the queue's replicas %+v, want three", vs)
	}
}
