package sim

import (
	"time"

	"github.com/cairnmq/cairn/node"
)

// Cutting off a resting owner. An owner whose queue is idle rests: it
// lets its quorum's grant lapse and heartbeats each follower about once a
// second, so it learns it is cut off only when those seldom heartbeats go
// unanswered for a heartbeat period, a dozing replica's visit interval
// and two silence limits (node/rest.go's restCutOff; about 1.6 s with the
// simulator's tick, when the queue has subscribers). Random isolations,
// even those aimed at an owner, almost never land while it rests and last
// that long; and the workload's queues are busy through the safety phase,
// so the owners that rest then are mostly those of dead-letter queues,
// which only moves feed. Two fifths of the generated queue scenarios, drawn
// from a stream of their own so that no other draw moves, arm one
// isolation at a drawn time in the first three quarters of the safety
// phase: it strikes the next owner that rests, of any queue, and cuts its
// node from peers and clients alike (a pulled cable: a client's request
// would wake the owner, and subscribers resubscribe often enough that it
// never stays asleep otherwise) for 2 to 4 s, while its peers fail its
// queues over.

// streamRestingOwner draws a generated scenario's cut of a resting owner.
const streamRestingOwner = "resting-owner"

// drawRestingOwnerCuts adds the fault above to a generated scenario.
func drawRestingOwnerCuts(sc *Scenario) {
	r := newStream(sc.Seed, streamRestingOwner)
	if r.IntN(5) >= 2 {
		return
	}
	sc.Faults = append(sc.Faults, Fault{
		At:     time.Duration(r.Int64N(int64(sc.Safety) * 3 / 4)),
		Kind:   FaultIsolateRestingOwner,
		Length: 2*time.Second + time.Duration(r.Int64N(int64(2*time.Second))),
	})
}

// armRestingOwnerCut keeps an isolate-resting-owner fault until an owner
// rests.
func (w *World) armRestingOwnerCut(f Fault) {
	w.restCuts = append(w.restCuts, f.Length)
}

// noteRest cuts off the owner that just rested, if an isolation waits for
// one. The cut is a step of its own at this instant, after the handler
// that rested: the network changes between two handlers, never inside
// one.
func (w *World) noteRest(id node.NodeID) {
	if len(w.restCuts) == 0 || w.live {
		return
	}
	length := w.restCuts[0]
	w.restCuts = w.restCuts[1:]
	p := w.procs[int(id)-1]
	inc := p.inc
	w.schedule(w.now, -1, 0, func() {
		if w.live || p.state != stateUp || p.inc != inc {
			return
		}
		w.trace.line(w.now, "sim", "fault isolate-resting-owner %s for=%v", p.id, length)
		w.cov.probes[ProbeRestingOwnerIsolated]++
		w.hist.Unplugged = append(w.hist.Unplugged, UnplugSpan{Node: p.id, From: w.now, Until: w.now + length})
		w.noteTouches(w.everyIndex(), w.now+length, FaultIsolateRestingOwner.String(), true)
		w.unplug(p, length)
	})
}

// unplug cuts p from every peer and every client, both ways, for length.
func (w *World) unplug(p *process, length time.Duration) {
	all := w.addrs()
	for _, c := range w.clients {
		all = append(all, c.addr)
	}
	w.cutFrom(p, all, length)
}
