package sim

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
)

// The ground truth of reassignments. A queue's owner is reassigned when
// the metadata leader plans its recovery onto another node
// (meta.plan-recovery with from and to apart). The nodes cannot tell
// whether the owner they gave up on was in fact dead; the simulator can,
// because it runs every process and applies every fault. A reassignment
// is unprovoked when, at the plan, the old owner's process was running
// and, within ReassignWindow before it, no scheduled fault touched that
// process or a link with it at one end, its disk reported no error, and
// it did not restart. What is left to blame is the noise every link
// carries all the time (the swarm's latency, its tail, loss, duplication,
// reordering): exactly the false reassignments a detector must keep rare.

// ReassignWindow is how far back before a plan a fault on the old owner
// still explains it. Failure detection confirms a silent owner within
// interval + grace and three 10 ms ticks of verification in heartbeat
// mode (430 ms by default) and within an interval plus the same
// verification in eager mode; the leader then plans in the same breath, and the plan event is
// emitted before its proposal commits. A fault that ended more than 2 s
// before the plan (nearly three full heartbeat confirmations, or a
// confirmation after the swarm's worst latency tail, 220 ms, and a new
// metadata election) no longer holds back a single message of the owner's,
// so the plan was not its doing.
const ReassignWindow = 2 * time.Second

// Reassignment is one planned move of a queue's ownership away from a
// node, judged against what the simulator knows happened to that node.
type Reassignment struct {
	At    time.Duration
	Queue string
	// Epoch is the epoch the plan would install.
	Epoch uint64
	// From is the owner given up on, To the candidate, Planner the
	// metadata leader that planned it.
	From, To, Planner node.NodeID
	// Mode is the failure detection mode in force at the plan: the
	// scenario's, or the last one a node applied since.
	Mode uint8
	// Cause says what provoked the plan (the owner was down, paused,
	// restarted, or a fault touched it or its links), or is empty for an
	// unprovoked, false reassignment.
	Cause string
	// Nearby names the last fault applied anywhere within ReassignWindow
	// before the plan, even one that left the old owner alone: context
	// for reading an unprovoked reassignment, not a verdict.
	Nearby string
}

// Unprovoked reports whether nothing but the network's noise explains
// the reassignment: the old owner was running and no fault touched it.
func (r Reassignment) Unprovoked() bool { return r.Cause == "" }

// String renders the reassignment for reports.
func (r Reassignment) String() string {
	s := fmt.Sprintf("at=%v q=%s epoch=%d from=%s to=%s planner=%s mode=%d", r.At, r.Queue, r.Epoch, r.From, r.To, r.Planner, r.Mode)
	if r.Cause != "" {
		s += " cause=" + r.Cause
	} else {
		s += " UNPROVOKED"
	}
	if r.Nearby != "" {
		s += " nearby=" + r.Nearby
	}
	return s
}

// UnprovokedReassignments lists the reassignments the history holds that
// nothing but noise provoked, in the order they were planned.
func (h *History) UnprovokedReassignments() []Reassignment {
	var out []Reassignment
	for _, r := range h.Reassignments {
		if r.Unprovoked() {
			out = append(out, r)
		}
	}
	return out
}

// faultTouch is a fault's hold on one node (0-based), from when it was
// applied until it ended: the node's process, or a link with it at one
// end, was not as the swarm's noise alone would leave it.
type faultTouch struct {
	node        int
	from, until time.Duration
	// what names the fault as a cause reads it.
	what string
}

// reassignWatch is what the world keeps to judge reassignments: every
// fault's touches in the order applied, the disk errors already seen per
// node, the detection mode last applied, and the plans already recorded.
type reassignWatch struct {
	touches []faultTouch
	// last is the last fault applied, for Reassignment.Nearby.
	last     faultTouch
	diskErrs []int
	mode     uint8
	// seen holds the plans recorded: a leader that plans the same move
	// again, before the first proposal applied, makes no new one.
	seen map[planKey]bool
}

// planKey names one planned move: a queue, the epoch it would install,
// and the owner it leaves.
type planKey struct {
	queue string
	epoch uint64
	from  node.NodeID
}

// noteFaultTouches records which nodes fault f touches as it is applied.
// It runs before the fault acts, so that the leader or owner a role fault
// aims at is still the one the fault will find. A crash-at fault touches
// nothing yet: its crash, when it comes, shows as the process's restart.
func (w *World) noteFaultTouches(f Fault) {
	until := w.now + f.Length
	var nodes []int
	switch f.Kind {
	case FaultCrash, FaultDamage, FaultLoseWrites, FaultMisdirect, FaultPause, FaultClockJump, FaultStop, FaultRot,
		FaultDamageState, FaultTruncate, FaultLoseDisk, FaultRestartEIO:
		nodes = []int{f.Node}
	case FaultStall, FaultPauseOwner:
		if p := w.firstQueueOwner(); p != nil {
			nodes = []int{p.index}
		}
	case FaultOneWay, FaultClog, FaultSpike:
		nodes = []int{f.Node, f.Peer}
	case FaultIsolate, FaultLossy:
		nodes = w.everyIndex() // every node has a link with the one cut off
	case FaultCrashAll:
		nodes = w.everyIndex()
	case FaultSplit:
		if in, out := w.splitGroups(f.Group); len(in) > 0 && len(out) > 0 {
			nodes = w.everyIndex()
		}
	case FaultIsolateLeader:
		if w.leaderProc() != nil {
			nodes = w.everyIndex()
		}
	case FaultIsolateOwner:
		if w.firstQueueOwner() != nil {
			nodes = w.everyIndex()
		}
	case FaultCrashLeader, FaultCrashOwner, FaultCrashLeaderOwner:
		nodes = w.roleTargets(f.Kind)
	}
	// An isolate-resting-owner or a stack-loss touches nothing until it
	// strikes, and records its touches then (noteRest, armStackLoss).
	last := f.Kind != FaultCrashAt && f.Kind != FaultSetDetection && f.Kind != FaultRestartConsumer && f.Kind != FaultVanishConsumer &&
		f.Kind != FaultIsolateRestingOwner && f.Kind != FaultStackLoss && f.Kind != FaultCrashAtStep
	w.noteTouches(nodes, until, f.Kind.String(), last)
}

// noteTouches records that a fault named what touches nodes from now
// until until, and, when last is set, that it is the latest fault.
func (w *World) noteTouches(nodes []int, until time.Duration, what string, last bool) {
	if last {
		w.reassign.last = faultTouch{node: -1, from: w.now, until: until, what: what}
	}
	for _, i := range nodes {
		w.reassign.touches = append(w.reassign.touches, faultTouch{node: i, from: w.now, until: until, what: what})
	}
}

// everyIndex lists every node's index.
func (w *World) everyIndex() []int {
	out := make([]int, len(w.procs))
	for i := range out {
		out[i] = i
	}
	return out
}

// roleTargets is the node (or nodes) a fault aimed at a role will crash,
// found as applyMetaFault finds them.
func (w *World) roleTargets(kind FaultKind) []int {
	var out []int
	if kind != FaultCrashLeader {
		if p := w.firstQueueOwner(); p != nil {
			out = append(out, p.index)
		}
	}
	if kind != FaultCrashOwner {
		if p := w.leaderProc(); p != nil {
			out = append(out, p.index)
		}
	}
	return out
}

// watchReassign follows the node events reassignments are judged by: an
// applied detection policy, and a planned recovery, which it judges at
// once, while the old owner's process is as the plan found it. Every
// event also brings news of its node's disk errors.
func (w *World) watchReassign(id node.NodeID, e event.Event) {
	rw := &w.reassign
	if i := int(id) - 1; i >= 0 && i < len(w.procs) {
		w.noteDiskErrors(w.procs[i])
	}
	switch e.Name {
	case event.QueueFenced:
		// Damage a read met (a rot, a misdirected write) takes the
		// replica out for good: a plan that follows is its doing, long
		// after the fault that caused it was applied.
		rw.touches = append(rw.touches, faultTouch{node: int(id) - 1, from: w.now, until: w.now, what: "damage found"})
	case event.MetaDetection:
		rw.mode = uint8(e.Mode())
	case event.MetaPlanRecovery:
		from, to := node.NodeID(e.FromNode()), node.NodeID(e.ToNode())
		if from == to || from < 1 || int(from) > len(w.procs) {
			return // the owner leads a replacement itself: nothing moves
		}
		key := planKey{queue: e.Queue(), epoch: e.Epoch(), from: from}
		if rw.seen == nil {
			rw.seen = make(map[planKey]bool)
		}
		if rw.seen[key] {
			return
		}
		rw.seen[key] = true
		mode := rw.mode
		if mode == 0 {
			mode = max(w.sc.Detection, node.DetectHeartbeat)
		}
		p := w.procs[from-1]
		view := ownerView{state: p.state, restarted: p.inc > 1, bootAt: p.bootAt}
		r := Reassignment{At: w.now, Queue: key.queue, Epoch: key.epoch, From: from, To: to, Planner: id, Mode: mode,
			Cause: provocation(w.now, p.index, view, rw.touches)}
		if l := rw.last; l.what != "" && w.now-l.until < ReassignWindow {
			r.Nearby = fmt.Sprintf("%s %v before", l.what, w.now-l.from)
		}
		w.hist.Reassignments = append(w.hist.Reassignments, r)
	}
}

// noteDiskErrors records, as a touch of p, any disk error p's disk
// injected since the last look. A node that hits one reports something
// soon after, so looking whenever it emits dates the error closely
// enough; an error that halts it shows as its restart anyway.
func (w *World) noteDiskErrors(p *process) {
	rw := &w.reassign
	if rw.diskErrs == nil {
		rw.diskErrs = make([]int, len(w.procs))
	}
	s := p.disk.Stats()
	if errs := s.SyncErrors + s.WriteErrors + s.ReadErrors + s.NameErrors; errs > rw.diskErrs[p.index] {
		rw.diskErrs[p.index] = errs
		rw.touches = append(rw.touches, faultTouch{node: p.index, from: w.now, until: w.now, what: "disk error"})
	}
}

// ownerView is what the simulator knows of the old owner's process at a
// plan: whether it runs, and when its current incarnation started if it
// ever crashed.
type ownerView struct {
	state     procState
	restarted bool
	bootAt    time.Duration
}

// provocation says what explains a plan at now that gives up on the node
// with index owner, or "" if nothing does: the owner was down or paused,
// restarted within ReassignWindow, or a touch of it ended within the
// window (or has not ended). The latest touch is named.
func provocation(now time.Duration, owner int, v ownerView, touches []faultTouch) string {
	switch {
	case v.state == stateDown:
		return "owner down"
	case v.state == statePaused:
		return "owner paused"
	case v.restarted && now-v.bootAt < ReassignWindow:
		return fmt.Sprintf("owner restarted %v before", now-v.bootAt)
	}
	for i := len(touches) - 1; i >= 0; i-- {
		t := touches[i]
		if t.node == owner && t.from <= now && now-t.until < ReassignWindow {
			return fmt.Sprintf("%s %v before", t.what, now-t.from)
		}
	}
	return ""
}
