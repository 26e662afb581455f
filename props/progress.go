package props

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// Bounded progress. The checkers here hold failover and replacement to
// time limits built from the run's configuration, so that a change that
// makes either slower, or stops it, fails a seed instead of passing every
// one. Each limit is a sum of the waits the protocol is built from (its
// derivation is on each checker) plus a stated margin for the work itself:
// round trips and fsyncs, which take milliseconds in the simulator.

// progressLimits are the bounds a run is judged by.
type progressLimits struct {
	// failover bounds an unserved span of the calm phase.
	failover time.Duration
	// silence is the slowest detection policy's time to confirm a silent
	// node down; replaceAfter how long a member must stay confirmed down
	// before it is replaced; settle what a replacement takes once it is
	// due and nothing disturbs it (see checkRedundancy).
	silence, replaceAfter, settle time.Duration
	// certifyResend and certifyGiveUp are an owner's waits for checkpoint
	// receipts (see checkpoint-progress).
	certifyResend, certifyGiveUp time.Duration
}

// failoverMargin covers a recovery's own work once it may start (seal,
// inspect, transfer of a suffix, install, activate: a few round trips
// and fsyncs each) and the 25ms between two polls of the nodes.
const failoverMargin = 250 * time.Millisecond

// replaceMargin covers a replacement's own work: the recovery that brings
// the new member in copies it the queue's whole retained history (at most
// a few hundred kilobytes here, in pages and checkpoint chunks), then
// installs and activates, plus the time between two polls.
const replaceMargin = time.Second

// replaceHops is how many one-way trips between nodes a replacement
// waits on, one after another, once the leader plans it: the plan's
// commit (the leader's append, the followers' acks, the owner learning
// the commit: 3), the owner's claim of the new epoch (forwarded to the
// leader, appended, acked, learnt: 4), the seal (2), the owner's first
// append to the new member and its answer (2), and the activation's
// commit (4). replaceMargin assumes trips of a few milliseconds, which
// most seeds' networks give; a latency tail on links that keep their
// order makes every trip as slow as the tail (seed 666754: 5% of
// messages held up to 217 ms, every step of the replacement 100-250 ms,
// activated 1.59 s after it fell due against a settle of 1.4 s).
const replaceHops = 15

// limitsFor derives the bounds from the configuration a run of sc gives
// its nodes and the slowest detection policy the run may switch to.
//
// Failover: the calm phase may begin with every process restarting. The
// metadata then needs a leader: a follower campaigns within an election
// window plus jitter, and a split vote is retried within the shorter
// candidate window. Side by side with the election, an owner's claim of
// its epoch proposed before the calm phase to a leader that is gone waits
// out the proposal timeout on its own clock. Either way, the reconcile
// that retries a claim, and the leader's planning pass, run once a
// lifecycle period; a node the metadata still holds down, or one that
// fell, takes the leader at most one silence of the detection policy to
// see as it is. Then the recovery does its work (failoverMargin).
func limitsFor(sc sim.Scenario) progressLimits {
	t := sim.QueueConfig(sc).ProgressTimes()
	var silence time.Duration
	for _, p := range sim.DetectionPolicies(sc) {
		silence = max(silence, p.Silence())
	}
	return progressLimits{
		failover:     max(t.Election+t.ElectionRetry, t.ProposalTimeout) + t.LifecycleRetry + silence + failoverMargin,
		silence:      silence,
		replaceAfter: t.ReplaceAfter,
		settle:       2*t.LifecycleRetry + replaceMargin,
		// The owner's ticks, not the metadata's, pace certification.
		certifyResend: t.CertifyResend,
		certifyGiveUp: t.CertifyGiveUp,
	}
}

// afterFlaps widens the bounds by node.FlapSlackMax in a run where the
// metadata leader confirmed a node down while its process ran (a pause,
// a partition): the leader then allows that node a longer silence before
// it confirms it down again, for a while (node/detectflap.go). A run
// without such a confirmation keeps the tight bounds.
func (lim progressLimits) afterFlaps(h *sim.History) progressLimits {
	for _, e := range h.NodeEvents {
		if e.Name == event.DetectConfirm && e.TargetUp {
			lim.failover += node.FlapSlackMax
			lim.silence += node.FlapSlackMax
			break
		}
	}
	return lim
}

// checkFailoverBound: in the calm phase, with a quorum of the cluster up
// and the network calm, every queue is served (some node is its owner in
// the newest epoch and hears from its quorum) within limits.failover of
// the latest of: the start of the calm phase, the start of the span
// without service, and the last time a process started or stopped (a
// node that falls in the calm phase starts a failover of its own).
func checkFailoverBound(lim progressLimits, h *sim.History) []sim.Violation {
	if !h.Live {
		return nil
	}
	var out []sim.Violation
	for _, u := range h.Unserved {
		from := max(u.From, h.LivenessAt, lastProcessChange(h, u.Until))
		if !quorumUp(h, from) || u.Until-from <= lim.failover || len(out) >= maxReports {
			continue
		}
		state := "was first served again at " + u.Until.String()
		if u.Open {
			state = "was still unserved when the run ended at " + u.Until.String()
		}
		out = append(out, liveness("failover-bound", "queue %s went unserved in the calm phase from %v and %s: %v after %v, longer than the bound %v%s",
			u.Queue, u.From, state, u.Until-from, from, lim.failover, queueStory(h, u.Queue, from, u.Until)))
	}
	return out
}

// lastProcessChange is when a process last started or stopped before t.
func lastProcessChange(h *sim.History, t time.Duration) time.Duration {
	var last time.Duration
	for _, p := range h.Processes {
		if p.At < t {
			last = max(last, p.At)
		}
	}
	return last
}

// upAt says which processes ran at t.
func upAt(h *sim.History, t time.Duration) map[node.NodeID]bool {
	up := make(map[node.NodeID]bool)
	for _, p := range h.Processes {
		if p.At <= t {
			up[p.Node] = p.Up
		}
	}
	return up
}

// quorumUp reports whether a majority of the cluster's nodes ran at t.
func quorumUp(h *sim.History, t time.Duration) bool {
	up := upAt(h, t)
	nodes := processNodes(h)
	running := 0
	for _, id := range nodes {
		if up[id] {
			running++
		}
	}
	return 2*running > len(nodes)
}

// processNodes lists, in order, every node the history saw start.
func processNodes(h *sim.History) []node.NodeID {
	var ids []node.NodeID
	for _, p := range h.Processes {
		ids = append(ids, p.Node)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// checkRedundancy: a queue whose replica set lost a member while a node
// outside the set was up has its replica count restored (the member is
// back, or replaced and the replacement activated) in time. Owner-only
// queues are exempt: their history lives on the owner alone, so the
// metadata never replaces their replicas.
//
// The replacement falls due once the metadata leader has held the member
// down for ReplaceAfter. The leader's count starts when it confirms the
// member down: the history shows when, and without a confirmation it is
// at most one silence of the detection policy after the member fell. A
// new leader starts its count afresh, within one silence of its election
// (it has confirmed every silent node by then). Any other disturbance (a
// scheduled fault starting or ending, a process starting or stopping)
// may hold up the work but not the count, so the work must be done within
// settle of the later of the due time and the last such disturbance: the
// leader's next planning pass, one more if its plan lost a race with
// another change to the queue (two lifecycle periods; with a stable
// leader and a calm cluster its own proposal commits in a round trip),
// and the recovery that copies the queue to the new member
// (replaceMargin), each of whose steps waits on the network: replaceHops
// one-way trips at the longest delay any message between nodes met in
// that span.
func checkRedundancy(sc sim.Scenario, lim progressLimits, h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, d := range h.Deficits {
		if ownerOnly(sc, d.Queue) {
			continue // only its owner holds its history: never replaced
		}
		due := max(confirmedDown(h, lim, d), lastLeader(h, d.Until)+lim.silence) + lim.replaceAfter
		calm := lastDisturbance(sc, h, d.Queue, d.Down, d.Until)
		from := max(due, calm)
		bound := lim.settle + replaceHops*h.PeerDelayMax(from, d.Until)
		if d.Until-from <= bound || len(out) >= maxReports {
			continue
		}
		state := "was restored at " + d.Until.String()
		if d.Open {
			state = "was still short when the run ended at " + d.Until.String()
		}
		out = append(out, liveness("redundancy", "queue %s lost replica %s at %v while a node outside its set was up, and %s: "+
			"the replacement was due by %v (after the last disturbance at %v), and %v later still had not restored it (bound %v)%s",
			d.Queue, d.Down, d.From, state, due, calm, d.Until-from, bound,
			queueStory(h, d.Queue, d.From, d.Until)))
	}
	return out
}

// confirmedDown is when the metadata leader confirmed d's member down:
// the first confirmation since the member last fell before the deficit
// began (see fellBy), or one silence after the fall if none is
// recorded. A deficit outlives the member's return when the queue was
// not active again before the member fell once more (seed 148945: n1
// back from 3.9s to 5.62s while q1 recovered, which activated only at
// 6.15s); the leader's count starts over once it holds the member up,
// so a later fall that the leader confirmed afresh starts the count from
// that confirmation. A later fall with no confirmation of its own leaves
// the earlier count standing: the leader may never have seen the member
// back.
func confirmedDown(h *sim.History, lim progressLimits, d sim.ReplicaDeficit) time.Duration {
	fell := fellBy(h, d.Down, d.From)
	start := fell + lim.silence
	if at, ok := firstConfirm(h, d.Down, fell, d.Until); ok {
		start = min(at, start)
	}
	for _, p := range h.Processes {
		if p.Node != d.Down || p.Up || p.At <= fell || p.At >= d.Until {
			continue
		}
		if at, ok := firstConfirm(h, d.Down, p.At, d.Until); ok {
			start = max(start, min(at, p.At+lim.silence))
		}
	}
	return start
}

// fellBy is when member fell for a deficit found at from: when its
// process stopped, if it was still stopped at from, and otherwise from
// itself. A member whose process ran at from was not answering (it was
// paused, which the process record does not show), and a crash it had
// come back from before says nothing of when the leader began its count
// (seed 325619: n5, restarted at 0.82s after a crash, was paused at
// 2.95s and confirmed down at 3.35s; counted from the crash, the
// replacement looked due 2.3s before the leader could have made it).
func fellBy(h *sim.History, member node.NodeID, from time.Duration) time.Duration {
	fell := from
	for _, p := range h.Processes {
		if p.Node != member || p.At > from {
			continue
		}
		fell = from
		if !p.Up {
			fell = p.At
		}
	}
	return fell
}

// firstConfirm is the first confirmation of id down in [from, until].
func firstConfirm(h *sim.History, id node.NodeID, from, until time.Duration) (time.Duration, bool) {
	for _, e := range h.NodeEvents {
		if e.Name == event.DetectConfirm && node.NodeID(e.Value) == id && e.At >= from && e.At <= until {
			return e.At, true
		}
	}
	return 0, false
}

// lastLeader is when a metadata leader was last announced at or before t.
func lastLeader(h *sim.History, t time.Duration) time.Duration {
	var last time.Duration
	for _, e := range h.NodeEvents {
		if e.Name == event.MetaLeader && e.At <= t {
			last = max(last, e.At)
		}
	}
	return last
}

// lastDisturbance is the latest moment before t at which something
// could rightly hold up replacing member: a fault in force (crashes
// aside, which the process record shows), a graceful stop of another
// node requested (it hands queues on until its process exits), a
// process other than member starting or stopping, or one staying down (its replica may be needed
// to seal, or it may be the spare) or left with broken replicas, in
// which case it is t itself; or one holding a replica of queue it
// reopened after a restart that no owner had verified yet.
func lastDisturbance(sc sim.Scenario, h *sim.History, queue string, member node.NodeID, t time.Duration) time.Duration {
	var last time.Duration
	for _, f := range sc.Faults {
		switch {
		case f.At >= t || f.Kind == sim.FaultRestartConsumer || f.Kind == sim.FaultIsolateRestingOwner:
			// An isolation of a resting owner strikes when an owner
			// rests, not at its time: h.Unplugged has when it did.
		case breaksReplicas[f.Kind] && node.NodeID(f.Node+1) != member:
			// The replicas it broke stay broken until a recovery
			// rebuilds them: a queue may lack a seal quorum without
			// the member until it is back.
			return t
		case f.Kind == sim.FaultStop && node.NodeID(f.Node+1) != member:
			// A graceful stop hands the node's queues on before the
			// process exits, which the process record shows only at the
			// exit: from the request on, it moves owners, and each move
			// restarts the recovery a replacement runs in.
			last = max(last, f.At)
		case !crashKinds[f.Kind]:
			last = max(last, min(f.At+f.Length, t))
		}
	}
	for _, u := range h.Unplugged {
		if u.From < t {
			last = max(last, min(u.Until, t))
		}
	}
	last = max(last, unverifiedUntil(h, queue, member, t))
	down := make(map[node.NodeID]bool)
	for _, p := range h.Processes {
		if p.At >= t || p.Node == member {
			continue
		}
		last = max(last, p.At)
		down[p.Node] = !p.Up
	}
	if slices.ContainsFunc(processNodes(h), func(id node.NodeID) bool { return down[id] }) {
		return t
	}
	return last
}

// unverifiedUntil is the last moment before t at which a node other
// than member held a replica of queue it had opened over an earlier
// process's storage that no owner had verified yet (t itself if one
// still does): a recovery counts such a replica for less as a witness (a
// disk may have lost writes), so it may need the member back to seal.
func unverifiedUntil(h *sim.History, queue string, member node.NodeID, t time.Duration) time.Duration {
	var last time.Duration
	opened := make(map[node.NodeID]bool) // reopened and not yet verified
	for _, e := range h.NodeEvents {
		if e.At >= t || e.Queue != queue || e.Node == member {
			continue
		}
		switch {
		case e.Name == event.QueueOpen:
			opened[e.Node] = restartedBefore(h, e.Node, e.At)
		case e.Name == event.QueueTrusted && opened[e.Node]:
			opened[e.Node], last = false, max(last, e.At)
		}
	}
	if slices.ContainsFunc(processNodes(h), func(id node.NodeID) bool { return opened[id] }) {
		return t
	}
	return last
}

// restartedBefore reports whether node id had started more than once by t.
func restartedBefore(h *sim.History, id node.NodeID, t time.Duration) bool {
	starts := 0
	for _, p := range h.Processes {
		if p.Node == id && p.Up && p.At <= t {
			starts++
		}
	}
	return starts > 1
}

// breaksReplicas are the faults that leave a node's replicas damaged
// after it restarts.
var breaksReplicas = map[sim.FaultKind]bool{sim.FaultDamage: true, sim.FaultLoseWrites: true, sim.FaultMisdirect: true,
	sim.FaultRot: true, sim.FaultDamageState: true, sim.FaultTruncate: true}

// ownerOnly reports whether the scenario's workload made queue
// owner-only.
func ownerOnly(sc sim.Scenario, queue string) bool {
	if sc.Workload == nil {
		return false
	}
	for _, q := range sc.Workload.Queues {
		if q.Name == queue {
			return q.Policy == wire.PolicyOwnerOnly
		}
	}
	return false
}

// crashKinds are the faults that stop processes; the history's process
// record says when each stopped and started again.
var crashKinds = map[sim.FaultKind]bool{
	sim.FaultCrash: true, sim.FaultCrashAt: true, sim.FaultCrashLeader: true, sim.FaultCrashAll: true,
	sim.FaultCrashLeaderOwner: true, sim.FaultCrashOwner: true, sim.FaultDamage: true, sim.FaultLoseWrites: true,
	sim.FaultMisdirect: true, sim.FaultStop: true, sim.FaultDamageState: true, sim.FaultTruncate: true,
	sim.FaultRestartEIO: true,
}
