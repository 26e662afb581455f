package sim

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Losing the one prior member a stacked replacement kept. An all-policy
// queue's replacement cannot activate until every member of its new set
// has installed, and its seal needs a single witness of the prior set, so
// a second replacement may be stacked on a pending one until one prior
// member is left in the set. If that member is then lost, no member of
// both sets can lead the recovery, and only a prior member swapped back
// in from outside the set (node.swapBackSet) gets the queue served again.
// The swarm's own faults never line this up: the replacements must stay
// pending for seconds, two replicas must stay down past the replacement
// delay, and the owner's replica must break right after. So every
// five-node scenario with an all-policy queue on three replicas, no long
// outage and no other fault that breaks a replica arms a stack-loss fault
// drawn from a stream of its own (13 of seeds 1-500). At its time, or as
// soon as such a queue is served within the next stackLossPatience, it
// crashes both followers of the first one for Length; the queue's copying
// traffic between its owner and each newcomer a replacement names is
// dropped until the safety phase ends (so no replacement installs and
// both stay pending); and once both followers have been swapped out, the owner
// crashes and comes back over a damaged replica, which fences itself.
// The followers come back after Length, outside the set, holding every
// confirmed message. The seed's other scheduled faults in that span are
// left out, so that no restart or lost quorum ends the story early.

// streamStackLoss draws a generated scenario's stack-loss fault.
const streamStackLoss = "stack-loss"

// stackLossDown is how long the owner stays down once its replica is
// damaged.
const stackLossDown = 300 * time.Millisecond

// drawStackLoss adds the fault above to a generated scenario, reporting
// whether it did. A seed with a long outage gets none: a third node down
// would leave the metadata without a quorum, and the outage is a story of
// its own (restoring redundancy).
func drawStackLoss(sc *Scenario, outage bool) bool {
	r := newStream(sc.Seed, streamStackLoss)
	at := time.Second + time.Duration(r.Int64N(int64(time.Second)))
	length := 4500*time.Millisecond + time.Duration(r.Int64N(int64(time.Second)))
	if outage || sc.Nodes != 5 || sc.ReplicaCount() != 3 || sc.Workload == nil ||
		!slices.ContainsFunc(sc.Workload.Queues, func(q QueueSpec) bool { return q.Policy == wire.PolicyAll }) {
		return false
	}
	for _, f := range sc.Faults {
		if lyingDisk(f) {
			return false // the owner's damage must be the only broken replica
		}
	}
	// The seed's other scheduled faults keep out of the story's way
	// until its followers are back: a restart of a follower, or a crash
	// that costs the metadata its quorum, ends the story before it
	// reaches the swap-back. Its noise (latency, loss, disk errors) stays.
	end := at + stackLossPatience + length
	// A plan of membership changes holds only whole: spares join in ID
	// order, and removals count on the members added before them. So one
	// of its changes inside the story's time drops the plan.
	membership := func(f Fault) bool { return f.Kind == FaultAddNode || f.Kind == FaultRemoveNode }
	if slices.ContainsFunc(sc.Faults, func(f Fault) bool { return membership(f) && f.At >= at && f.At < end }) {
		sc.Faults = slices.DeleteFunc(sc.Faults, membership)
	}
	sc.Faults = slices.DeleteFunc(sc.Faults, func(f Fault) bool { return f.At >= at && f.At < end })
	sc.Faults = append(sc.Faults, Fault{At: at, Kind: FaultStackLoss, Length: length})
	return true
}

// stackLoss is an armed stack-loss fault: the queue, its owner, the two
// followers it crashed, and which of them replacements have swapped out.
type stackLoss struct {
	queue     string
	owner     *process
	followers [2]node.NodeID
	swapped   [2]bool
	// cut lists the newcomers the owner can copy nothing to, until the
	// safety phase ends.
	cut []node.NodeID
}

// drops reports whether the armed fault drops m, sent from one node to
// another: the queue's copying traffic between its owner and a newcomer
// (appends, fetches, checkpoints and their answers). Everything else
// goes through, the metadata's rounds and the failure detector's pings
// among it: cutting the two nodes off altogether would, when the newcomer
// leads the metadata, cost it the quorum that must commit the plans.
func (s *stackLoss) drops(from, to node.NodeID, m wire.Message) bool {
	var queue string
	switch m := m.(type) {
	case *wire.Append:
		queue = m.Queue
	case *wire.AppendReply:
		queue = m.Queue
	case *wire.Fetch:
		queue = m.Queue
	case *wire.FetchReply:
		queue = m.Queue
	case *wire.Checkpoint:
		queue = m.Queue
	case *wire.CheckpointAck:
		queue = m.Queue
	default:
		return false
	}
	if queue != s.queue {
		return false
	}
	for _, id := range s.cut {
		if from == s.owner.id && to == id || from == id && to == s.owner.id {
			return true
		}
	}
	return false
}

// armStackLoss strikes a stack-loss fault: it crashes both followers of
// the first all-policy queue whose owner serves it on a set of three, and
// waits for their replacements. Until such a queue is served (it may
// still be being created, or failing over) it looks again every
// stackLossRetry, for at most stackLossPatience.
func (w *World) armStackLoss(f Fault) {
	w.tryStackLoss(f, w.now+stackLossPatience)
}

// stackLossRetry and stackLossPatience pace a stack-loss fault's wait for
// a queue to strike.
const (
	stackLossRetry    = 100 * time.Millisecond
	stackLossPatience = 2 * time.Second
)

func (w *World) tryStackLoss(f Fault, until time.Duration) {
	if w.live || w.stack != nil {
		return
	}
	s := w.stackTarget()
	if s == nil {
		if w.now+stackLossRetry <= until {
			w.schedule(w.now+stackLossRetry, -1, 0, func() { w.tryStackLoss(f, until) })
		} else {
			w.trace.line(w.now, "sim", "fault stack-loss does nothing: no all-policy queue served on three replicas")
		}
		return
	}
	w.stack = s
	w.trace.line(w.now, "sim", "fault stack-loss crashes %v, the followers of %s's %s", s.followers, s.owner.id, s.queue)
	var touched []int
	for _, id := range s.followers {
		p := w.procs[int(id)-1]
		if p.state == statePaused {
			p.resume()
		}
		if p.state == stateUp {
			p.crash("fault: "+FaultStackLoss.String(), f.Length)
		}
		touched = append(touched, p.index)
	}
	w.cov.probes[ProbeStackLossArmed]++
	w.noteTouches(touched, w.now+f.Length, FaultStackLoss.String(), true)
}

// stackTarget finds the first all-policy queue of the workload whose
// owner is up and serves it, active, on three replicas whose followers
// are up too.
func (w *World) stackTarget() *stackLoss {
	for _, q := range w.sc.Workload.Queues {
		if q.Policy != wire.PolicyAll {
			continue
		}
		owner := w.queueOwner(q.Name)
		if owner == nil || owner.state != stateUp {
			continue
		}
		viewer, ok := owner.handler.(queueViewer)
		if !ok {
			return nil
		}
		for _, v := range viewer.Queues() {
			if v.Name != q.Name || v.Role != "owner" || v.State != "active" || len(v.Replicas) != 3 {
				continue
			}
			s := &stackLoss{queue: q.Name, owner: owner}
			i := 0
			for _, id := range v.Replicas {
				if id != owner.id && i < 2 && w.procs[int(id)-1].state == stateUp {
					s.followers[i] = id
					i++
				}
			}
			if i == 2 {
				return s
			}
		}
	}
	return nil
}

// noteStackPlan follows the replacements of an armed stack-loss fault's
// followers: it cuts the owner off from each newcomer, and once both are
// swapped out it breaks the owner's replica. Each strikes in a step of
// its own at this instant, after the handler that planned.
func (w *World) noteStackPlan(e event.Event) {
	s := w.stack
	if s == nil || w.live || e.Queue() != s.queue {
		return
	}
	out, in := node.NodeID(e.Out()), node.NodeID(e.In())
	for i, id := range s.followers {
		if id != out || s.swapped[i] {
			continue
		}
		s.swapped[i] = true
		w.schedule(w.now, -1, 0, func() { w.cutNewcomer(s, in) })
		if s.swapped[0] && s.swapped[1] {
			w.schedule(w.now, -1, 0, func() { w.breakStackOwner(s) })
		}
	}
}

// cutNewcomer stops the queue's copying traffic between the owner and
// in until the safety phase ends (drops).
func (w *World) cutNewcomer(s *stackLoss, in node.NodeID) {
	if w.live {
		return
	}
	w.trace.line(w.now, "sim", "fault stack-loss cuts %s's copy of %s to the newcomer %s", s.owner.id, s.queue, in)
	s.cut = append(s.cut, in)
	w.noteTouches([]int{s.owner.index, int(in) - 1}, w.sc.Safety, FaultStackLoss.String(), true)
}

// breakStackOwner crashes the owner and damages its replica of the
// queue, as a damage fault would.
func (w *World) breakStackOwner(s *stackLoss) {
	p := s.owner
	if w.live {
		return
	}
	if p.state == stateDown {
		w.trace.line(w.now, "sim", "fault stack-loss finds %s down: nothing to damage", p.id)
		return
	}
	w.trace.line(w.now, "sim", "fault stack-loss damages %s's replica of %s", p.id, s.queue)
	w.cov.probes[ProbeStackLossOwnerBroken]++
	w.noteTouches([]int{p.index}, w.now+stackLossDown, FaultStackLoss.String(), true)
	crashThenBreak(p, Fault{Kind: FaultStackLoss, Length: stackLossDown}, func() { w.damageReplica(p, s.queue) })
}
