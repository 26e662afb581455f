package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
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
