package props

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// checkSoundReplicasStay fails a run in which a replica fenced itself on
// damage (queue.fenced) on a node whose disk no fault had broken by then
// (sim.History.Broken). A replica fences only on damage inside what it
// made durable; on a sound disk, what it took for damage was something
// else: an I/O error, a torn tail of unsynced writes, or a bug. The fault
// model lets one disk of a seed lie, and every queue survives one broken
// replica; a sound replica fenced besides it is a second, and with two a
// queue can rightly lose confirmed messages. So this is a safety check,
// although the fence itself loses nothing.
func checkSoundReplicasStay(h *sim.History) []sim.Violation {
	var out []sim.Violation
	reported := make(map[string]bool)
	for _, e := range h.NodeEvents {
		if e.Name != event.QueueFenced {
			continue
		}
		if at, ok := h.Broken[e.Node]; ok && at <= e.At {
			continue
		}
		key := e.Node.String() + "/" + e.Queue
		if reported[key] {
			continue
		}
		reported[key] = true
		out = append(out, sim.Violation{Kind: sim.Safety, Checker: "sound-replica-fenced",
			Detail: fmt.Sprintf("%s fenced its replica of %s at %v, and no fault had broken its disk%s",
				e.Node, e.Queue, e.At, queueStory(h, e.Queue, 0, e.At))})
	}
	return out
}
