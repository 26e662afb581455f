package node

import (
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// clusterNodes lists the cluster's members in ID order: the metadata's
// list once it has one, else the configured nodes (a node whose metadata
// is still starting).
func (n *Node) clusterNodes() []NodeID {
	if n.hasMembers() {
		return n.meta.state.memberIDs()
	}
	return slices.Sorted(slices.Values(n.cfg.Nodes))
}

// hasMembers reports whether this node's metadata holds a member list:
// not while it is starting, nor on a joining node before its snapshot.
func (n *Node) hasMembers() bool {
	return n.meta != nil && n.meta.state != nil && len(n.meta.state.members) > 0
}

// placement places new queues on the members that are not leaving.
func (n *Node) placement() Placement {
	if n.hasMembers() {
		return Placement{Nodes: n.meta.state.placeable(), Replicas: n.cfg.Replicas}
	}
	return Placement{Nodes: slices.Sorted(slices.Values(n.cfg.Nodes)), Replicas: n.cfg.Replicas}
}

// placesBlind reports whether this node would place a new queue without
// knowing the cluster's members: it joins the cluster and the metadata
// leader's snapshot, which brings the member list, has not arrived. Its
// configured node list then holds little more than itself, and a queue
// placed on it gets fewer replicas than the replication factor, for
// good: nothing adds the missing ones later (seed 178414: a joining node
// placed the dead-letter queue on itself alone, and that queue never
// served).
func (n *Node) placesBlind() bool { return n.cfg.Join && !n.hasMembers() }

// newQueuePlacement places a new queue as placement does, but on nodes
// the metadata does not hold down, as long as enough of those are left
// for a replica set: a queue placed on a down node waits for it to come
// back before it serves (a policy-all queue's creation needs every
// replica prepared) or starts without the redundancy it asked for.
func (n *Node) newQueuePlacement() Placement {
	p := n.placement()
	if !n.hasMembers() {
		return p
	}
	up := slices.DeleteFunc(slices.Clone(p.Nodes), func(id NodeID) bool { return n.meta.state.down[id] })
	if len(up) >= p.Replicas {
		p.Nodes = up
	}
	return p
}

// isLeaving reports whether the metadata marks id as leaving.
func (n *Node) isLeaving(id NodeID) bool {
	m := n.meta.state.member(id)
	return m != nil && m.Leaving
}

// Members returns the cluster's members as this node's applied metadata
// knows them, in ID order. Call it from the node's goroutine.
func (n *Node) Members() []wire.MemberInfo {
	if n.meta == nil || n.meta.state == nil {
		return nil
	}
	s := n.meta.state
	out := make([]wire.MemberInfo, len(s.members))
	for i, m := range s.members {
		out[i] = wire.MemberInfo{
			ID: uint32(m.ID), Addr: m.Addr, ClientAddr: m.ClientAddr, HTTPAddr: m.HTTPAddr, Voter: !m.Learner, Leaving: m.Leaving, Down: s.down[m.ID],
			Replicas: uint32(s.replicasOn(m.ID)),
		}
	}
	return out
}

// MemberRecords returns the members as this node's applied metadata
// records them, in ID order, or nil before it has metadata. It is cheap,
// unlike Members, which counts every member's replicas: the production
// runtime polls it to keep a link with every member. Call it from the
// node's goroutine.
func (n *Node) MemberRecords() []Member {
	if n.meta == nil || n.meta.state == nil {
		return nil
	}
	return slices.Clone(n.meta.state.members)
}

// onMembershipApplied reacts to an applied membership command on every
// node: the failure detector follows the member list, and a node marked
// leaving hands its queues away.
func (n *Node) onMembershipApplied(c command, res result) {
	n.meta.emitMembership(c, res)
	if !res.ok {
		return
	}
	if n.detector != nil {
		n.detector.followMembers(n.clusterNodes())
	}
	if c.kind == cmdLeave && c.node == n.cfg.ID {
		n.drainIfLeaving()
	}
	n.reconcileAll()
	n.planFailovers()
}

// drainIfLeaving starts handing every queue this node owns to another
// replica once the metadata marks it leaving. The drain goes on at each
// lifecycle pass, so a handoff that was given up is tried again.
func (n *Node) drainIfLeaving() {
	if n.started && n.drainFor == 0 && n.isLeaving(n.cfg.ID) {
		n.DrainOwned(0)
	}
}

// onAddNode admits a node to the cluster as a learner.
func (n *Node) onAddNode(conn ConnID, m *wire.AddNode) {
	if m.Node == 0 || m.Addr == "" {
		n.reply(conn, m.ReqID, wire.StatusBadRequest, fmt.Sprintf("invalid node to add (node %d at %q): want a node ID above 0 and its address", m.Node, m.Addr))
		return
	}
	n.proposeMembershipFor(conn, m.ReqID, command{kind: cmdAddMember, node: NodeID(m.Node), addr: m.Addr, clientAddr: m.ClientAddr, httpAddr: m.HTTPAddr})
}

// onRemoveNode marks a node leaving; the metadata leader does the rest.
func (n *Node) onRemoveNode(conn ConnID, m *wire.RemoveNode) {
	n.proposeMembershipFor(conn, m.ReqID, command{kind: cmdLeave, node: NodeID(m.Node)})
}

// proposeMembershipFor proposes a membership command for a client and
// answers it with the outcome.
func (n *Node) proposeMembershipFor(conn ConnID, reqID uint64, c command) {
	n.meta.proposeMembership(c, 2*lifecycleTimeoutTicks, func(res result) {
		switch {
		case res.ok:
			n.reply(conn, reqID, wire.StatusOK, "")
		case res.refused:
			n.reply(conn, reqID, wire.StatusBadRequest, res.detail)
		case res.dropped:
			n.reply(conn, reqID, wire.StatusUnavailable, res.detail)
		}
		// A proposal that timed out gets no answer: it may still apply,
		// and the client reports the outcome as unknown.
	})
}

// onMemberList answers with the members, once a ReadIndex shows this
// node has applied every change committed before the question: a list
// read right after a change that another node answered shows it. When
// the read cannot be confirmed (no leader), the node's own view is
// answered, and Detail says so.
func (n *Node) onMemberList(conn ConnID, m *wire.MemberList) {
	if !n.hasMembers() {
		n.env.Reply(conn, &wire.MemberListReply{ReqID: m.ReqID, Status: wire.StatusUnavailable, Detail: "metadata is starting"})
		return
	}
	n.meta.readIndex(func(fresh bool) {
		detail := ""
		if !fresh {
			detail = "not confirmed with the metadata leader: this node's own view"
		}
		n.env.Reply(conn, &wire.MemberListReply{ReqID: m.ReqID, Status: wire.StatusOK, Detail: detail, Leader: uint32(n.meta.leader), Members: n.Members()})
	})
}

// manageMembership runs on the metadata leader at each planning pass and
// proposes at most one configuration change, since raft takes one at a
// time. In order: a learner takes a voter's seat when the group has
// fewer voters than it wants, or when a voter is leaving or has been
// down for Config.ReplaceAfter; a voter beyond what the group wants that
// is leaving or down steps back to learner; a leaving member that holds
// no replica leaves. No change leaves fewer voters than the floor.
func (n *Node) manageMembership() {
	m := n.meta
	if !m.isLeader() || m.confPending || len(m.state.members) == 0 {
		return
	}
	s := m.state
	if n.handLeadershipAway() {
		return
	}
	voters, wanted := len(s.voters()), wantedVoters(s.staying())
	retiring := n.retiringVoter()
	if bugs.Active(bugs.RemoveVoterWithoutReplacement) && retiring != 0 && n.isLeaving(retiring) {
		// Planted: a leaving voter gets no successor; it is removed as
		// soon as its queues are gone.
		retiring = 0
	}
	grow := voters < wanted && !bugs.Active(bugs.LearnersStayLearners)
	if grow || (retiring != 0 && voters <= wanted) {
		if learner := n.promotableLearner(); learner != 0 {
			m.proposeMembership(command{kind: cmdPromote, node: learner}, lifecycleTimeoutTicks, func(result) {})
			return
		}
	}
	if retiring != 0 && voters-1 >= voterFloor(len(s.members)) {
		m.proposeMembership(command{kind: cmdDemote, node: retiring}, lifecycleTimeoutTicks, func(result) {})
		return
	}
	for _, mem := range s.members {
		if !mem.Leaving || s.replicasOn(mem.ID) > 0 {
			continue
		}
		if !mem.Learner && s.refuseRemoval(&mem, voters) != "" {
			continue // it keeps its seat until a learner can take it
		}
		m.proposeMembership(command{kind: cmdRemoveMember, node: mem.ID}, lifecycleTimeoutTicks, func(result) {})
		return
	}
}

// retiringVoter is the first voter that is leaving or has been confirmed
// down for Config.ReplaceAfter, or 0.
func (n *Node) retiringVoter() NodeID {
	for _, mem := range n.meta.state.members {
		// Planted: a leaving voter retires only once it is down too.
		leaving := mem.Leaving && !bugs.Active(bugs.LeavingVoterKeepsSeat)
		if !mem.Learner && mem.ID != n.cfg.ID && (leaving || n.downForReplaceAfter(mem.ID)) {
			return mem.ID
		}
	}
	return 0
}

// promotableLearner is the lowest learner that stays, is up, and has
// caught up with the leader's log, or 0: promoting a learner that lags
// would make every commit wait for it.
func (n *Node) promotableLearner() NodeID {
	m := n.meta
	st := m.rn.Status()
	last := m.rn.BasicStatus().HardState.GetCommit()
	for _, mem := range m.state.members {
		if !mem.Learner || mem.Leaving || m.state.down[mem.ID] {
			continue
		}
		if pr, ok := st.Progress[uint64(mem.ID)]; ok && pr.Match+metaLearnerLagMax >= last {
			return mem.ID
		}
	}
	return 0
}

// metaLearnerLagMax is how many entries a learner may trail the leader's
// commit index and still be promoted.
const metaLearnerLagMax = 16

// followMembers makes the detector watch exactly the cluster's other
// members: a new member is presumed alive as of now, and a removed one
// is forgotten.
func (d *detector) followMembers(members []NodeID) {
	kept := d.watches[:0]
	for _, w := range d.watches {
		if slices.Contains(members, w.id) {
			kept = append(kept, w)
		}
	}
	d.watches = kept
	for _, id := range members {
		if id != d.n.cfg.ID && d.watchOf(id) == nil {
			d.watches = append(d.watches, &watch{id: id, lastHeard: d.ticks})
		}
	}
	slices.SortFunc(d.watches, func(a, b *watch) int { return int(a.id) - int(b.id) })
}

// handLeadershipAway transfers the metadata leadership from a leader the
// metadata marks leaving, or one draining its queues before it stops, to
// the most caught-up other voter that stays, so the leader's own seat can
// go; it reports whether it did. A voter that is leaving too would only
// hand the leadership back: two leaving voters passed it to and fro every
// few ticks, and the group committed nothing meanwhile. A draining leader
// that kept the leadership would cost the group an election when it
// stops, and meanwhile, busy with its handoffs, it took its peers for
// dead and planned their queues' recoveries onto itself.
//
// A draining leader tries once: a target that does not take the
// leadership within raft's transfer window (it may be stopping too) would
// otherwise hold the drain's handoffs back until the shutdown's bound,
// and the leader hands its queues off as leader instead.
func (n *Node) handLeadershipAway() bool {
	m := n.meta
	leaving := n.isLeaving(n.cfg.ID)
	if !leaving && (n.drainFor == 0 || n.drainLeaderTried) {
		return false
	}
	target := m.mostCaughtUpVoter(func(id NodeID) bool {
		_, broken := n.resetAt[id]
		return !m.state.down[id] && !n.isLeaving(id) && !broken
	})
	if target == 0 {
		return false
	}
	if !leaving {
		n.drainLeaderTried = true
	}
	m.rn.TransferLeader(uint64(target))
	m.process()
	return true
}
