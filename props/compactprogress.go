package props

import (
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// Compaction progress. compaction-after-certificate holds every drop of
// log segments to a certificate; nothing held a replica to dropping them
// at all, so a change that kept every segment forever (a sync of the
// first segment that nothing asks for, a tick that never tries) passed
// every seed while disks grew without bound. At the end of a run that
// reached its calm phase, this checker asks every running node for its
// queue views: a replica that holds a checkpoint the metadata certified
// (at the lower of its own cut and the certified one, through) must have
// dropped each segment wholly at or below through, unless it could not
// have yet: the certificate, its checkpoint or its process came too
// recently (compactGrace).

// compactGrace is how long a replica may keep a segment that both its
// checkpoint and the certificate cover. A replica tries on every tick it
// is visited, and a resting one is visited every 25 ticks (half a
// second at the simulator's 20 ms tick); the first segment may need a
// sync first, which the calm phase's disks finish in milliseconds. Two
// seconds is four visits of a resting replica.
const compactGrace = 2 * time.Second

// compactReadiness records, per replica, when each checkpoint became
// durable and each certificate applied, and when each node's process
// last started, to tell when a replica could first compact through a cut.
type compactReadiness struct {
	started   map[node.NodeID]time.Duration
	durable   map[replicaOf][]cutAt
	certified map[replicaOf][]cutAt
}

// cutAt is a checkpoint cut and when a node reached it.
type cutAt struct {
	cut uint64
	at  time.Duration
}

// ready makes the zero value usable: starts and events may come in
// either order.
func (c *compactReadiness) ready() {
	if c.started == nil {
		c.started = make(map[node.NodeID]time.Duration)
		c.durable = make(map[replicaOf][]cutAt)
		c.certified = make(map[replicaOf][]cutAt)
	}
}

func (c *compactReadiness) start(id node.NodeID, at time.Duration) {
	c.ready()
	c.started[id] = at
}

// observe keeps the checkpoint events compaction waits on.
func (c *compactReadiness) observe(now time.Duration, id node.NodeID, e event.Event) {
	c.ready()
	k := replicaOf{id, queueInc{e.Queue(), e.Inc()}}
	switch e.Name {
	case event.CheckpointDurable:
		c.durable[k] = append(c.durable[k], cutAt{e.Index(), now})
	case event.CheckpointCertified:
		c.certified[k] = append(c.certified[k], cutAt{e.Index(), now})
	}
}

// readyAt is when node id's replica k could first compact through cut:
// the latest of its process's start, the first time since then its
// checkpoint reached cut, and the first time since then it applied a
// certificate that did. A checkpoint or certificate its process read
// back at its start reports no event; the start stands for it.
func (c *compactReadiness) readyAt(k replicaOf, cut uint64) time.Duration {
	start := c.started[k.node]
	ready := start
	for _, marks := range [][]cutAt{c.durable[k], c.certified[k]} {
		for _, m := range marks {
			if m.at >= start && m.cut >= cut {
				ready = max(ready, m.at)
				break
			}
		}
	}
	return ready
}

// check judges the views of the nodes up at now.
func (c *compactReadiness) check(views map[node.NodeID][]node.QueueView, live bool, now time.Duration) []sim.Violation {
	if !live {
		return nil
	}
	var out []sim.Violation
	for _, id := range slices.Sorted(maps.Keys(views)) {
		for _, v := range views[id] {
			if len(out) == maxReports {
				return out
			}
			if v.Role == "none" || v.Fenced != "" || v.Segments < 2 || v.State != "active" && v.State != "recovering" {
				continue
			}
			through := min(v.CheckpointIndex, v.CertifiedIndex)
			if through == 0 || v.FrontLast > through {
				continue
			}
			k := replicaOf{id, queueInc{v.Name, v.Incarnation}}
			if ready := c.readyAt(k, through); now-ready >= compactGrace {
				out = append(out, liveness("compaction-progress",
					"queue %s (incarnation %x): %s still keeps a segment through index %d at the end (%d segments, %d bytes), "+
						"though its checkpoint and the certificate cover index %d since %v",
					v.Name, v.Incarnation, id, v.FrontLast, v.Segments, v.RetainedBytes, through, ready))
			}
		}
	}
	return out
}
