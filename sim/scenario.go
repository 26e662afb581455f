package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
)

// Scenario is everything a run depends on besides the code: the seed for
// background noise (latencies, which torn sectors survive), the cluster's
// shape and the explicit schedule of faults. Running a scenario never
// invents a fault that is not in it.
type Scenario struct {
	Seed  uint64
	Nodes int
	// Spares are processes beyond the founding Nodes, with the IDs that
	// follow theirs: each starts empty, configured to join a running
	// cluster, and idles until an add-node fault admits it (see
	// membership.go).
	Spares int
	// Safety is the length of the phase with faults; Liveness bounds the
	// calm phase that follows, in which the system must make progress.
	Safety   time.Duration
	Liveness time.Duration
	Swarm    Swarm
	Faults   []Fault
	// Workload is what simulated clients do; nil for systems without
	// clients.
	Workload *Workload
	// Detection is the failure detection mode the cluster starts with
	// (1 heartbeat, 2 eager).
	Detection uint8
	// DetectionInterval, when set, replaces the detection policy's 100 ms
	// interval at start, and with it the owners' silence limit where it
	// is shorter than the delivery lease: a hand-written scenario uses it
	// to make a recovered owner's hold outlast its wait for the old
	// owner's quorum (node/quorum.go). The swarm never sets it.
	DetectionInterval time.Duration
	// Refusals models what a peer learns when it tries to reconnect to a
	// crashed process: the connection is refused, a round trip after the
	// reset, while the process stays down (the production runtime probes
	// a peer's port after a reset, live/refusal.go). The generator sets
	// it; scenarios saved before it existed read back without it and run
	// as they did.
	Refusals bool
	// Expect names node events that must happen at least once: what a
	// scripted scenario is about ("a|b" is met by either). A run without one of them fails, since
	// it passed without testing what it exists to test. Build an entry
	// with Expectation and read one with ExpectedNames.
	Expect []string
	// Checkpoint is how often queue owners certify checkpoints; the zero
	// value turns them off.
	Checkpoint CheckpointCadence
	// Dedup is the nodes' default deduplication window, which queues
	// created without one of their own take (QueueSpec.Dedup); zero means
	// the node's default.
	Dedup time.Duration
	// Quota, when positive, caps what each node's queues may keep on
	// disk: past it a node refuses new messages with disk-full until
	// consumers drain and compaction gives space back.
	Quota int64
	// RestAfter is how long an owner's queue must have been idle before
	// the owner rests (node.Config.RestAfter); zero means the node's
	// default.
	RestAfter time.Duration
	// Replicas is how many replicas each queue the nodes create has
	// (node.Config.Replicas); zero means three, the default.
	Replicas int
}

// ReplicaCount is how many replicas each of sc's queues has.
func (sc Scenario) ReplicaCount() int {
	if sc.Replicas == 0 {
		return 3
	}
	return sc.Replicas
}

// drawReplicas draws, from its own stream, five replicas per queue for a
// third of the five-node scenarios (every node then holds every queue, so
// recoveries seal three of five and nothing stands outside a replica set)
// and the default of three for the rest. An operator may configure any
// count up to the cluster's size; five is the other count the design
// names, and the one whose quorums differ from three's. A scenario that
// draws a long outage keeps three: the outage is there to make a
// replacement fall due, and five replicas on five nodes leave it nowhere
// to go.
func drawReplicas(seed uint64, nodes int, o GenerateOptions) int {
	r := newStream(seed, streamReplicas)
	if nodes != 5 || r.IntN(3) != 0 {
		return 0
	}
	if _, outage := drawOutage(seed, nodes, o); outage {
		return 0
	}
	return 5
}

// drawNameErrors draws, from its own stream, a rate of EIO on operations
// on file and directory names for a fifth of the queue scenarios whose
// profile allows disk errors at all. At these rates a node meets a few
// such errors in a run (a queue's creation alone makes dozens of names on
// each node), mostly halting it, which the run restarts.
func drawNameErrors(seed uint64, profile string) float64 {
	r := newStream(seed, streamNameErrors)
	if profile == "clean" || r.IntN(5) != 0 {
		return 0
	}
	return pick(r, 0.0005, 0.002)
}

// drawQuota draws a generated scenario's data quota from its own stream:
// a quarter of the seeds that checkpoint (without compaction a full node
// never recovers space) get one small enough to reach within a run.
func drawQuota(seed uint64, c CheckpointCadence) int64 {
	r := newStream(seed, streamQuota)
	if c.Records == 0 || r.IntN(4) != 0 {
		return 0
	}
	return pick(r, int64(96<<10), 192<<10, 384<<10)
}

// drawRestAfter draws a generated scenario's rest delay from its own
// stream: half the seeds keep the node's default (2s), which owners
// reach only in the quiet end or on a queue nobody uses for a while; the
// rest rest within a few hundred milliseconds of a lull, so owners rest
// and wake again and again while faults strike.
func drawRestAfter(seed uint64) time.Duration {
	r := newStream(seed, streamRest)
	return pick(r, 0, 0, 150*time.Millisecond, 400*time.Millisecond)
}

// drawDedup draws a generated scenario's deduplication window from its
// own stream: half the seeds keep the default, the rest a window a little
// longer than the simulated clients retry (3s), so queues forget IDs
// within a run while every retry still falls inside the window. A retry
// after the window is a new message by design, which the delivery
// checkers would rightly count as a second message.
func drawDedup(seed uint64) time.Duration {
	r := newStream(seed, streamDedup)
	return pick(r, 0, 0, 5*time.Second, 8*time.Second)
}

// CheckpointCadence says when a queue's owner starts a checkpoint: after
// Records confirmed records or Bytes appended bytes since the last one
// (zero Bytes: the node's default). Records zero means never. Segment,
// when set, replaces the simulator's log segment size: compaction drops
// whole segments, so small ones let it drop history early in a run.
type CheckpointCadence struct {
	Records int
	Bytes   int64
	Segment int64
	// Interval, when set, certifies a cut that long after the last one
	// on a queue that confirmed anything since (zero: the node's default,
	// longer than a run).
	Interval time.Duration
}

// drawCheckpoint draws a generated scenario's checkpoint cadence: a
// quarter of seeds run without checkpoints, the rest certify cuts every
// few to a few hundred records, some also on a byte budget smaller than a
// segment, so compaction races recoveries, replacements and restarts.
func drawCheckpoint(seed uint64) CheckpointCadence {
	r := newStream(seed, streamCheckpoint)
	if r.IntN(4) == 0 {
		return CheckpointCadence{}
	}
	c := CheckpointCadence{Records: pick(r, 3, 10, 40, 200)}
	c.Bytes = pick(r, int64(0), 0, 8<<10, 24<<10)
	c.Segment = pick(r, int64(0), 0, 4<<10, 8<<10)
	c.Interval = pick(r, 0, 0, 500*time.Millisecond, 2*time.Second)
	return c
}

// Expectation renders one entry of Scenario.Expect, met when any of names
// happens. The entry is text because scenario files spell it.
func Expectation(names ...event.Name) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, "|")
}

// ExpectedNames reads one entry of Scenario.Expect: the event names any of
// which meets it.
func ExpectedNames(expectation string) []event.Name {
	var names []event.Name
	for _, alt := range strings.Split(expectation, "|") {
		names = append(names, event.Name(alt))
	}
	return names
}

// Swarm is the per-seed mix of fault classes and rates. Each seed draws
// its own, so some seeds crash a lot, some partition a lot, and some are
// clean; a sweep covers many corners instead of one average.
type Swarm struct {
	// Profile names the kind of trouble the seed drew (see profiles); the
	// rates and classes below are what it chose, and all a run uses.
	Profile  string
	Net      netsim.LinkProfile
	Disk     DiskProfile
	ClockMax time.Duration // initial clock skew is uniform in ±ClockMax
	Classes  []FaultKind   // the fault kinds this seed schedules
}

// String summarizes the swarm options on one line.
func (s Swarm) String() string {
	names := make([]string, len(s.Classes))
	for i, k := range s.Classes {
		names[i] = k.String()
	}
	nameErrs := ""
	if s.Disk.NameErrorRate != 0 {
		nameErrs = fmt.Sprintf(" names %.4f", s.Disk.NameErrorRate)
	}
	return fmt.Sprintf("profile=%s faults=[%s] net{lat %v loss %.3f dup %.3f reorder %.3f} disk{sync %v eio sync %.3f write %.4f read %.4f%s torn %.2f reorder %.2f flip %.2f} skew ±%v",
		s.Profile, strings.Join(names, ","), s.Net.Latency, s.Net.Loss, s.Net.Duplicate, s.Net.Reorder,
		s.Disk.SyncLatency, s.Disk.SyncErrorRate, s.Disk.WriteErrorRate, s.Disk.ReadErrorRate, nameErrs,
		s.Disk.TornChance, s.Disk.ReorderChance, s.Disk.FlipChance, s.ClockMax)
}

// FaultKind names a kind of scheduled fault.
type FaultKind int

// Fault kinds.
const (
	FaultCrash            FaultKind = iota // crash Node, restart after Length
	FaultCrashAt                           // crash Node at its Hit-th hit of Boundary after At
	FaultPause                             // stop Node for Length, then resume it
	FaultIsolate                           // cut Node from every peer for Length
	FaultOneWay                            // cut Node→Peer for Length
	FaultSplit                             // cut the nodes in Group from the rest for Length
	FaultClog                              // hold Node→Peer messages for Length
	FaultSpike                             // add Extra latency to Node→Peer for Length
	FaultClockJump                         // move Node's clock by Extra
	FaultCrashLeader                       // crash the metadata leader, restart after Length
	FaultIsolateLeader                     // cut the metadata leader from every peer for Length
	FaultCrashAll                          // crash every node at once, restart after Length
	FaultCrashLeaderOwner                  // crash the metadata leader and the first queue's owner together
	FaultSetDetection                      // switch the detection policy to mode Hit (1 heartbeat, 2 eager)
	FaultLossy                             // lose a third of the messages to and from Node for Length
	FaultCrashOwner                        // crash the first queue's current owner, restart after Length
	// FaultDamage crashes Node and damages, on what its disk kept, a
	// synced frame early in its replica of the first queue; it restarts
	// after Length. The swarm draws it from a stream of its own (rot.go)
	// and aims it, like every fault that breaks a replica, at the one
	// node of the seed whose disk lies: two damaged replicas of one queue
	// can rightly lose confirmed messages.
	FaultDamage
	// FaultLoseWrites crashes Node, and its disk loses the last Hit
	// frames of the newest log segment of each queue replica it holds,
	// synced or not: the disk acknowledged writes it did not keep. It
	// restarts after Length. The swarm aims every such fault of a run at
	// one node, so no queue has two lying replicas.
	FaultLoseWrites
	// FaultMisdirect is FaultLoseWrites whose lost frames landed over the
	// segment's first frames instead: damage inside the synced range.
	FaultMisdirect
	// FaultRestartConsumer restarts consumer number Hit (counting from 1,
	// modulo the consumers there are) as a process restart would: its
	// connections close, and Length later a new client subscribes again,
	// finding each queue's owner afresh. It can land on a new owner while
	// other consumers still work with the old one.
	FaultRestartConsumer
	// FaultIsolateOwner cuts the first queue's current owner from every
	// peer (its clients still reach it) for Length. The swarm draws it
	// for 1 to 3 s, longer than a failover: the owner must step back
	// while its peers replace it, and rejoin as a follower afterwards.
	FaultIsolateOwner
	// FaultStop stops Node as an operator's SIGTERM does: the node hands
	// every queue it owns to another replica, then exits once it owns
	// none (or after stopHandoffMax), and restarts after Length. The
	// swarm adds stops from a stream of their own (stop.go).
	FaultStop
	// FaultAddNode has the first client ask the cluster to admit Node, a
	// spare, as a learner. It is an operator's command, not a failure;
	// the swarm adds it from a stream of its own (membership.go).
	FaultAddNode
	// FaultRemoveNode has the first client ask the cluster to remove
	// Node: the node is marked leaving, its queues move away, and the
	// metadata leader removes it once it holds none.
	FaultRemoveNode
	// FaultRebalance has the first client ask the cluster to spread the
	// existing queues' replicas evenly over its members, one move at a
	// time; the metadata leader ends it once they are.
	FaultRebalance
	// FaultRot flips one bit of a synced record frame in one of Node's
	// queue replicas while Node runs: whatever reads it next (a follower
	// catching up, a recovery, a checkpoint build, a restart) meets the
	// damage. Drawn like FaultDamage.
	FaultRot
	// FaultStall holds back every sync of the first queue's owner until
	// Length has passed: its device stopped answering for a while. Drawn
	// from the same stream as FaultRot.
	FaultStall
	// FaultPauseOwner stops the first queue's current owner for Length,
	// then resumes it: drawn for 1 to 3 s, longer than a failover, so the
	// owner wakes to find its queue served by another, with consumers
	// acking there, and must not deliver on the lease it held.
	FaultPauseOwner
	// FaultDamageState crashes Node, and its disk then holds a flipped
	// bit in one small state file of one of its queue replicas (the
	// replica's epoch and identity, or its checkpoint); it restarts after
	// Length. Drawn like FaultDamage, aimed at the seed's one lying disk.
	FaultDamageState
	// FaultTruncate crashes Node, and its disk then lost the end of a
	// sealed segment (one a later segment follows) of one of its queue
	// logs; it restarts after Length. Drawn like FaultDamage.
	FaultTruncate
	// FaultLoseDisk crashes Node, and its disk is then gone: the node
	// restarts after Length over an empty data directory, as the
	// documented procedure for a lost or replaced disk says (with
	// Rejoin), and must catch up its metadata and refill its replicas
	// without anyone taking its empty replicas' word for their queues'
	// histories. Drawn from a stream of its own (lostdisk.go) and aimed,
	// like every fault that breaks a replica, at the seed's one lying
	// disk.
	FaultLoseDisk
	// FaultIsolateRestingOwner waits, from At, for an owner to rest (its
	// queue idle, its grant left to lapse), then cuts its node from every
	// peer and every client for Length: drawn
	// longer than a resting owner's heartbeat and two silence limits, so
	// the owner must find out from its seldom heartbeats that it is cut
	// off while its peers replace it. Drawn from a stream of its own
	// (restingowner.go); it does nothing if no owner rests before the
	// safety phase ends.
	FaultIsolateRestingOwner
	// FaultRestartEIO crashes Node and restarts it after Length over a
	// disk that fails, once each, the first read of every file of one
	// class (Hit: see readClass): a bad sector met at a restart, which
	// must stop the node or be read again, never be taken for damage.
	// Drawn from a stream of its own (restarteio.go).
	FaultRestartEIO
	// FaultStackLoss lines up what a stacked replacement needs to leave
	// a queue no member of both sets can lead (stackloss.go): from At it
	// crashes both followers of the first all-policy queue served on
	// three replicas for Length, drops that queue's copying traffic
	// between its owner and each newcomer a replacement of them names,
	// and once both are swapped out crashes the owner over a damaged
	// replica. Drawn from a stream of its own for five-node scenarios
	// with such a queue, no long outage and no other broken replica.
	FaultStackLoss
	// FaultVanishConsumer takes consumer number Hit's host away for
	// Length, as a power cut would: nothing it sent before is answered,
	// and no node hears that its connections closed until one writes to
	// it once the host is back (its kernel then answers with a reset).
	// Meanwhile the nodes keep its subscriptions, as a real node does
	// until its client idle timeout. Drawn from a stream of its own
	// (vanish.go).
	FaultVanishConsumer
	// FaultCrashAtStep crashes, for Length, the first process of any node
	// to reach Boundary after At: a step only an owner takes at a moment
	// no timed fault can aim at. Drawn from a stream of its own
	// (stepcrash.go).
	FaultCrashAtStep
	faultKinds
)

var faultNames = [...]string{"crash", "crash-at", "pause", "isolate", "one-way", "split", "clog", "spike", "clock-jump",
	"crash-leader", "isolate-leader", "crash-all", "crash-leader-owner", "set-detection", "lossy", "crash-owner", "damage",
	"lose-writes", "misdirect", "restart-consumer", "isolate-owner", "stop", "add-node", "remove-node", "rebalance", "rot",
	"stall", "pause-owner", "damage-state", "truncate", "lose-disk", "isolate-resting-owner", "restart-eio",
	"stack-loss", "vanish-consumer", "crash-at-step"}

// String names the kind.
func (k FaultKind) String() string {
	if k >= 0 && k < faultKinds {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// Fault is one scheduled fault. Node and Peer are node indexes (0-based).
type Fault struct {
	At       time.Duration
	Kind     FaultKind
	Node     int
	Peer     int
	Group    []int
	Length   time.Duration
	Extra    time.Duration
	Boundary string
	Hit      int
}

// String renders the fault for traces and reports.
func (f Fault) String() string {
	s := fmt.Sprintf("at=%v %s n%d", f.At, f.Kind, f.Node+1)
	switch f.Kind {
	case FaultOneWay, FaultClog:
		s += fmt.Sprintf("->n%d for=%v", f.Peer+1, f.Length)
	case FaultSpike:
		s += fmt.Sprintf("->n%d extra=%v for=%v", f.Peer+1, f.Extra, f.Length)
	case FaultSplit:
		s = fmt.Sprintf("at=%v %s group=%v for=%v", f.At, f.Kind, f.Group, f.Length)
	case FaultClockJump:
		s += fmt.Sprintf(" by=%v", f.Extra)
	case FaultCrashAt:
		s += fmt.Sprintf(" boundary=%s hit=%d down=%v", f.Boundary, f.Hit, f.Length)
	case FaultLoseWrites, FaultMisdirect:
		s += fmt.Sprintf(" frames=%d for=%v", f.Hit, f.Length)
	case FaultCrashLeader, FaultIsolateLeader, FaultCrashAll, FaultCrashLeaderOwner, FaultCrashOwner, FaultIsolateOwner,
		FaultStall, FaultPauseOwner, FaultIsolateRestingOwner, FaultStackLoss:
		s = fmt.Sprintf("at=%v %s for=%v", f.At, f.Kind, f.Length)
	case FaultRestartEIO:
		s += fmt.Sprintf(" files=%s for=%v", readClass(f.Hit), f.Length)
	case FaultSetDetection:
		s = fmt.Sprintf("at=%v %s mode=%d", f.At, f.Kind, f.Hit)
	case FaultRestartConsumer, FaultVanishConsumer:
		s = fmt.Sprintf("at=%v %s consumer=%d for=%v", f.At, f.Kind, f.Hit, f.Length)
	case FaultAddNode, FaultRemoveNode:
		if f.Extra > 0 {
			s += fmt.Sprintf(" again=%v", f.Extra)
		}
	case FaultRebalance:
		s = fmt.Sprintf("at=%v %s", f.At, f.Kind)
	default:
		s += fmt.Sprintf(" for=%v", f.Length)
	}
	return s
}

// GenerateOptions say what a generated scenario may contain.
type GenerateOptions struct {
	Nodes      int
	Safety     time.Duration
	Liveness   time.Duration
	Boundaries []string // boundary names a crash-at fault may target
	// NoFlips leaves bit flips out, for systems that cannot yet rebuild
	// a replica whose storage is corrupt.
	NoFlips bool
	// Workload draws a client workload.
	Workload bool
}

// Generate draws a scenario for seed: the cluster size (unless the
// options fix it), the swarm options, then the fault schedule and the
// workload, all from the scenario stream.
func Generate(seed uint64, o GenerateOptions) Scenario {
	r := newStream(seed, streamScenario)
	sc := Scenario{Seed: seed, Nodes: o.Nodes, Safety: o.Safety, Liveness: o.Liveness}
	if sc.Nodes == 0 {
		sc.Nodes = pick(r, 3, 3, 5)
	}
	var prof profile
	sc.Swarm, prof = drawSwarm(r, o)
	count := 0
	if len(sc.Swarm.Classes) > 0 {
		count = r.IntN(prof.faultsMax + 1)
	}
	for range count {
		sc.Faults = append(sc.Faults, drawFault(r, sc, o))
	}
	if o.Workload {
		sc.Replicas = drawReplicas(seed, sc.Nodes, o)
		sc.Swarm.Disk.NameErrorRate = drawNameErrors(seed, sc.Swarm.Profile)
		drawDiskTrouble(&sc)
		drawOwnerPauses(&sc)
		drawRestingOwnerCuts(&sc)
		drawRestartEIO(&sc)
	}
	outage := false
	if f, ok := drawOutage(seed, sc.Nodes, o); ok && !slices.ContainsFunc(sc.Faults, lyingDisk) {
		sc.Faults = append(sc.Faults, f)
		outage = true
	} else if o.Workload {
		// Broken files, like every lying disk, leave out the seeds with
		// a long outage (drawOutage says why).
		drawBrokenFiles(&sc)
	}
	if o.Workload {
		drawStops(&sc) // graceful stops hand queues off, which only a queue workload has
		drawMembership(&sc)
	}
	slices.SortStableFunc(sc.Faults, func(a, b Fault) int { return int(a.At - b.At) })
	if o.Workload {
		sc.Workload = drawWorkload(r)
	}
	sc.Detection = uint8(1 + r.IntN(2))
	sc.Refusals = true
	if o.Workload {
		sc.Checkpoint = drawCheckpoint(seed)
		sc.Dedup = drawDedup(seed)
		drawQueueDedup(seed, sc.Workload)
		drawWideWindow(seed, sc.Workload)
		sc.Quota = drawQuota(seed, sc.Checkpoint)
		sc.RestAfter = drawRestAfter(seed)
		sc.Workload.AckLinger = drawAckLinger(seed)
		sc.Workload.ExtendChance = drawExtendChance(seed)
		sc.Workload.AtOwnerChance = drawAtOwner(seed)
		drawDeadLetter(seed, sc.Workload)
		sc.Workload.UnsubscribeEvery = drawUnsubscribeEvery(seed)
		sc.Workload.Purges = drawPurges(seed)
		sc.Workload.Moves = drawMoves(seed)
		drawDeadLetterChanges(seed, sc.Workload)
		sc.Workload.BadRequests = drawBadRequests(seed)
		sc.Workload.Churn = drawChurn(seed)
		lost := drawLostDisk(&sc, outage)
		vanish := drawVanishConsumer(&sc)
		step := drawStepCrash(&sc)
		if drawStackLoss(&sc, outage) || lost || vanish || step {
			slices.SortStableFunc(sc.Faults, func(a, b Fault) int { return int(a.At - b.At) })
		}
	}
	oneLyingDisk(&sc)
	return sc
}

// drawOutage draws, from its own stream so that no other draw changes, a
// long outage for a quarter of the five-node queue scenarios: one node
// crashes early in the run and stays down until about the calm phase.
// Its replicas stay down longer than a replacement takes to fall due
// (QueueNodeConfig.ReplaceAfter is 3s), and the cluster has nodes outside
// every replica set, so the run must restore the queues' redundancy; the
// shorter crashes the swarm draws end before that is owed. A seed with a
// lying disk gets no outage: the two are different stories, and an owner
// restarting over lost writes while a third of the cluster is down for
// seconds was no longer seen within the planted-bug hunt's 150 seeds
// (restart-owner-trusts-own-log went from seed 22 to seed 424).
func drawOutage(seed uint64, nodes int, o GenerateOptions) (Fault, bool) {
	r := newStream(seed, streamOutage)
	if nodes != 5 || !o.Workload || r.IntN(4) != 0 {
		return Fault{}, false
	}
	return Fault{
		At:     500*time.Millisecond + time.Duration(r.Int64N(int64(1500*time.Millisecond))),
		Kind:   FaultCrash,
		Node:   r.IntN(nodes),
		Length: 5500*time.Millisecond + time.Duration(r.Int64N(int64(time.Second))),
	}, true
}

// oneLyingDisk aims every fault of a scenario that breaks a replica (lost
// or misdirected writes, damage, rot) at one node, so at most one replica
// of any queue lies: on even seeds the first queue's placement owner (the
// case where an owner's restart could trust a short log), else the node
// the first such fault drew.
func oneLyingDisk(sc *Scenario) {
	liar := -1
	for _, f := range sc.Faults {
		if lyingDisk(f) {
			liar = f.Node
			break
		}
	}
	if liar < 0 {
		return
	}
	if sc.Seed%2 == 0 && sc.Workload != nil && len(sc.Workload.Queues) > 0 {
		liar = int(node.Placement{Nodes: NodeIDs(sc.Nodes), Replicas: sc.ReplicaCount()}.Owner(sc.Workload.Queues[0].Name)) - 1
	}
	for i, f := range sc.Faults {
		if lyingDisk(f) {
			sc.Faults[i].Node = liar
		}
	}
}

// lyingDisk reports whether f breaks a replica: it loses, misdirects or
// damages writes the disk had made durable.
func lyingDisk(f Fault) bool {
	switch f.Kind {
	case FaultLoseWrites, FaultMisdirect, FaultDamage, FaultRot, FaultDamageState, FaultTruncate, FaultLoseDisk:
		return true
	}
	return false
}

// profile is a kind of seed: which fault kinds it may schedule (each
// joins with chance join), how many faults at most, and how it sets the
// noise. Sweeping many seeds covers every profile many times, so some
// runs hammer one corner instead of all runs sampling an average.
type profile struct {
	name      string
	pool      []FaultKind
	join      float64
	faultsMax int
	noise     func(r *rand.Rand, s *Swarm)
}

var profiles = []profile{
	{name: "mixed", pool: mixedPool(), join: 0.5, faultsMax: 13},
	{name: "mixed", pool: mixedPool(), join: 0.5, faultsMax: 13},
	{name: "crash-heavy", join: 0.75, faultsMax: 20, pool: []FaultKind{FaultCrash, FaultCrashAt, FaultPause,
		FaultCrashLeader, FaultCrashAll, FaultCrashLeaderOwner, FaultCrashOwner}},
	{name: "partition-heavy", join: 0.75, faultsMax: 20, pool: []FaultKind{FaultIsolate, FaultOneWay, FaultSplit,
		FaultClog, FaultSpike, FaultIsolateLeader, FaultLossy, FaultIsolateOwner}, noise: func(r *rand.Rand, s *Swarm) {
		s.Net.Loss = pick(r, 0.01, 0.05)
	}},
	{name: "fsync-heavy", join: 0.5, faultsMax: 6, pool: []FaultKind{FaultCrash, FaultCrashAt},
		noise: func(r *rand.Rand, s *Swarm) {
			s.Disk.SyncErrorRate = pick(r, 0.01, 0.02, 0.05)
			s.Disk.WriteErrorRate = pick(r, 0.0005, 0.002)
		}},
	{name: "clean", noise: func(_ *rand.Rand, s *Swarm) {
		s.Net.Loss, s.Net.Duplicate, s.Net.Reorder = 0, 0, 0
		s.Disk.SyncErrorRate, s.Disk.WriteErrorRate, s.Disk.ReadErrorRate, s.Disk.FlipChance = 0, 0, 0, 0
	}},
}

func drawSwarm(r *rand.Rand, o GenerateOptions) (Swarm, profile) {
	prof := profiles[r.IntN(len(profiles))]
	s := Swarm{Profile: prof.name}
	s.Net.Latency = netsim.Latency{
		Min:        time.Duration(100+r.IntN(400)) * time.Microsecond,
		Max:        time.Duration(1+r.IntN(4)) * time.Millisecond,
		TailChance: pick(r, 0, 0.01, 0.05),
		TailMax:    time.Duration(20+r.IntN(200)) * time.Millisecond,
	}
	s.Net.Loss = pick(r, 0, 0, 0.01, 0.05)
	s.Net.Duplicate = pick(r, 0, 0, 0.01, 0.05)
	s.Net.Reorder = pick(r, 0, 0, 0.02, 0.1)
	s.Disk = DiskProfile{
		SyncLatency: netsim.Latency{
			Min:        time.Duration(50+r.IntN(500)) * time.Microsecond,
			Max:        time.Duration(1+r.IntN(5)) * time.Millisecond,
			TailChance: pick(r, 0, 0.01, 0.05),
			TailMax:    time.Duration(10+r.IntN(100)) * time.Millisecond,
		},
		SyncErrorRate:  pick(r, 0, 0, 0, 0.002, 0.02),
		WriteErrorRate: pick(r, 0, 0, 0, 0.0005),
		ReadErrorRate:  pick(r, 0, 0, 0, 0.0005),
		TornChance:     pick(r, 0, 0.5, 0.9),
		ReorderChance:  pick(r, 0, 0.3),
		FlipChance:     pick(r, 0, 0, 0, 0.2),
	}
	s.ClockMax = time.Duration(r.IntN(3)) * 250 * time.Millisecond
	if prof.noise != nil {
		prof.noise(r, &s)
	}
	if o.NoFlips {
		s.Disk.FlipChance = 0
	}
	for _, k := range prof.pool {
		if k == FaultCrashAt && len(o.Boundaries) == 0 {
			continue
		}
		if r.Float64() < prof.join {
			s.Classes = append(s.Classes, k)
		}
	}
	return s, prof
}

func drawFault(r *rand.Rand, sc Scenario, o GenerateOptions) Fault {
	f := Fault{
		At:     time.Duration(r.Int64N(int64(sc.Safety))),
		Kind:   sc.Swarm.Classes[r.IntN(len(sc.Swarm.Classes))],
		Node:   r.IntN(sc.Nodes),
		Length: time.Duration(10+r.IntN(1500)) * time.Millisecond,
	}
	f.Peer = (f.Node + 1 + r.IntN(sc.Nodes-1)) % sc.Nodes
	switch f.Kind {
	case FaultCrash, FaultCrashAt, FaultCrashOwner, FaultCrashLeader, FaultCrashLeaderOwner, FaultLoseWrites, FaultMisdirect:
		// A quarter of crashed processes come back at once, as under a
		// supervisor that restarts them: quicker than a failover, so the
		// restarted node still holds its roles and must prove its log.
		if r.IntN(4) == 0 {
			f.Length = time.Duration(5+r.IntN(30)) * time.Millisecond
		}
	}
	switch f.Kind {
	case FaultCrashAt:
		f.Boundary = o.Boundaries[r.IntN(len(o.Boundaries))]
		f.Hit = 1 + r.IntN(3)
	case FaultSplit:
		for i := range sc.Nodes {
			if r.IntN(2) == 0 {
				f.Group = append(f.Group, i)
			}
		}
	case FaultSpike:
		f.Extra = time.Duration(5+r.IntN(300)) * time.Millisecond
	case FaultClockJump:
		f.Extra = time.Duration(r.IntN(4001)-2000) * time.Millisecond
	case FaultSetDetection:
		f.Hit = 1 + r.IntN(2)
	case FaultLoseWrites, FaultMisdirect:
		f.Hit = 1 + r.IntN(30)
	case FaultRestartConsumer:
		f.Hit = 1 + r.IntN(3)
	case FaultIsolateOwner:
		f.Length = time.Second + f.Length*4/3 // 1 to 3 s, from the usual draw
	case FaultCrashOwner:
		// In five-node clusters, a third of owner kills last long enough
		// for the dead owner to be replaced by a node outside the set
		// (QueueNodeConfig.ReplaceAfter is 3s). No extra draw, so other
		// faults of the seed stay as they were.
		if sc.Nodes == 5 && f.Length > time.Second {
			f.Length *= 4
		}
	}
	return f.Normalized()
}

// Normalized zeroes the fields the fault's kind does not use, so a fault
// reads the same however it was made (drawn, parsed or written by hand).
func (f Fault) Normalized() Fault {
	usesNode, usesLength := true, true
	switch f.Kind {
	case FaultSplit, FaultCrashLeader, FaultIsolateLeader, FaultCrashAll, FaultCrashLeaderOwner, FaultCrashOwner,
		FaultRestartConsumer, FaultIsolateOwner, FaultStall, FaultPauseOwner, FaultIsolateRestingOwner, FaultStackLoss,
		FaultVanishConsumer, FaultCrashAtStep:
		usesNode = false
	case FaultSetDetection, FaultRebalance:
		usesNode, usesLength = false, false
	case FaultClockJump, FaultAddNode, FaultRemoveNode, FaultRot:
		usesLength = false
	}
	if !usesNode {
		f.Node = 0
	}
	if !usesLength {
		f.Length = 0
	}
	if f.Kind != FaultOneWay && f.Kind != FaultClog && f.Kind != FaultSpike {
		f.Peer = 0
	}
	if f.Kind != FaultSplit {
		f.Group = nil
	}
	if f.Kind != FaultSpike && f.Kind != FaultClockJump {
		f.Extra = 0
	}
	if f.Kind != FaultCrashAt && f.Kind != FaultCrashAtStep {
		f.Boundary = ""
	}
	if f.Kind != FaultCrashAt && f.Kind != FaultSetDetection && f.Kind != FaultLoseWrites && f.Kind != FaultMisdirect &&
		f.Kind != FaultRestartConsumer && f.Kind != FaultRestartEIO && f.Kind != FaultVanishConsumer {
		f.Hit = 0
	}
	return f
}

func pick[T any](r *rand.Rand, choices ...T) T { return choices[r.IntN(len(choices))] }

// String renders the scenario for a failure report: its shape, swarm,
// workload and every scheduled fault, one per line.
func (sc Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d nodes=%d safety=%v liveness=%v detection=%d", sc.Seed, sc.Nodes, sc.Safety, sc.Liveness, sc.Detection)
	if sc.Spares > 0 {
		fmt.Fprintf(&b, " spares=%d", sc.Spares)
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "swarm %s\n", sc.Swarm)
	if sc.Workload != nil {
		fmt.Fprintf(&b, "workload %s\n", *sc.Workload)
	}
	for _, f := range sc.Faults {
		fmt.Fprintf(&b, "fault %s\n", f)
	}
	return b.String()
}
