package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Membership changes. A scenario may run spare processes beside the
// founding nodes: each starts over an empty disk, configured to join a
// running cluster, and idles until an add-node fault has the first client
// ask the cluster to admit it. A remove-node fault asks the cluster to
// remove a member, founder or admitted spare: the node is marked leaving,
// hands off the queues it owns, its other replicas are replaced, and the
// metadata leader removes it once it holds none. A removed node's process
// keeps running, as a machine an operator has not yet switched off does.
// The swarm draws spares and changes for a share of the seeds from a
// stream of their own, so the other seeds draw what they drew before.

// streamMembership draws a generated scenario's spares, its membership
// changes and the crashes of its spares.
const streamMembership = "membership"

// MaxNodes bounds a scenario's processes, founders and spares together.
const MaxNodes = 16

// membershipFrom is when membership changes may start: after the queues
// are created and the producers have begun.
const membershipFrom = 1500 * time.Millisecond

// drawMembership gives a third of the generated scenarios one or two
// spares and two to six membership changes at drawn times in the safety
// phase. Spares are admitted in ID order (a new member's ID must exceed
// every ID the cluster used); each change is an add while a spare waits,
// or with even chance a removal of a drawn member, drawn only while the
// cluster would keep a queue's replica count of members that stay (a
// removal that would leave fewer is refused by the nodes). Each
// spare also crashes once with even chance, so that the learner a
// removal needs is sometimes down or behind; and half the scenarios ask
// for a rebalance at a drawn time.
func drawMembership(sc *Scenario) {
	r := newStream(sc.Seed, streamMembership)
	if r.IntN(3) != 0 || sc.Safety <= membershipFrom {
		return
	}
	sc.Spares = min(pick(r, 1, 1, 2), MaxNodes-sc.Nodes)
	times := make([]time.Duration, pick(r, 2, 3, 4, 6))
	for i := range times {
		times[i] = membershipFrom + time.Duration(r.Int64N(int64(sc.Safety-membershipFrom)))
	}
	slices.Sort(times)
	members := make([]int, sc.Nodes)
	for i := range members {
		members[i] = i
	}
	next, replicas := sc.Nodes, sc.ReplicaCount()
	for _, at := range times {
		f := Fault{At: at, Kind: FaultAddNode, Node: next}
		switch {
		case next < sc.Nodes+sc.Spares && (r.IntN(2) == 0 || len(members) <= replicas):
			members = append(members, next)
			next++
		case len(members) > replicas:
			i := r.IntN(len(members))
			f = Fault{At: at, Kind: FaultRemoveNode, Node: members[i]}
			members = slices.Delete(members, i, i+1)
		default:
			continue
		}
		sc.Faults = append(sc.Faults, f)
	}
	for i := sc.Nodes; i < sc.Nodes+sc.Spares; i++ {
		if r.IntN(2) == 0 {
			sc.Faults = append(sc.Faults, Fault{At: membershipFrom + time.Duration(r.Int64N(int64(sc.Safety-membershipFrom))),
				Kind: FaultCrash, Node: i, Length: time.Duration(10+r.IntN(3000)) * time.Millisecond})
		}
	}
	// Drawn last, so the draws above are those of the seeds before
	// rebalances joined the mix.
	if r.IntN(2) == 0 {
		sc.Faults = append(sc.Faults, Fault{At: membershipFrom + time.Duration(r.Int64N(int64(sc.Safety-membershipFrom))), Kind: FaultRebalance})
	}
	drawUnplannedRemoval(sc)
	drawAskAgain(sc)
}

// streamAskAgain draws which membership changes are asked for twice.
const streamAskAgain = "membership-ask-again"

// drawAskAgain has half the scenario's membership changes asked for a
// second time, 1 to 40 ms after the first (Fault.Extra, again= in the
// text), as an operator does who saw no answer, or a script run twice:
// the second request, landing before, while or after the first is
// applied, must be answered as the same change (the checker
// membership-answer). Each change draws from a stream of its own, keyed
// by its node and time, so no other draw moves.
func drawAskAgain(sc *Scenario) {
	for i := range sc.Faults {
		f := &sc.Faults[i]
		if f.Kind != FaultAddNode && f.Kind != FaultRemoveNode {
			continue
		}
		r := newStream(sc.Seed, streamAskAgain, uint64(f.Node), uint64(f.At))
		if r.IntN(2) == 0 {
			f.Extra = time.Duration(1+r.IntN(40)) * time.Millisecond
		}
	}
}

// streamUnplannedRemoval draws the removal a generated scenario asks for
// without counting members first.
const streamUnplannedRemoval = "unplanned-removal"

// drawUnplannedRemoval gives half the scenarios with membership changes
// one more removal, of a drawn founder at a drawn time, asked for without
// counting what the cluster would keep, as an operator may: when it
// would leave fewer staying members than a queue has replicas, or fewer
// than the metadata group's voter floor, the nodes must refuse it and
// change nothing (the checker leave-keeps-replicas holds them to it);
// otherwise it is one more removal. From a stream of its own, so the
// draws above are those of the seeds before it.
func drawUnplannedRemoval(sc *Scenario) {
	r := newStream(sc.Seed, streamUnplannedRemoval)
	if r.IntN(2) != 0 {
		return
	}
	sc.Faults = append(sc.Faults, Fault{At: membershipFrom + time.Duration(r.Int64N(int64(sc.Safety-membershipFrom))),
		Kind: FaultRemoveNode, Node: r.IntN(sc.Nodes)})
}

// validateMembershipFault checks a membership change against the
// scenario: an add names a spare, and either needs a client to ask.
func (sc Scenario) validateMembershipFault(f Fault) error {
	switch {
	case f.Kind != FaultAddNode && f.Kind != FaultRemoveNode && f.Kind != FaultRebalance:
		return nil
	case sc.Workload == nil || sc.Workload.Producers+sc.Workload.Consumers == 0:
		return fmt.Errorf("needs a workload with a client to ask for it")
	case f.Kind == FaultAddNode && f.Node < sc.Nodes:
		return fmt.Errorf("names a founder; only a spare (n%d and up) can be added", sc.Nodes+1)
	}
	return nil
}

// changeMembership has the first client ask for an add-node or
// remove-node fault's change.
func (w *World) changeMembership(f Fault) {
	if len(w.clients) == 0 {
		return
	}
	if f.Kind == FaultRebalance {
		w.clients[0].rebalance()
		return
	}
	w.clients[0].changeMember(f.Kind == FaultAddNode, w.procs[f.Node].id, f.Extra)
}

// rebalance asks the cluster to spread the existing replicas over its
// members.
func (c *clientProc) rebalance() {
	if c.w.Live() || c.quiet() {
		return
	}
	c.invoked(c.core.Rebalance(c.now()), "rebalance", "", noID, 0)
	c.flush()
}

// changeMember asks the cluster to admit node id, at an address peers
// would reach it by outside the simulator, or to remove it; if again is
// set, it asks once more that long after (drawAskAgain).
func (c *clientProc) changeMember(add bool, id node.NodeID, again time.Duration) {
	if c.w.Live() || c.quiet() {
		return
	}
	c.askMember(add, id, false)
	if again == 0 {
		return
	}
	c.w.schedule(c.w.now+again, -1, 0, func() {
		if !c.w.Live() && !c.quiet() && c.w.now >= c.downUntil {
			c.askMember(add, id, true)
		}
	})
}

// noteAskedAgain counts a repeated membership request answered OK whose
// change some node had applied before it was sent: the metadata took
// it as the change already made.
func (w *World) noteAskedAgain(op *OpRecord) {
	applied := w.hist.Admitted
	if op.Kind == "remove-node" {
		applied = w.hist.Leaving
	}
	if at, ok := applied[op.Node]; ok && at < op.Invoked {
		w.cov.probes[ProbeMembershipAskedAgain]++
	}
}

// askMember sends one add-node or remove-node request for id; again
// marks a repeat.
func (c *clientProc) askMember(add bool, id node.NodeID, again bool) {
	if add {
		op := c.core.AddNode(c.now(), wire.AddNode{Node: uint32(id), Addr: fmt.Sprintf("sim:%d", id)})
		c.invoked(op, "add-node", "", noID, 0)
	} else {
		op := c.core.RemoveNode(c.now(), uint32(id))
		c.invoked(op, "remove-node", "", noID, 0)
	}
	op := &c.w.hist.Ops[len(c.w.hist.Ops)-1]
	op.Node, op.Again = id, again
	c.flush()
}

// memberViewer is what a node offers to say who the members are, and how
// far its metadata has applied: node.Node implements it. MemberRecords,
// not Members: the serving sampler asks every 25 ms, and Members counts
// every member's replicas over every queue each time.
type memberViewer interface {
	MemberRecords() []node.Member
	Meta() node.MetaView
}

var _ memberViewer = (*node.Node)(nil)

// placeable lists the members new replicas may go to (every member not
// leaving) as the running node whose metadata applied the most knows
// them; before any node knows members, the founders.
func (w *World) placeable() []node.NodeID {
	var best []node.Member
	applied := uint64(0)
	for _, p := range w.procs {
		v, ok := p.handler.(memberViewer)
		if !ok || p.state != stateUp {
			continue
		}
		if meta := v.Meta(); best == nil || meta.Applied > applied {
			if members := v.MemberRecords(); len(members) > 0 {
				best, applied = members, meta.Applied
			}
		}
	}
	if best == nil {
		return w.Founders()
	}
	var out []node.NodeID
	for _, m := range best {
		if !m.Leaving {
			out = append(out, m.ID)
		}
	}
	return out
}

// observeMembership counts an applied membership change for the probes
// of the kinds a sweep should reach.
func (c *coverage) observeMembership(kind string) {
	switch kind {
	case "add":
		c.probes[ProbeMemberAdded]++
	case "promote":
		c.probes[ProbeMemberPromoted]++
	case "remove":
		c.probes[ProbeMemberRemoved]++
	}
}
