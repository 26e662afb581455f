package props

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// queueRun is the queue system as props runs it: the simulator's queue
// system, plus the judges that must look at the disks while the run goes
// on rather than at its history afterwards, and those that read node
// events the history does not keep.
type queueRun struct {
	*sim.QueueSystem
	w         *sim.World
	installed installedQuorum
	ckpts     ckptAudit
	progress  ckptProgress
	compact   compactReadiness
	members   memberWatch
	// nodes holds each node's latest incarnation, for the judges that
	// ask the nodes themselves at the end.
	nodes map[node.NodeID]*node.Node
}

// newQueueRun builds the world for sc with the judges attached.
func newQueueRun(sc sim.Scenario, trace io.Writer) *sim.World {
	r := &queueRun{QueueSystem: sim.NewQueueSystem(sc), installed: installedQuorum{checked: make(map[activation]bool)},
		nodes: make(map[node.NodeID]*node.Node)}
	r.w = sim.NewWorld(sc, r, trace)
	return r.w
}

// Observe implements sim.System.
func (r *queueRun) Observe(now time.Duration, id node.NodeID, e event.Event) {
	r.QueueSystem.Observe(now, id, e)
	r.ckpts.observe(now, id, e)
	r.progress.observe(now, id, e)
	r.compact.observe(now, id, e)
	r.members.observe(r.w, id, e)
	if e.Name == event.MetaRecoveryActivated {
		r.installed.check(r.w, e)
	}
}

// Check implements sim.System.
func (r *queueRun) Check(w *sim.World) []sim.Violation {
	out := append(r.QueueSystem.Check(w), r.installed.violations...)
	out = append(out, r.members.violations...)
	out = append(out, r.members.rebalanceEnded()...)
	out = append(out, membersSettled(r.nodes, w.Live())...)
	out = append(out, r.progress.check(w.Scenario(), limitsFor(w.Scenario()), w.Live(), w.Now())...)
	views := r.upViews()
	out = append(out, r.compact.check(views, w.Live(), w.Now())...)
	out = append(out, checkQueueLifecycle(views, r.compact.started, w.Live(), w.Now())...)
	return append(out, r.ckpts.check()...)
}

// NewNode implements sim.System: a node's new incarnation applies its
// metadata again from its snapshot, so the membership judge forgets what
// the last one applied.
func (r *queueRun) NewNode(id node.NodeID, peers []node.NodeID, env node.Env, lostDisk bool) node.Handler {
	r.members.restarted(id)
	r.compact.start(id, r.w.Now())
	h := r.QueueSystem.NewNode(id, peers, env, lostDisk)
	if n, ok := h.(*node.Node); ok {
		r.nodes[id] = n
	}
	return h
}

// upViews asks each node whose process runs at the end for its queue
// views.
func (r *queueRun) upViews() map[node.NodeID][]node.QueueView {
	out := make(map[node.NodeID][]node.QueueView)
	for _, id := range slices.Sorted(maps.Keys(r.nodes)) {
		if r.w.Up(id) {
			out[id] = r.nodes[id].Queues()
		}
	}
	return out
}

// installedQuorum holds the recovery protocol to its activation rule,
// against the disks themselves: when the metadata activates a recovered
// owner, every member it names must durably hold a history that reaches
// the new epoch (its marker). The check runs once per activation, when
// the first node applies it, because what matters is what the disks held
// at that instant, not at the end of the run.
type installedQuorum struct {
	checked    map[activation]bool
	violations []sim.Violation
}

// activation names one recovered owner's activation: a queue
// incarnation's epoch.
type activation struct {
	queue      string
	inc, epoch uint64
}

// check judges one activation event.
func (iq *installedQuorum) check(w *sim.World, e event.Event) {
	queue, inc, epoch := e.Queue(), e.Inc(), e.Epoch()
	key := activation{queue, inc, epoch}
	if iq.checked[key] {
		return
	}
	iq.checked[key] = true
	nodes := len(w.NodeIDs())
	for _, m := range e.Members() {
		idx := int(m)
		if idx < 1 || idx > nodes {
			continue
		}
		if w.FaultBroke(idx-1, queue) {
			// A damage or lost-writes fault destroyed this replica, or
			// part of it, possibly after it installed the epoch: the one
			// lying replica a queue's quorums tolerate.
			w.Tracef("installed-quorum: n%d's replica of %s was damaged by a fault; not judged", idx, queue)
			continue
		}
		if !holdsEpoch(w, idx-1, queue, inc, epoch) {
			iq.violations = append(iq.violations, sim.Violation{Kind: sim.Safety, Checker: "installed-quorum", Detail: fmt.Sprintf(
				"queue %s epoch %d was activated at %v naming n%d, whose disk holds no entry of that epoch", queue, epoch, w.Now(), idx)})
		}
	}
}

// holdsEpoch reads what a power loss would leave of node i's replica and
// reports whether its history (its log, or the checkpoint an empty log
// goes on from) reaches epoch.
func holdsEpoch(w *sim.World, i int, queue string, inc, epoch uint64) bool {
	d, ok := node.DumpReplicaTail(w.DurableFS(i), "", queue, inc)
	if !ok {
		return false
	}
	if n := len(d.Entries); n > 0 && d.Entries[n-1].Epoch >= epoch {
		return true
	}
	// A log reset by a checkpoint holds its history in the checkpoint.
	c := d.Checkpoint
	return len(d.Entries) == 0 && c != nil && c.CutEpoch >= epoch
}
