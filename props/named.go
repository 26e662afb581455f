package props

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// NamedScenario is one of the failover acceptance scenarios: a scripted
// fault schedule on top of a seed's workload, and what must be seen to
// happen besides every checker passing.
type NamedScenario struct {
	Name  string
	About string
	// Build scripts the faults, given the first queue's owner and its
	// other replicas in recovery-candidate order (0-based node indexes).
	Build func(owner int, others []int) []sim.Fault
	// Expect names node events that must occur at least once, as
	// sim.Scenario.Expect does: build each entry with expect.
	Expect []string
	// Nodes is the cluster size; zero means three.
	Nodes int
	// Spares are processes beyond Nodes that may join (sim.Scenario's
	// Spares); Build names them by index from Nodes on.
	Spares int
	// Checkpoint, when set, replaces the seed's checkpoint cadence.
	Checkpoint sim.CheckpointCadence
}

// expect is one entry of NamedScenario.Expect, met when any of names
// happens: sim.Expectation, shortened for the tables below.
func expect(names ...event.Name) string { return sim.Expectation(names...) }

// NamedScenarios are the acceptance scenarios of owner failover.
var NamedScenarios = []NamedScenario{
	{
		Name:  "confirm-ab-c-behind",
		About: "the owner and one follower confirm while the other follower is cut off; the owner is lost; the lagging follower may be the candidate and must recover the confirmed history before it serves",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 2 * time.Second, Kind: sim.FaultIsolate, Node: others[0], Length: 2500 * time.Millisecond},
				{At: 4 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 3 * time.Second},
			}
		},
		Expect: []string{expect(event.RecoveryDone)},
	},
	{Name: "owner-kill", About: "the owner's process is killed and stays down past detection",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 3 * time.Second}}
		}, Expect: []string{expect(event.RecoveryDone)}},
	{Name: "owner-pause", About: "the owner pauses longer than detection; when it resumes it must stop serving and confirm nothing",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultPause, Node: owner, Length: 3 * time.Second}}
		}, Expect: []string{expect(event.RecoveryDone), expect(event.QueueStale, event.QueueOwnerStopped)}},
	{Name: "silent-loss-to-owner", About: "every packet to the owner vanishes silently, no resets",
		Build: func(owner int, others []int) []sim.Fault {
			var fs []sim.Fault
			for _, o := range others {
				fs = append(fs, sim.Fault{At: 3 * time.Second, Kind: sim.FaultOneWay, Node: o, Peer: owner, Length: 3 * time.Second})
			}
			return fs
		}, Expect: []string{expect(event.RecoveryDone)}},
	{Name: "owner-cut-from-metadata", About: "the owner is cut from every node but still reachable by clients; it must answer them fenced",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultIsolate, Node: owner, Length: 3 * time.Second}}
		}, Expect: []string{expect(event.RecoveryDone), expect(event.QueueStale, event.QueueOwnerStopped)}},
	// On three nodes, losing two leaves no majority at all, and the queue
	// simply waits for them; five nodes keep a metadata majority, so the
	// survivors must elect a leader, confirm the owner down and recover.
	{Name: "owner-and-leader-lost", About: "the owner and the metadata leader are lost at once, on five nodes",
		Build: func(int, []int) []sim.Fault {
			return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultCrashLeaderOwner, Length: 3 * time.Second}}
		}, Expect: []string{expect(event.RecoveryDone)}, Nodes: 5},
	{Name: "candidate-lost", About: "the recovery candidate crashes mid-recovery, after sealing itself",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 3 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 4 * time.Second},
				{At: 3 * time.Second, Kind: sim.FaultCrashAt, Node: others[0], Boundary: "recovery.after.seal-persisted", Hit: 1, Length: 2 * time.Second},
			}
		}, Expect: []string{expect(event.RecoveryDone)}},
	{Name: "lost-replies", About: "the network loses a third of everything during the failover",
		// The owner stays down for the rest of the safety phase: with a
		// third of every message lost both ways, an election among the
		// survivors can take a few rounds when the owner also led.
		Build: func(owner int, others []int) []sim.Fault {
			fs := []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 5 * time.Second}}
			for _, o := range others {
				fs = append(fs, sim.Fault{At: 3 * time.Second, Kind: sim.FaultLossy, Node: o, Length: 4 * time.Second})
			}
			return fs
		}, Expect: []string{expect(event.RecoveryDone)}},
	{Name: "repeated-failovers", About: "the owner is lost, then the recovered owner, then the next",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 2 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 5 * time.Second},
				{At: 4 * time.Second, Kind: sim.FaultCrash, Node: others[0], Length: 1500 * time.Millisecond},
				{At: 6 * time.Second, Kind: sim.FaultCrash, Node: others[1], Length: 1500 * time.Millisecond},
			}
		}, Expect: []string{expect(event.RecoveryDone)}},
	// Five nodes, so there is a node outside the queue's replica set. The
	// owner stays down past Config.ReplaceAfter and is replaced; then a
	// second original replica (by then the owner) is lost too. Without the
	// replacement, two of the three original replicas would be gone and
	// the queue could not recover.
	{Name: "replica-replaced", About: "the owner is down for good and is replaced by a node outside the replica set, which catches up; then a second original replica is lost",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 1500 * time.Millisecond, Kind: sim.FaultCrash, Node: owner, Length: 7 * time.Second},
				{At: 6500 * time.Millisecond, Kind: sim.FaultCrash, Node: others[0], Length: 2 * time.Second},
			}
		}, Expect: []string{expect(event.MetaReplicaReplaced), expect(event.QueueReplaced)}, Nodes: 5},
	{Name: "damaged-owner", About: "the owner restarts over a damaged log: it fences its replica and reports it lost, and the queue fails over though the node is up",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 3 * time.Second, Kind: sim.FaultDamage, Node: owner, Length: 500 * time.Millisecond}}
		}, Expect: []string{expect(event.QueueFenced), expect(event.RecoveryDone)}},
	// The defect an attack probe found: every node stops, the owner's disk
	// loses its last synced records, everyone restarts. The owner must
	// prove what it holds against the followers before it serves.
	{Name: "owner-lost-writes", About: "every node stops and the owner's disk loses the last 20 records it had acknowledged as synced; after the restart the owner must recover them from the followers, never make them truncate",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{
				{At: 3 * time.Second, Kind: sim.FaultLoseWrites, Node: owner, Hit: 20, Length: time.Second},
				{At: 3 * time.Second, Kind: sim.FaultCrashAll, Length: time.Second},
			}
		}, Expect: []string{expect(event.RecoveryDone)}},
	// The same lie, with the last records confirmed on the owner and one
	// follower only: the owner and the lagging follower come back first
	// and must wait for the third replica.
	{Name: "owner-lost-writes-lagging-follower", About: "a follower is cut off while the owner and the other follower confirm; every node stops, the owner's disk loses its last records, and the owner and the lagging follower restart first: they must wait for the third replica",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 2 * time.Second, Kind: sim.FaultIsolate, Node: others[0], Length: 1500 * time.Millisecond},
				{At: 3400 * time.Millisecond, Kind: sim.FaultLoseWrites, Node: owner, Hit: 20, Length: 600 * time.Millisecond},
				{At: 3400 * time.Millisecond, Kind: sim.FaultCrash, Node: others[0], Length: 600 * time.Millisecond},
				{At: 3400 * time.Millisecond, Kind: sim.FaultCrash, Node: others[1], Length: 2 * time.Second},
			}
		}, Expect: []string{expect(event.RecoveryDone)}},
	{Name: "policy-change-mid-suspicion", About: "the detection policy changes while the owner is suspected but not yet confirmed",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{
				{At: 3 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 4 * time.Second},
				{At: 3200 * time.Millisecond, Kind: sim.FaultSetDetection, Hit: 2},
			}
		}, Expect: []string{expect(event.RecoveryDone)}},
	// An operator restarts every node in turn, each with SIGTERM: each
	// hands the queues it owns to another replica before it exits, so the
	// queue changes hands three times without a failure detector.
	{Name: "rolling-restart", About: "every node is stopped gracefully in turn, the owner first, and restarted a second later; each hands its queues off before it exits",
		Build: func(owner int, others []int) []sim.Fault {
			return []sim.Fault{
				{At: 2 * time.Second, Kind: sim.FaultStop, Node: owner, Length: time.Second},
				{At: 4 * time.Second, Kind: sim.FaultStop, Node: others[0], Length: time.Second},
				{At: 6 * time.Second, Kind: sim.FaultStop, Node: others[1], Length: time.Second},
			}
		}, Expect: []string{expect(event.QueueHandoffProposed), expect(event.RecoveryDone)}},
	// An operator adds a fourth node and then removes the first queue's
	// owner while producers and consumers work: the owner hands its
	// queues over, its other replicas move to the new node, and it leaves
	// the metadata group once it holds nothing.
	{Name: "remove-owner-under-traffic", About: "a spare joins the three-node cluster, then the first queue's owner is removed while it serves: it hands its queues off, its replicas are replaced on the new node, and it leaves once it holds none",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{
				{At: 2 * time.Second, Kind: sim.FaultAddNode, Node: 3},
				{At: 3500 * time.Millisecond, Kind: sim.FaultRemoveNode, Node: owner},
			}
		}, Expect: []string{expect(event.QueueHandoffProposed), expect(event.MetaReplicaReplaced), expect(event.MetaMembership)},
		Spares: 1},
	// Fifteen founders: the first five by ID vote, the other ten are
	// learners. The metadata leader and the first queue's owner are lost,
	// one after the other, and a voter is cut off meanwhile.
	{Name: "fifteen-nodes", About: "fifteen founding nodes, five voting and ten learning; the metadata leader crashes, then the first queue's owner, by then maybe another node, stays down until it is replaced, while a voter is cut off",
		Build: func(int, []int) []sim.Fault {
			return []sim.Fault{
				{At: 1600 * time.Millisecond, Kind: sim.FaultCrashLeader, Length: time.Second},
				{At: 2600 * time.Millisecond, Kind: sim.FaultCrashOwner, Length: 5400 * time.Millisecond},
				{At: 4 * time.Second, Kind: sim.FaultIsolate, Node: 3, Length: 2 * time.Second},
			}
		}, Expect: []string{expect(event.RecoveryDone), expect(event.MetaReplicaReplaced)}, Nodes: 15},
	// Checkpoints every few records with tiny segments: the replicas drop
	// most of their history before the owner dies, and the candidate
	// recovers from its checkpoint plus the suffix.
	{Name: "compacted-owner-kill", About: "replicas checkpoint every few records and drop the segments certified cuts cover; the owner is killed, and the recovery works from checkpoints and the retained suffix",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 4 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 3 * time.Second}}
		}, Expect: []string{expect(event.QueueCompacted), expect(event.RecoveryDone)},
		Checkpoint: sim.CheckpointCadence{Records: 3, Bytes: 4 << 10, Segment: 4 << 10}},
	// A replacement starts empty while the others have compacted: it can
	// only catch up from a checkpoint.
	{Name: "compacted-replica-replaced", About: "replicas compact every few records; the owner is down for good and replaced by an empty node, which can only catch up from a checkpoint",
		Build: func(owner int, _ []int) []sim.Fault {
			return []sim.Fault{{At: 4 * time.Second, Kind: sim.FaultCrash, Node: owner, Length: 10 * time.Second}}
		}, Expect: []string{expect(event.QueueCompacted), expect(event.MetaReplicaReplaced), expect(event.CheckpointInstalled)},
		Nodes: 5, Checkpoint: sim.CheckpointCadence{Records: 3, Bytes: 4 << 10, Segment: 4 << 10}},
}

// Scenario builds the named scenario on seed's workload, with disk errors
// off so that only the scripted faults happen, in heartbeat detection.
func (ns NamedScenario) Scenario(seed uint64) sim.Scenario {
	sc := sim.QueueScenario(seed)
	d := &sc.Swarm.Disk
	d.SyncErrorRate, d.WriteErrorRate, d.ReadErrorRate = 0, 0, 0
	sc.Swarm.Net.Loss, sc.Detection = 0, node.DetectHeartbeat
	sc.Workload.Queues[0].Policy = 0 // majority: the policy every failover case is about
	// Scripted failovers are timed against their workloads; consumers that
	// hold deliveries for leases at a time would move them. The swarm
	// covers lease extensions across failovers.
	sc.Workload.ExtendChance = 0
	// Likewise purges: a named scenario expects every message it publishes
	// to be delivered.
	sc.Workload.Purges = 0
	// And owner moves: a named scenario scripts its own failovers.
	sc.Workload.Moves = 0
	sc.Workload.DeadLetterChanges = 0
	// And bad requests: the swarm sends those; a named scenario keeps the
	// network's draws it was timed with.
	sc.Workload.BadRequests = 0
	sc.Workload.Churn = 0
	sc.Nodes, sc.Spares, sc.Replicas = 3, ns.Spares, 0 // the faults are aimed at a three-replica set
	if ns.Nodes > 0 {
		sc.Nodes = ns.Nodes
	}
	set := node.Placement{Nodes: sim.NodeIDs(sc.Nodes), Replicas: 3}.ReplicaSet(sc.Workload.Queues[0].Name)
	owner := int(set[0]) - 1
	others := []int{int(set[1]) - 1, int(set[2]) - 1}
	sc.Faults = ns.Build(owner, others)
	sc.Expect = slices.Clone(ns.Expect)
	if ns.Checkpoint.Records > 0 {
		sc.Checkpoint = ns.Checkpoint
	}
	slices.SortStableFunc(sc.Faults, func(a, b sim.Fault) int { return int(a.At - b.At) })
	return sc
}
