package sim

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A lost disk. A machine's disk dies, or an operator replaces it, and the
// node comes back over an empty data directory, started with Rejoin as
// the operations guide says. Unlike a lying disk it hides nothing: the
// node knows it starts from nothing. What it must not do is act on what
// it no longer has: vote in the metadata group before it caught up (it
// may have acknowledged entries the others lack), or let its empty
// replicas speak for their queues' histories (it may have reported
// records durable that no other replica of a seal's quorum holds).

// streamLostDisk draws a generated scenario's lost disk.
const streamLostDisk = "lost-disk"

// drawLostDisk adds, in one in six of the generated queue scenarios that
// qualify, a crash after which the node's disk is gone. A lost disk
// breaks every replica on it, so it lands on the seed's one lying disk
// (oneLyingDisk), and it is left out where losing one replica rightly
// loses confirmed messages or can never be repaired: a queue whose owner
// alone confirms (its disk is the only copy), a queue that confirms on
// every replica in a cluster with no spare to replace one (the emptied
// replica must catch up before it confirms again, which it does, but a
// fault of another kind in between leaves the queue stuck by design), and
// seeds with a long outage (two nodes of a queue's three without their
// history is a different story). It comes from a stream of its own, so
// no other draw of a seed moves. It reports whether it added the fault.
func drawLostDisk(sc *Scenario, outage bool) bool {
	r := newStream(sc.Seed, streamLostDisk)
	if r.IntN(6) != 0 || outage || sc.Workload == nil {
		return false
	}
	for _, q := range sc.Workload.Queues {
		if q.Policy == wire.PolicyOwnerOnly || q.Policy == wire.PolicyAll && sc.Spares == 0 {
			return false
		}
	}
	sc.Faults = append(sc.Faults, Fault{
		At:     time.Second + time.Duration(r.Int64N(int64(sc.Safety-2*time.Second))),
		Kind:   FaultLoseDisk,
		Node:   r.IntN(sc.Nodes),
		Length: time.Duration(100+r.IntN(1400)) * time.Millisecond,
	})
	return true
}

// loseDisk replaces the disk of p, just crashed, with an empty one: every
// replica on it is gone, as is its metadata. The history records the loss
// for each replica the disk held, so that no judge holds the node to what
// it promised before; its next incarnations start with Rejoin.
func (w *World) loseDisk(p *process) {
	queues := replicaQueues(p.disk.mem)
	p.disk.Lose()
	p.lostDisk = true
	p.tracef("lose-disk: the data directory is gone, %d queue replicas with it", len(queues))
	for _, q := range queues {
		w.damaged[damagedKey(p.index, q)] = true
	}
	w.cov.noteLostDisk(p.id, queues)
	w.hist.NodeEvents = append(w.hist.NodeEvents, NodeEvent{At: w.now, Node: p.id, Name: EventLostDisk})
	for _, q := range queues {
		w.hist.Story = append(w.hist.Story, StoryEvent{At: w.now, Node: p.id, Queue: q,
			Text: "fault: the node's disk was lost; it rejoins over an empty data directory"})
	}
}

// replicaQueues lists, sorted and once each, the queues whose replicas a
// node's disk holds.
func replicaQueues(fs vfs.FS) []string {
	dirs, _ := fs.List("queues")
	var out []string
	for _, d := range dirs {
		if q, _, ok := node.ParseReplicaDir(d); ok && !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return out
}

// EventLostDisk is the history event a lose-disk fault records: Node's
// disk is gone, with every replica and promise on it. Queue is empty.
const EventLostDisk event.Name = "sim.lost-disk"

// Lose replaces the disk's contents with nothing, as a new device would
// hold. File handles opened before must not be used again.
func (d *Disk) Lose() {
	d.stats.LostDisks++
	d.mem = vfs.NewCrashableMem()
	d.rots = nil
	d.wrap()
}
