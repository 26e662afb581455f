// Package trials measures the simulator's recoveries: one failover or one
// metadata election per seed, timed in virtual time from the fault to each
// instant a user would notice. Every trial is also judged by every
// checker in props, so a measurement never hides a broken promise.
package trials

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// FailoverCase is one row of the failover report.
type FailoverCase struct {
	// WithLeader crashes the metadata leader together with the owner.
	WithLeader bool
	// Backlog is how many messages are published (and left unconsumed)
	// before the kill.
	Backlog int
	// Checkpoint is the checkpoint cadence in records; zero turns
	// checkpoints off.
	Checkpoint int
	// Settled is how many messages are published and acked before the
	// kill, a consumer keeping up with them: a long history that a
	// recovery should not have to replay.
	Settled int
}

// failoverKillAt is when the owner dies, after the backlog is published.
const failoverKillAt = 4 * time.Second

// settledEvery is how often the producer of a settled history publishes:
// 50,000 messages a virtual second.
const settledEvery = 20 * time.Microsecond

// settledSegmentBytes is the log segment size of a settled-history case.
const settledSegmentBytes = 256 << 10

// killAt is when the case's owner dies: at failoverKillAt, or, for a
// settled history, after two seconds for the cluster to start (its queue
// is served after about a second and a half), the history's publishing
// time with half as long again to spare, and two seconds for the last
// acks and checkpoints.
func (c FailoverCase) killAt() time.Duration {
	if c.Settled == 0 {
		return failoverKillAt
	}
	return 2*time.Second + time.Duration(c.Settled)*settledEvery*3/2 + 2*time.Second
}

// FailoverScenario builds one trial: the seed's network latency and sync
// latency (no loss, no disk errors), one majority queue, a backlog built
// by one producer, the owner (and maybe the metadata leader) killed at
// the case's kill time for good, and probe clients starting at the kill.
func FailoverScenario(seed uint64, c FailoverCase, mode uint8) sim.Scenario {
	sc := sim.QueueScenario(seed)
	d := &sc.Swarm.Disk
	d.SyncErrorRate, d.WriteErrorRate, d.ReadErrorRate = 0, 0, 0
	net := &sc.Swarm.Net
	net.Loss, net.Duplicate, net.Reorder = 0, 0, 0
	sc.Swarm.ClockMax, sc.Detection = 0, mode
	killAt := c.killAt()
	sc.Safety, sc.Liveness = killAt+6*time.Second, 3*time.Second
	wl := &sim.Workload{
		Queues:     []sim.QueueSpec{{Name: "bench", Policy: wire.PolicyMajority}},
		PayloadMax: 1024, AckChance: 1, Lease: 5 * time.Second, Window: 256,
		RequestTimeout: time.Second, Quiet: time.Second, ProbeAt: killAt,
		Think: netsim.Latency{},
	}
	switch {
	case c.Settled > 0 && c.Backlog > 0:
		panic("trials: a failover case has a settled history or a backlog, not both")
	case c.Settled > 0:
		// One producer publishes small messages and one consumer acks
		// each as it comes; small payloads keep the simulated disks of a
		// long history small.
		wl.Producers, wl.Consumers, wl.PublishLimit, wl.PayloadMax = 1, 1, c.Settled, 256
		wl.PublishEvery = netsim.Latency{Min: settledEvery, Max: settledEvery}
	case c.Backlog > 0:
		// One producer publishes the backlog in about two seconds.
		every := max(2*time.Second/time.Duration(c.Backlog), 10*time.Microsecond)
		wl.Producers, wl.PublishLimit = 1, c.Backlog
		wl.PublishEvery = netsim.Latency{Min: every, Max: every}
	}
	sc.Workload = wl
	sc.Dedup, sc.Checkpoint, sc.Quota = 0, sim.CheckpointCadence{}, 0
	if c.Checkpoint > 0 {
		sc.Checkpoint.Records = c.Checkpoint
	}
	if c.Settled > 0 {
		// Small segments, so compaction can drop most of the history
		// (and the simulated disk, which copies a file at each sync,
		// stays fast).
		sc.Checkpoint.Segment = settledSegmentBytes
	}
	// Losing the owner and the metadata leader together costs two nodes:
	// with three, the metadata group loses its quorum (unless the owner
	// leads it), so that case runs on five nodes, three of them replicas.
	sc.Nodes, sc.Replicas = 3, 0
	if c.WithLeader {
		sc.Nodes = 5
	}
	kind := sim.FaultCrashOwner
	if c.WithLeader {
		kind = sim.FaultCrashLeaderOwner
	}
	sc.Faults = []sim.Fault{{At: killAt, Kind: kind, Length: time.Hour}}
	return sc
}

// FailoverTrial is one measured owner loss, in virtual time from the kill.
//
// Admission is when a survivor's recovery was activated (recovery.done),
// from which it admits publishes; Activation when it began to deliver too
// (queue.active), once it outwaited the old owner's quorum.
type FailoverTrial struct {
	Seed                             uint64
	Suspicion, Admission, Activation time.Duration
	FirstDelivery, FirstPublish      time.Duration
	// Complete says every instant above was observed within the run.
	Complete bool
	// Failovers counts completed recoveries; more than one besides the
	// replacements means a reassignment nothing called for.
	Failovers int
	// Replacements counts recoveries that replaced the dead owner with a
	// node outside the replica set (the owner stays dead, so on five
	// nodes this follows Config.ReplaceAfter after the kill).
	Replacements int
	// Unrecoverable says the kill took two of the queue's three replicas
	// (the metadata leader was a second replica). No seal quorum is left,
	// so such a trial measures nothing; it still runs every checker (a
	// recovery the kill interrupted may finish on the quorum it had
	// already installed, which the installed-quorum check judges).
	Unrecoverable bool
	// OwnerLed says the killed owner also led the metadata group, so the
	// survivors had to elect a leader before anyone could notice it.
	OwnerLed bool
	// Stages splits the time to the first new confirmed publish, in order:
	// until the owner is confirmed down, until the leader plans the
	// recovery, until the candidate starts it, until the metadata has
	// activated it (recovery.done: it admits publishes), and until the
	// first publish is confirmed. Zero where a stage was not
	// seen (the trial is then incomplete).
	Stages [StageCount]time.Duration
	// Rebuilt is how many records the recovered owner replayed to
	// rebuild the queue's state: with checkpoints, those after the cut
	// it started from; without, the whole retained log.
	Rebuilt uint64
	// Compacted is how far every surviving replica had dropped its log
	// when the owner died: the least, over them, of the highest index
	// each reported compacting to.
	Compacted  uint64
	Violations []sim.Violation
}

// The stages of a measured failover (FailoverTrial.Stages).
const (
	StageConfirm = iota
	StagePlan
	StageDispatch
	StageRecover
	StageAdmit
	StageCount
)

// StageNames name the stages, in order.
var StageNames = [StageCount]string{"confirm", "plan", "dispatch", "recover", "admit"}

// RunFailoverTrial runs and measures one trial.
func RunFailoverTrial(seed uint64, c FailoverCase, mode uint8) FailoverTrial {
	sc := FailoverScenario(seed, c, mode)
	rep := props.RunQueue(sc, nil)
	t := FailoverTrial{Seed: seed, Failovers: rep.Stats.Failovers}
	for _, v := range rep.Violations {
		if v.Kind == sim.Safety {
			t.Violations = append(t.Violations, v)
		}
	}
	killAt := c.killAt()
	var owner node.NodeID
	killed := 0
	replicas := node.Placement{Nodes: sim.NodeIDs(sc.Nodes), Replicas: 3}.ReplicaSet("bench")
	for _, cr := range rep.History.Crashed {
		if cr.At != killAt {
			continue
		}
		if cr.Reason == "fault: owner" {
			owner = cr.Node
		}
		if slices.Contains(replicas, cr.Node) {
			killed++
		}
	}
	t.OwnerLed = leaderAt(rep.History.NodeEvents, killAt) == owner
	// Sealing needs two of the three replicas, so losing two leaves the
	// queue nothing to recover from.
	t.Unrecoverable = killed >= 2
	found := [5]bool{}
	replaced := map[[2]uint64]bool{}
	var instants [StageCount]time.Duration // when each stage ended, from the kill
	for _, e := range rep.History.NodeEvents {
		switch {
		case e.At < killAt:
		case e.Name == event.DetectConfirm && node.NodeID(e.Value) == owner && instants[StageConfirm] == 0:
			instants[StageConfirm] = e.At - killAt
		case e.Name == event.MetaPlanRecovery && e.Queue == "bench" && instants[StagePlan] == 0:
			instants[StagePlan] = e.At - killAt
		case e.Name == event.RecoveryStart && e.Queue == "bench" && instants[StageDispatch] == 0:
			instants[StageDispatch] = e.At - killAt
		case e.Name == event.RecoveryDone && e.Queue == "bench" && e.Node != owner && !found[4]:
			// Activated, the new owner admits publishes; it delivers
			// once it outwaited the old owner's quorum (queue.active).
			t.Admission, found[4] = e.At-killAt, true
			instants[StageRecover] = t.Admission
		case e.Name == event.MetaReplicaReplaced && e.Queue == "bench" && !replaced[[2]uint64{e.Inc, e.Epoch}]:
			// Every node emits it as it applies the activation.
			replaced[[2]uint64{e.Inc, e.Epoch}] = true
			t.Replacements++
		case e.Name == event.DetectSuspect && node.NodeID(e.Value) == owner && !found[0]:
			t.Suspicion, found[0] = e.At-killAt, true
		case e.Name == event.QueueActive && e.Queue == "bench" && e.Node != owner && !found[1]:
			t.Activation, found[1] = e.At-killAt, true
		case e.Name == event.QueueRebuilt && e.Queue == "bench" && e.Node != owner && t.Rebuilt == 0:
			t.Rebuilt = e.Value
		}
	}
	compacted := map[node.NodeID]uint64{}
	for _, e := range rep.History.NodeEvents {
		if e.At < killAt && e.Name == event.QueueCompacted && e.Queue == "bench" && slices.Contains(replicas, e.Node) {
			compacted[e.Node] = max(compacted[e.Node], e.Value)
		}
	}
	first := true
	for _, id := range replicas {
		if c := compacted[id]; id != owner && (first || c < t.Compacted) {
			t.Compacted, first = c, false
		}
	}
	sub, pub := sim.ProbeClients(sc.Workload)
	for _, d := range rep.History.Deliveries {
		if d.Client == sub && !found[2] {
			t.FirstDelivery, found[2] = d.Received-killAt, true
		}
	}
	for _, op := range rep.History.Ops {
		if op.Client == pub && op.Kind == "publish" && op.Outcome == sim.OutcomeOK && (!found[3] || op.Done-killAt < t.FirstPublish) {
			t.FirstPublish, found[3] = op.Done-killAt, true
		}
	}
	t.Complete = found == [5]bool{true, true, true, true, true}
	instants[StageAdmit] = t.FirstPublish
	t.Stages = stageSpans(instants)
	if owner == 0 {
		t.Violations = append(t.Violations, sim.Violation{Kind: sim.Safety, Checker: "failover-report",
			Detail: "the queue had no running owner to kill"})
	}
	return t
}

// stageSpans turns the instants that end each stage into the stages'
// lengths. A stage whose end was not seen, or came before the previous
// one's (a plan by an earlier leader, say), is zero, and the next one
// counts from the last instant seen.
func stageSpans(instants [StageCount]time.Duration) [StageCount]time.Duration {
	var spans [StageCount]time.Duration
	from := time.Duration(0)
	for i, at := range instants {
		if at > from {
			spans[i], from = at-from, at
		}
	}
	return spans
}

// leaderAt names the metadata leader the simulator's leader faults aim
// at: the node that announced leadership of the highest term before at.
func leaderAt(events []sim.NodeEvent, at time.Duration) node.NodeID {
	var leader node.NodeID
	var term uint64
	for _, e := range events {
		if e.At > at {
			break
		}
		if e.Name == event.MetaLeader && e.Term >= term {
			leader, term = e.Node, e.Term
		}
	}
	return leader
}
