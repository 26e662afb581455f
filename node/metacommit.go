package node

import (
	"bytes"
	"fmt"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Members tell a candidate what they know to be committed.
//
// etcd raft takes a commit index only from a leader, and applies a
// configuration change only once it is committed. A member whose durable
// commit index lags its log (the hard state that carried a later one did
// not land before a crash) therefore counts votes by the configuration
// before the last change it holds. If the leader that committed the
// change is gone for good, that member may never win: seed 712932 left
// voters 2, 3 and 4 after n1's demotion to learner, n3 and n4 restarted
// with commits from before the demotion and counted n1 among four
// voters, n1 refused them both for its longer uncommitted tail, and the
// leader n2 came back over an empty disk, so no election could reach
// three votes. n1 knew the demotion was committed.
//
// So a member that is asked for its vote answers, beside raft's answer,
// with the index up to which it knows the candidate's log is committed:
// its own commit index, or the candidate's last index if that is lower,
// and the term of its entry there. A candidate without a leader that
// holds the same entry holds the same log up to it (raft's log matching)
// and raises its commit index to it. That is safe for the reason a
// leader's commit is: every entry up to a member's commit index is
// committed, so the candidate applies nothing that was not. It applies
// the configuration the group is in, counts votes by it, and wins with
// the votes of that configuration's live voters.

// learnedCommitContext marks the heartbeat learnCommit steps into raft,
// so that the answer raft addresses to the peer is not sent.
var learnedCommitContext = []byte("cairn: commit learned from a peer")

// tellCommitted answers a vote request with what this member knows to be
// committed of the candidate's log, when raft is about to refuse the
// vote for a longer log here: a member that grants its vote has helped
// the candidate already. A member that is catching up may have lost
// entries it acknowledged, and says nothing.
func (m *metaNode) tellCommitted(candidate NodeID, req *pb.Message) {
	if m.catchingUp || !m.logAhead(req.GetLogTerm(), req.GetIndex()) || bugs.Active(bugs.CommitNotTold) {
		return
	}
	index := min(m.rn.BasicStatus().GetCommit(), req.GetIndex())
	if index <= m.snapIdx {
		return // compacted into this member's snapshot: no entry is left to name
	}
	term, err := m.ms.Term(index)
	if err != nil {
		return // not durable here yet
	}
	m.n.env.Send(candidate, &wire.MetaCommitted{Index: index, Term: term})
}

// logAhead reports whether this member's durable log is more up to date
// than one ending at index with term, by raft's comparison of last
// entries.
func (m *metaNode) logAhead(term, index uint64) bool {
	last, err := m.ms.LastIndex()
	if err != nil {
		return false
	}
	lastTerm, err := m.ms.Term(last)
	if err != nil {
		return false
	}
	return lastTerm > term || (lastTerm == term && last > index)
}

// learnCommit raises this member's commit index to what peer reports
// committed, if this member has no leader to learn it from and its own
// durable log holds the same entry there. Raft has no call to set the
// commit index; a leader's heartbeat is how it learns one, so learnCommit
// steps one in for peer, at this member's term, and forgets peer as its
// leader again at once. The heartbeat's answer is not sent (see send).
func (m *metaNode) learnCommit(peer NodeID, msg *wire.MetaCommitted) {
	if m.rn == nil || m.busy || m.rn.HasReady() {
		// Raft may hold entries not yet durable here, which could replace
		// the one compared below; the candidate asks again.
		return
	}
	st := m.rn.BasicStatus()
	if st.RaftState == raft.StateLeader || st.Lead != 0 {
		return // a leader's word is the one to follow
	}
	if msg.Index <= st.GetCommit() {
		return // nothing this member does not know
	}
	if term, err := m.ms.Term(msg.Index); err != nil || term != msg.Term {
		return // this log does not hold the entry the peer counts
	}
	err := m.rn.Step(&pb.Message{
		Type: pb.MessageType_MsgHeartbeat.Enum(), From: new(uint64(peer)), To: new(uint64(m.n.cfg.ID)),
		Term: new(st.GetTerm()), Commit: new(msg.Index), Context: learnedCommitContext,
	})
	if commit := m.rn.BasicStatus().GetCommit(); err != nil || commit != msg.Index {
		panic(fmt.Sprintf("node: raft took a heartbeat at its own term to commit %d as commit %d (%v)", msg.Index, commit, err))
	}
	m.n.emit(event.NewMetaCommitLearned(uint32(peer), msg.Index))
	m.rn.ForgetLeader()
	m.process()
}

// isLearnedCommitAnswer reports whether msg is raft's answer to the
// heartbeat learnCommit stepped in, which no peer is waiting for.
func isLearnedCommitAnswer(msg *pb.Message) bool {
	return msg.GetType() == pb.MessageType_MsgHeartbeatResp && bytes.Equal(msg.GetContext(), learnedCommitContext)
}
