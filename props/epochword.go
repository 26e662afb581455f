package props

import (
	"maps"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// epochWord is the newest epoch a replica gave its word in, and how.
type epochWord struct {
	epoch uint64
	how   event.Name
	at    time.Duration
}

// epochWords are the events in which a replica says it holds an epoch
// durably: a follower reports durability only once its epoch is durable,
// a sealed replica answers only once the candidate's epoch is, and an
// owner activates only in an epoch it persisted.
var epochWords = map[event.Name]string{
	event.QueueReported: "reported durability",
	event.QueueSealed:   "answered a seal",
	event.QueueActive:   "activated as owner",
}

// checkEpochDurability holds each replica to the epochs it gave its word
// in: after a restart it reopens at an epoch no older than any it
// reported durability in, answered a seal in, or activated in, in the
// same incarnation of the queue (one made again under its name owes
// nothing the old one said). A replica
// that came back at an older epoch would accept the appends of an owner
// its word had fenced, and renew that owner's delivery lease. Only the
// metadata replacing the replica releases it (the node drops the replica,
// and a later one of the same queue starts from nothing). A replica
// whose state file a damage-state fault broke must fence itself at open,
// which emits no queue.open: reopening as new would forget its word.
func checkEpochDurability(h *sim.History) []sim.Violation {
	given := make(map[replicaKeyOf]epochWord)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		k := replicaKeyOf{e.Node, e.Queue, e.Inc}
		switch {
		case epochWords[e.Name] != "":
			if e.Epoch > given[k].epoch {
				given[k] = epochWord{e.Epoch, e.Name, e.At}
			}
		case e.Name == event.QueueReplaced || e.Name == event.QueueRetired:
			// Retired, the replica answers nothing again: a later one of
			// the queue on this node (put back by a replacement before the
			// old files were gone) starts from nothing.
			delete(given, k)
		case e.Name == sim.EventLostDisk:
			// The node's disk is gone: its replicas start from nothing,
			// and learn the queues' epochs anew from the metadata, which
			// it catches up with before it prepares any.
			maps.DeleteFunc(given, func(g replicaKeyOf, _ epochWord) bool { return g.node == e.Node })
		case e.Name == event.QueueOpen:
			w, ok := given[k]
			if ok && e.Epoch < w.epoch && len(out) < maxReports {
				out = append(out, safety("epoch-durability", "%s reopened %s at %v in epoch %d, after it %s in epoch %d at %v%s",
					e.Node, e.Queue, e.At, e.Epoch, epochWords[w.how], w.epoch, w.at, queueStory(h, e.Queue, 0, e.At)))
			}
		}
	}
	return out
}
