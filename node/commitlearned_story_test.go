package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A voter is removed: the leader promotes the learner that joined to
// take its seat, then demotes the removed voter, and the demotion is
// committed by the leader, the removed voter and the promoted learner.
// The promoted member never hears that it was (its commit stays below
// the demotion), the third voter was cut off all along, and the demoted
// member receives entries after the demotion that nobody else does.
// Then the leader dies for good. Both voters left count the demoted
// member as a voter, as their commit indexes say, and need three votes
// of four; the demoted member refuses both, its uncommitted tail longer
// than their logs. Raft alone would never elect a leader again (seed
// 712932, where the leader came back over an empty disk instead). The
// demoted member tells the candidate that asks for its vote that its
// log is committed through the demotion; the candidate holds that entry,
// applies the demotion, and wins with the third voter's vote, as voters
// {leader, third, promoted} allow.
func TestACandidateLearnsFromAPeerThatItsConfigurationChanged(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	others := othersThan(lead)
	removed, third := others[0], others[1]
	promoted := c.startJoiner(4).id
	c.request(lead, 9, &wire.AddNode{ReqID: 71, Node: uint32(promoted), Addr: "n4:7400"})
	c.advance(time.Second)
	c.mustReply(71, wire.StatusOK)

	// From here the third voter hears nothing, and the promoted member
	// hears no commit at or past the demotion of removed.
	c.cut[third] = true
	var demotion uint64
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if from != lead || to != promoted {
			return true
		}
		rewriteRaft(t, msg, func(m *pb.Message) {
			for _, e := range m.GetEntries() {
				if demotes(t, e, removed) && demotion == 0 {
					demotion = e.GetIndex()
				}
			}
			if demotion != 0 && m.GetCommit() >= demotion {
				m.Commit = new(demotion - 1)
			}
		})
		return true
	}
	c.request(lead, 9, &wire.RemoveNode{ReqID: 72, Node: uint32(removed)})
	for i := 0; i < 100 && !c.saw(event.MetaMembership, by(removed), demoted(removed)); i++ {
		c.advance(20 * time.Millisecond)
	}
	if !c.saw(event.MetaMembership, by(removed), demoted(removed)) {
		t.Fatalf("%s never applied its own demotion; events:\n%v", removed, c.events)
	}
	if c.saw(event.MetaMembership, by(promoted), demoted(removed)) {
		t.Fatalf("%s applied the demotion of %s although no commit told it", promoted, removed)
	}

	// Entries after the demotion reach only the demoted member: nothing
	// more commits, and its log outgrows the promoted member's.
	previous := c.intercept
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if from == lead && to == promoted && raftType(t, msg) == pb.MessageType_MsgApp {
			return false
		}
		return previous(from, to, msg)
	}
	c.request(lead, 9, &wire.CreateQueue{ReqID: 73, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(300 * time.Millisecond)
	c.node(lead).crash()
	c.intercept = nil
	delete(c.cut, third)
	leaderships := c.leaderships()
	c.advance(10 * time.Second)

	if c.leaderships() == leaderships {
		t.Fatalf("no metadata leader was elected after %s died; events:\n%v", lead, c.events)
	}
	if !c.saw(event.MetaCommitLearned, by(promoted), func(e emission) bool { return e.Commit() >= demotion }) {
		t.Fatalf("%s never learned that the demotion at %d was committed; events:\n%v", promoted, demotion, c.events)
	}
	winner := c.leader()
	if winner != promoted && winner != third {
		t.Fatalf("%s leads, not one of the voters {%s, %s} left", winner, promoted, third)
	}
	c.checkVoterFloor()
}

// rewriteRaft lets change edit msg if it carries a raft message, and
// puts the edited message in its place.
func rewriteRaft(t *testing.T, msg wire.Message, change func(*pb.Message)) {
	r, ok := msg.(*wire.Raft)
	if !ok {
		return
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(r.Data, m); err != nil {
		t.Fatalf("a raft message does not decode: %v", err)
	}
	change(m)
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("re-encoding a raft message: %v", err)
	}
	r.Data = data
}

// demotes reports whether e is the configuration change that makes id a
// learner.
func demotes(t *testing.T, e *pb.Entry, id node.NodeID) bool {
	if e.GetType() != pb.EntryType_EntryConfChange {
		return false
	}
	cc := &pb.ConfChange{}
	if err := proto.Unmarshal(e.GetData(), cc); err != nil {
		t.Fatalf("a configuration change does not decode: %v", err)
	}
	return cc.GetType() == pb.ConfChangeType_ConfChangeAddLearnerNode && cc.GetNodeId() == uint64(id)
}

// demoted matches a membership event that demotes id.
func demoted(id node.NodeID) func(emission) bool {
	return func(e emission) bool { return e.Kind() == "demote" && e.Node() == uint32(id) }
}

// A follower holds entries its leader committed, but never heard the
// commit, and the leader dies. A peer's word that the log is committed
// through the follower's last entry is taken only for the entry the
// follower holds: named with another term it moves nothing, named with
// the follower's own term the follower applies the entries; and a member
// that hears from a leader takes the leader's word alone.
func TestACommitIsLearnedOnlyForTheEntryThisLogHolds(t *testing.T) {
	c := newCluster(t)
	lead := c.leader()
	others := othersThan(lead)
	f, peer := c.node(others[0]), others[1]
	frozen := uint64(0)
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if from != lead || to != f.id {
			return true
		}
		rewriteRaft(t, msg, func(m *pb.Message) {
			if frozen == 0 {
				frozen = max(m.GetCommit(), 1)
			}
			m.Commit = new(min(m.GetCommit(), frozen))
		})
		return true
	}
	c.request(lead, 9, &wire.CreateQueue{ReqID: 70, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	var last, term uint64
	for _, e := range c.emitted {
		if e.Name == event.MetaApplied && e.node == lead {
			last, term = e.Index(), e.Term()
		}
	}
	if last <= frozen {
		t.Fatalf("the leader applied nothing past the follower's commit %d; events:\n%v", frozen, c.events)
	}

	// While the leader lives, the follower follows only it.
	tell := func(index, term uint64) {
		f.run(func() { f.n.OnMessage(peer, &wire.MetaCommitted{Index: index, Term: term}) })
		c.settle()
	}
	tell(last, term)
	if c.saw(event.MetaCommitLearned, by(f.id)) {
		t.Fatalf("%s took a commit from %s while its leader %s was alive", f.id, peer, lead)
	}
	c.node(lead).crash()
	c.cut[peer] = true
	c.advance(2 * time.Second) // the follower finds its leader gone and campaigns, alone
	tell(last, term+1)
	if c.saw(event.MetaCommitLearned, by(f.id)) {
		t.Fatalf("%s took a commit for an entry of term %d its log does not hold", f.id, term+1)
	}
	tell(last, term)
	if !c.saw(event.MetaCommitLearned, by(f.id), func(e emission) bool { return e.Commit() == last }) {
		t.Fatalf("%s did not take the commit %d its log holds at term %d; events:\n%v", f.id, last, term, c.events)
	}
	if !c.saw(event.MetaApplied, by(f.id), func(e emission) bool { return e.Index() == last }) {
		t.Fatalf("%s learned the commit %d but did not apply it", f.id, last)
	}
}
