package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/event"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// adoptSnapshotState takes the state machine and raft configuration of a
// snapshot this member loaded or installed. A snapshot written before the
// metadata recorded members takes them from raft's configuration.
func (m *metaNode) adoptSnapshotState(state *metaState, s *pb.Snapshot) {
	cs := s.GetMetadata().GetConfState()
	if len(state.members) == 0 {
		state.members = membersFromConf(cs)
		for _, mem := range state.members {
			state.lastMember = max(state.lastMember, mem.ID)
		}
	}
	m.state, m.snapIdx = state, s.GetMetadata().GetIndex()
	m.conf = proto.CloneOf(cs)
	if m.conf == nil {
		m.conf = &pb.ConfState{}
	}
}

// startJoining starts a member that joins a running cluster: it has no
// metadata and no configuration, and waits, as a node raft knows nothing
// of, for the leader to send it a snapshot once the cluster has admitted
// it. It never bootstraps: a second bootstrap would found a second
// cluster.
func (m *metaNode) startJoining(done func()) {
	m.state = newMetaState(m.n.cfg.Detection)
	m.conf = &pb.ConfState{}
	m.logDir = "log.1"
	m.ms, m.snapMembers = raft.NewMemoryStorage(), nil
	var err error
	if m.log, err = m.openLog(1); err != nil {
		m.n.env.Halt(fmt.Sprintf("opening the metadata log to join: %v", err))
		return
	}
	m.start()
	done()
}

// isVoter reports whether this node votes in the metadata group as its
// applied configuration stands.
func (m *metaNode) isVoter() bool {
	for _, id := range m.conf.GetVoters() {
		if NodeID(id) == m.n.cfg.ID {
			return true
		}
	}
	return false
}

// applyConfChange applies a committed membership command. The state
// machine decides; raft's configuration then changes exactly as the
// member list did, or not at all (a zero node ID is raft's no-op), so
// the two never disagree.
func (m *metaNode) applyConfChange(index uint64, data []byte) {
	cc := &pb.ConfChange{}
	if err := proto.Unmarshal(data, cc); err != nil {
		panic(fmt.Sprintf("node: committed configuration change %d does not decode: %v", index, err))
	}
	c, err := decodeCommand(cc.GetContext())
	if err != nil || !isConfChange(c.kind) {
		panic(fmt.Sprintf("node: committed configuration change %d carries no membership command (%v)", index, err))
	}
	res := m.state.apply(index, c)
	change := &pb.ConfChange{NodeId: new(uint64(0))}
	if res.conf {
		change = confChange(c)
	}
	m.conf = m.rn.ApplyConfChange(change)
	if want := confStateOf(m.state.members); !sameConf(m.conf, want) {
		panic(fmt.Sprintf("node: raft configuration %v disagrees with the members %v after entry %d", m.conf, want, index))
	}
	if c.from.Node == m.n.cfg.ID {
		m.confPending = false
	}
	m.n.onMembershipApplied(c, res)
	if c.from.Node == m.n.cfg.ID {
		m.finishProposal(c.from, res)
	}
}

// sameConf compares two configurations' voters and learners.
func sameConf(a, b *pb.ConfState) bool {
	return slices.Equal(a.GetVoters(), b.GetVoters()) && slices.Equal(a.GetLearners(), b.GetLearners())
}

// proposeMembership submits a membership command: a configuration change
// for all but a leave, which is an ordinary command.
func (m *metaNode) proposeMembership(c command, timeoutTicks uint64, done func(result)) {
	if !isConfChange(c.kind) {
		m.propose(c, timeoutTicks, done)
		return
	}
	if m.rn == nil {
		done(result{detail: "metadata is starting", dropped: true})
		return
	}
	m.seq++
	c.from = proposalID{Node: m.n.cfg.ID, Seq: m.seq}
	cc := confChange(c)
	cc.Context = encodeCommand(c)
	if err := m.rn.ProposeConfChange(cc); err != nil {
		done(result{detail: "no metadata leader: " + err.Error(), dropped: true})
		return
	}
	m.confPending = true
	m.proposals[c.from] = &proposal{done: func(res result) {
		m.confPending = false
		done(res)
	}, deadline: m.ticks + timeoutTicks}
	m.process()
}

// emitMembership reports an applied membership command.
func (m *metaNode) emitMembership(c command, res result) {
	kind := membershipKinds[c.kind]
	if !res.ok {
		m.n.emit(event.NewMetaMembershipRefused(kind, uint32(c.node), res.detail))
		return
	}
	m.n.emit(event.NewMetaMembership(kind, uint32(c.node), nodeNumbers(m.state.voters()), nodeNumbers(m.state.learners()),
		m.state.largestReplicaSet()))
}

// snapshotMissesMember reports whether the configuration names a member
// the snapshot raft holds does not. A node that joins starts with an
// empty log, so the leader catches it up with that snapshot, and raft
// refuses to restore a snapshot whose configuration leaves the node out:
// until the next periodic snapshot the leader would resend the old one
// without end and the new member would never catch up.
func (m *metaNode) snapshotMissesMember() bool {
	if m.snapMembers == nil {
		s, err := m.ms.Snapshot()
		if err != nil {
			return false
		}
		cs := s.GetMetadata().GetConfState()
		m.snapMembers = append(slices.Clone(cs.GetVoters()), cs.GetLearners()...)
		if m.snapMembers == nil {
			m.snapMembers = []uint64{} // read, and empty: a storage with no snapshot yet
		}
	}
	for _, id := range m.conf.GetVoters() {
		if !slices.Contains(m.snapMembers, id) {
			return true
		}
	}
	for _, id := range m.conf.GetLearners() {
		if !slices.Contains(m.snapMembers, id) {
			return true
		}
	}
	return false
}
