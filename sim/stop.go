package sim

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
)

// Graceful stops. An operator restarting a machine sends its node
// SIGTERM, and the node hands every queue it owns to another replica
// before it exits: a planned move, not a failover. The stop fault does
// the same to a simulated node, and the swarm adds stops to a share of
// the seeds from a stream of their own, so that handoffs meet crashes,
// partitions and each other while the checkers watch.

// streamStop draws a generated scenario's graceful stops.
const streamStop = "stop"

// stopHandoffMax is how long a stopping node waits for its queues to
// move before it exits anyway, as cairn-node's shutdown_handoff bounds
// it; stopPoll is how often the simulator looks.
const (
	stopHandoffMax = 2 * time.Second
	stopPoll       = 10 * time.Millisecond
)

// drainer is what a node offers a graceful stop: node.Node implements
// it.
type drainer interface {
	DrainOwned(drainFor time.Duration) int
	Owned() int
}

var _ drainer = (*node.Node)(nil)

// mixedPool is the fault pool of the mixed profile: every kind the swarm
// schedules but stops, membership changes, damage, rot, stalls, owner
// pauses and crashes at an owner's step, which come from streams of their own, so that adding them moved no draw
// of the seeds that had none.
func mixedPool() []FaultKind {
	return slices.DeleteFunc(FaultKinds(), func(k FaultKind) bool {
		return k == FaultStop || k == FaultAddNode || k == FaultRemoveNode || k == FaultRebalance ||
			k == FaultDamage || k == FaultRot || k == FaultStall || k == FaultPauseOwner || k == FaultDamageState ||
			k == FaultTruncate || k == FaultLoseDisk || k == FaultIsolateRestingOwner || k == FaultRestartEIO ||
			k == FaultStackLoss || k == FaultVanishConsumer || k == FaultCrashAtStep
	})
}

// drawStops adds, in a third of the seeds, one to three graceful stops
// of drawn nodes at drawn times in the safety phase, each down for as
// long as a drawn crash.
func drawStops(sc *Scenario) {
	r := newStream(sc.Seed, streamStop)
	count := pick(r, 0, 0, 0, 0, 0, 0, 1, 2, 3)
	for range count {
		sc.Faults = append(sc.Faults, Fault{
			At:     time.Duration(r.Int64N(int64(sc.Safety))),
			Kind:   FaultStop,
			Node:   r.IntN(sc.Nodes),
			Length: time.Duration(10+r.IntN(1500)) * time.Millisecond,
		})
	}
}

// stopGracefully has p hand its queues off, then exit and restart after
// down. A paused or stopped process is crashed outright: it cannot hand
// anything off.
func (w *World) stopGracefully(p *process, down time.Duration) {
	d, ok := p.handler.(drainer)
	if p.state != stateUp || !ok {
		if p.state == statePaused {
			p.resume()
		}
		p.crash("fault: stop", down)
		return
	}
	p.run(func() { d.DrainOwned(0) })
	inc, deadline := p.inc, w.now+stopHandoffMax
	var poll func()
	poll = func() {
		if p.inc != inc || p.state == stateDown {
			return // it died meanwhile
		}
		if (p.state == statePaused || d.Owned() > 0) && w.now < deadline {
			w.schedule(w.now+stopPoll, -1, 0, poll)
			return
		}
		if p.state == statePaused {
			p.resume()
		}
		p.crash("fault: stop", down)
	}
	poll()
}
