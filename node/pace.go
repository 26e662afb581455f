package node

import (
	"maps"
	"slices"
	"time"
)

// The metadata leader paces the recoveries it plans. A node that owns
// thousands of queues and is confirmed down (or only taken for down: a
// loop stalled by a busy machine) otherwise gets every one of them planned
// in the same pass, and its peers then run thousands of recoveries side by
// side: each seal waits seconds behind the others' syncs, the peers' loops
// fall behind their pings, and the next confirmation plans thousands more.
// A three-node cluster creating its 8,500th queue went that way and never
// came back. Pacing keeps at most recoveryPlansMax plans per candidate
// under way; the queues left wait for a later pass (every lifecycle pass,
// 200 ms), so a node with a few queues fails over exactly as fast as
// before, and one with thousands hands them out a few dozen at a time.

// recoveryPlansMax bounds the recoveries the leader keeps under way per
// candidate node.
const recoveryPlansMax = 64

// recoveryPlanHold is how long a plan counts against its candidate's
// bound at most. A recovery still unfinished after it (waiting for a
// replica that is down, copying a long history) stops holding its place,
// so a few slow recoveries cannot hold back every other queue.
const recoveryPlanHold = 2 * time.Second

// plannedRecovery is a recovery plan the leader proposed: for which
// candidate, from which epoch, and when, on its monotonic clock.
type plannedRecovery struct {
	cand  NodeID
	epoch uint64
	at    time.Duration
}

// recoveryPace counts, on the metadata leader, the recovery plans under
// way per candidate.
type recoveryPace struct {
	planned map[string]plannedRecovery
	busy    map[NodeID]int
}

// newRecoveryPace drops the plans that ended (the queue serves in a later
// epoch, changed otherwise or went away) or have held their place for
// recoveryPlanHold, and counts the rest per candidate.
func (n *Node) newRecoveryPace() *recoveryPace {
	m := n.meta
	if m.planned == nil {
		m.planned = make(map[string]plannedRecovery)
	}
	p := &recoveryPace{planned: m.planned, busy: make(map[NodeID]int)}
	now := n.env.Monotonic()
	for _, name := range slices.Sorted(maps.Keys(p.planned)) {
		e := p.planned[name]
		q := m.state.queues[name]
		ended := q == nil || q.Epoch > e.epoch+1 || q.Epoch > e.epoch && q.State != QueueRecovering
		if ended || now-e.at >= recoveryPlanHold {
			delete(p.planned, name)
			continue
		}
		p.busy[e.cand]++
	}
	return p
}

// admit reports whether a recovery of q by cand may be planned now, and
// if so counts it. A queue planned again (its candidate went down too)
// gives up its earlier place.
func (p *recoveryPace) admit(q *QueueMeta, cand NodeID, now time.Duration) bool {
	if e, ok := p.planned[q.Name]; ok {
		p.busy[e.cand]--
		delete(p.planned, q.Name)
	}
	if p.busy[cand] >= recoveryPlansMax {
		return false
	}
	p.busy[cand]++
	p.planned[q.Name] = plannedRecovery{cand: cand, epoch: q.Epoch, at: now}
	return true
}
