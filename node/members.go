package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Member is one node of the cluster as the metadata records it.
type Member struct {
	ID NodeID
	// Addr is where peers reach the node; empty for a founding member,
	// whose address every node's configuration holds. ClientAddr and
	// HTTPAddr are where clients and tools reach it, so a client learns
	// the way to a node that joined after it connected.
	Addr       string
	ClientAddr string
	HTTPAddr   string
	// Learner says the node receives the metadata but does not vote.
	Learner bool
	// Leaving says a removal is under way: nothing new is placed on the
	// node and its replicas move away; it leaves once it holds none.
	Leaving bool
}

// Membership command kinds. Each but cmdLeave travels as a raft
// configuration change, so the metadata group's voters and learners
// change at the same log position on every node as the member list.
const (
	cmdAddMember    uint8 = 14 // a new node joins as a learner
	cmdPromote      uint8 = 15 // a learner becomes a voter
	cmdDemote       uint8 = 16 // a voter becomes a learner
	cmdLeave        uint8 = 17 // a member starts leaving (a normal entry)
	cmdRemoveMember uint8 = 18 // a leaving member that holds nothing leaves
)

var membershipKinds = map[uint8]string{cmdAddMember: "add", cmdPromote: "promote", cmdDemote: "demote", cmdLeave: "leave", cmdRemoveMember: "remove"}

// isConfChange reports whether a command kind travels as a raft
// configuration change.
func isConfChange(kind uint8) bool {
	return kind == cmdAddMember || kind == cmdPromote || kind == cmdDemote || kind == cmdRemoveMember
}

// foundingMembers is the member list a cluster bootstraps with: every
// configured node, the first five by ID voters and the rest learners, so
// a large cluster does not make every node vote.
func foundingMembers(nodes []NodeID) []Member {
	ids := slices.Sorted(slices.Values(nodes))
	out := make([]Member, len(ids))
	for i, id := range ids {
		out[i] = Member{ID: id, Learner: i >= maxVoters}
	}
	return out
}

// maxVoters is the most voters the metadata group wants: five tolerate two
// failures, and more would only slow every commit.
const maxVoters = 5

// wantedVoters is how many voters a cluster of members wants: five from
// five members, else three from three, else all of them.
func wantedVoters(members int) int {
	switch {
	case members >= maxVoters:
		return maxVoters
	case members >= 3:
		return 3
	}
	return members
}

// voterFloor is the fewest voters a membership change may leave among
// members: three, or all of a smaller cluster. A change below it leaves
// the group one failure from losing its quorum while a member that could
// have voted stood by.
func voterFloor(members int) int { return min(3, members) }

// member returns the member with id, or nil.
func (s *metaState) member(id NodeID) *Member {
	i, ok := slices.BinarySearchFunc(s.members, id, func(m Member, id NodeID) int { return int(m.ID) - int(id) })
	if !ok {
		return nil
	}
	return &s.members[i]
}

// voters lists the metadata group's voters in ID order.
func (s *metaState) voters() []NodeID {
	var out []NodeID
	for _, m := range s.members {
		if !m.Learner {
			out = append(out, m.ID)
		}
	}
	return out
}

// learners lists the metadata group's learners in ID order.
func (s *metaState) learners() []NodeID {
	var out []NodeID
	for _, m := range s.members {
		if m.Learner {
			out = append(out, m.ID)
		}
	}
	return out
}

// memberIDs lists every member in ID order.
func (s *metaState) memberIDs() []NodeID {
	out := make([]NodeID, len(s.members))
	for i, m := range s.members {
		out[i] = m.ID
	}
	return out
}

// placeable lists the members new replicas may go to: all but those
// leaving, in ID order.
func (s *metaState) placeable() []NodeID {
	var out []NodeID
	for _, m := range s.members {
		if !m.Leaving {
			out = append(out, m.ID)
		}
	}
	return out
}

// unplaceable says why replicas, the replica set a command would give a
// queue, names a node that may take no new replica, or "": every node
// not in kept (the replicas the queue holds already) must be a member
// that is not leaving. A proposer places replicas on the members its
// applied metadata knows, but the command commits later: a leave or a
// removal ordered before it in the log must turn it down, on every node
// alike, or a queue would be placed on a node that is going or gone
// (a removed node holds no replica, and the queue would be a member
// short). A state without a member list, as some unit tests build,
// checks nothing.
func (s *metaState) unplaceable(replicas, kept []NodeID) string {
	if len(s.members) == 0 {
		return ""
	}
	for _, id := range replicas {
		if slices.Contains(kept, id) {
			continue
		}
		switch m := s.member(id); {
		case m == nil:
			return fmt.Sprintf("%s is not a member", id)
		case m.Leaving:
			return fmt.Sprintf("%s is leaving", id)
		}
	}
	return ""
}

// staying counts the members that are not leaving.
func (s *metaState) staying() int { return len(s.placeable()) }

// replicasOn counts the live queue replicas (current or prior set) the
// metadata places on id.
func (s *metaState) replicasOn(id NodeID) int {
	count := 0
	for _, name := range s.queueNames() {
		q := s.queues[name]
		if q.State != QueueDeleted && (slices.Contains(q.Replicas, id) || slices.Contains(q.Prior, id)) {
			count++
		}
	}
	return count
}

// largestReplicaSet is the size of the largest live queue's replica set.
func (s *metaState) largestReplicaSet() int {
	most := 0
	for _, name := range s.queueNames() {
		if q := s.queues[name]; q.State != QueueDeleted {
			most = max(most, len(q.Replicas))
		}
	}
	return most
}

// applyMembership applies a membership command. Its result's conf says
// the raft configuration changes with it; a refusal or a retry of a
// change already made leaves the configuration as it is.
func (s *metaState) applyMembership(c command) result {
	if why := s.refuseMembership(c); why != "" {
		return result{detail: why, refused: true}
	}
	m := s.member(c.node)
	switch c.kind {
	case cmdAddMember:
		if m != nil {
			return result{ok: true} // a retry: refuseMembership checked the address
		}
		i, _ := slices.BinarySearchFunc(s.members, c.node, func(m Member, id NodeID) int { return int(m.ID) - int(id) })
		s.members = slices.Insert(s.members, i, Member{ID: c.node, Addr: c.addr, ClientAddr: c.clientAddr, HTTPAddr: c.httpAddr, Learner: true})
		s.lastMember = max(s.lastMember, c.node)
	case cmdPromote:
		m.Learner = false
	case cmdDemote:
		m.Learner = true
	case cmdLeave:
		if m.Leaving {
			return result{ok: true} // a retry
		}
		m.Leaving = true
		return result{ok: true}
	case cmdRemoveMember:
		s.members = slices.DeleteFunc(s.members, func(m Member) bool { return m.ID == c.node })
		delete(s.down, c.node)
	}
	return result{ok: true, conf: true}
}

// refuseMembership says why a membership command may not apply, or "".
// The rules are checked here, where every node applies the same log, so
// a change the leader proposed on a stale view is refused everywhere
// alike.
func (s *metaState) refuseMembership(c command) string {
	m := s.member(c.node)
	if c.kind == cmdAddMember {
		switch {
		case m != nil && m.Addr == c.addr && m.ClientAddr == c.clientAddr && m.HTTPAddr == c.httpAddr:
			return ""
		case m != nil && m.Addr == "":
			return fmt.Sprintf("%s is a member already", c.node)
		case m != nil:
			return fmt.Sprintf("%s is a member already, at %q", c.node, m.Addr)
		case c.node <= s.lastMember:
			return fmt.Sprintf("%s is not above every ID the cluster has used (%d): a removed node's ID is never reused", c.node, s.lastMember)
		case len(s.members) >= wire.MaxMembers:
			return fmt.Sprintf("the cluster has %d members, the most it may have", len(s.members))
		}
		return ""
	}
	if m == nil {
		return fmt.Sprintf("%s is not a member", c.node)
	}
	voters := len(s.voters())
	switch c.kind {
	case cmdPromote:
		if !m.Learner || m.Leaving {
			return fmt.Sprintf("%s is not a learner that stays", c.node)
		}
	case cmdDemote:
		if m.Learner {
			return fmt.Sprintf("%s is a learner already", c.node)
		}
		if voters-1 < voterFloor(len(s.members)) {
			return fmt.Sprintf("demoting %s would leave %d voters among %d members", c.node, voters-1, len(s.members))
		}
	case cmdLeave:
		// Planted (the last condition): the replica count is not
		// consulted, only the voter floor below.
		if !m.Leaving && s.staying()-1 < s.largestReplicaSet() && !bugs.Active(bugs.LeaveIgnoresReplicas) {
			return fmt.Sprintf("the cluster would keep %d nodes, too few for a queue's %d replicas", s.staying()-1, s.largestReplicaSet())
		}
		// The voter floor shrinks with the cluster, so a leave must not
		// lower it: a cluster that shrank below three members votes with
		// two, one failure from losing its quorum, and a node added
		// afterwards joins as a learner below the floor the larger
		// cluster has. Without a queue to count, the rule above does not
		// stop that shrink.
		if !m.Leaving && s.staying()-1 < voterFloor(s.staying()) {
			return fmt.Sprintf("the cluster would keep %d nodes, fewer than the %d voters its metadata group needs", s.staying()-1, voterFloor(s.staying()))
		}
		// An owner-only queue's history lives on its owner alone: it
		// cannot be handed to another replica, so a leave would wait
		// for it for good.
		if name := s.ownerOnlyOwnedBy(m.ID); !m.Leaving && name != "" {
			return fmt.Sprintf("%s owns queue %s, which confirms on its owner alone and cannot move; delete the queue first", c.node, name)
		}
	case cmdRemoveMember:
		return s.refuseRemoval(m, voters)
	}
	return ""
}

// ownerOnlyOwnedBy names an owner-only queue that id owns, or is to own
// once its creation is done, or "". A queue still being created counts:
// it activates with the owner its creation named (seed 841670 of the
// long sweep: a leave applied while the queue was preparing, and its
// owner stayed leaving for good).
func (s *metaState) ownerOnlyOwnedBy(id NodeID) string {
	for _, name := range s.queueNames() {
		q := s.queues[name]
		if q.Owner == id && q.Policy == wire.PolicyOwnerOnly && q.State != QueueDeleted {
			return name
		}
	}
	return ""
}

// refuseRemoval says why leaving member m may not be removed yet, or "".
func (s *metaState) refuseRemoval(m *Member, voters int) string {
	switch {
	case !m.Leaving:
		return fmt.Sprintf("%s is not leaving", m.ID)
	case s.replicasOn(m.ID) > 0:
		return fmt.Sprintf("%s still holds %d queue replicas", m.ID, s.replicasOn(m.ID))
	case !m.Learner && voters-1 < voterFloor(len(s.members)-1) && !bugs.Active(bugs.RemoveVoterWithoutReplacement):
		// Planted (the last condition): a voter leaves although the group
		// falls below its floor.
		return fmt.Sprintf("removing voter %s would leave %d voters among %d members", m.ID, voters-1, len(s.members)-1)
	}
	return ""
}

// confChange is the raft configuration change an applied membership
// command makes.
func confChange(c command) *pb.ConfChange {
	var kind pb.ConfChangeType
	switch c.kind {
	case cmdAddMember, cmdDemote:
		kind = pb.ConfChangeType_ConfChangeAddLearnerNode
	case cmdPromote:
		kind = pb.ConfChangeType_ConfChangeAddNode
	case cmdRemoveMember:
		kind = pb.ConfChangeType_ConfChangeRemoveNode
	default:
		panic(fmt.Sprintf("node: command %d is no configuration change", c.kind))
	}
	return &pb.ConfChange{Type: kind.Enum(), NodeId: new(uint64(c.node))}
}

// membersFromConf is the member list of a snapshot written before the
// metadata recorded members: raft's configuration, without addresses.
func membersFromConf(cs *pb.ConfState) []Member {
	var out []Member
	for _, id := range cs.GetVoters() {
		out = append(out, Member{ID: NodeID(id)})
	}
	for _, id := range cs.GetLearners() {
		out = append(out, Member{ID: NodeID(id), Learner: true})
	}
	slices.SortFunc(out, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return out
}

// confStateOf is the raft configuration a member list describes.
func confStateOf(members []Member) *pb.ConfState {
	cs := &pb.ConfState{}
	for _, m := range members {
		if m.Learner {
			cs.Learners = append(cs.Learners, uint64(m.ID))
		} else {
			cs.Voters = append(cs.Voters, uint64(m.ID))
		}
	}
	return cs
}
