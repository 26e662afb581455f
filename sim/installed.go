package sim

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// checkInstalledQuorum holds the recovery protocol to its activation rule,
// against the disks themselves: when the metadata activates a recovered
// owner, every member it names must durably hold a history that reaches
// the new epoch (its marker). The check runs once per activation, when
// the first node applies it.
func (w *World) checkInstalledQuorum(e event.Event) {
	queue, inc, epoch := e.Queue(), e.Inc(), e.Epoch()
	key := activation{queue, inc, epoch}
	if w.activationsChecked[key] {
		return
	}
	w.activationsChecked[key] = true
	for _, m := range e.Members() {
		idx := int(m)
		if idx < 1 || idx > len(w.procs) {
			continue
		}
		if w.damaged[damagedKey(idx-1, queue)] {
			// A damage or lost-writes fault destroyed this replica, or
			// part of it, possibly after it installed the epoch: the one
			// lying replica a queue's quorums tolerate.
			w.trace.line(w.now, "sim", "installed-quorum: n%d's replica of %s was damaged by a fault; not judged", idx, queue)
			continue
		}
		if !w.holdsEpoch(idx-1, queue, inc, epoch) {
			w.extra = append(w.extra, Violation{Safety, "installed-quorum", fmt.Sprintf(
				"queue %s epoch %d was activated at %v naming n%d, whose disk holds no entry of that epoch", queue, epoch, w.now, idx)})
		}
	}
}

// activation names one recovered owner's activation: a queue
// incarnation's epoch.
type activation struct {
	queue      string
	inc, epoch uint64
}

// holdsEpoch reads what a power loss would leave of a node's replica and
// reports whether its log reaches epoch.
func (w *World) holdsEpoch(i int, queue string, inc, epoch uint64) bool {
	clone := w.procs[i].disk.mem.CrashClone(vfs.CrashCloneCfg{})
	for _, d := range node.DumpReplicas(clone, "", 256, 1<<20) {
		if d.Queue == queue && d.Incarnation == inc && len(d.Entries) > 0 && d.Entries[len(d.Entries)-1].Epoch >= epoch {
			return true
		}
	}
	return false
}
