package sim

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
)

// QueueSystem runs cairn queue nodes. Its judging happens in props, over
// the history the world records; Check here only gathers the ground
// truth: what every disk holds at the end.
type QueueSystem struct {
	cfg node.Config
	// founders is how many nodes found the cluster; a node with a
	// higher ID is a spare, which joins instead.
	founders int
	// leader is the node that announced metadata leadership for the
	// highest term so far (zero for none yet), and leaderTerm that term.
	leader     node.NodeID
	leaderTerm uint64
	// owners holds, per queue, the node that announced activation at the
	// highest epoch: the owner faults aim at.
	owners map[string]activeOwner
}

// activeOwner is a queue's owner as the activations announced it.
type activeOwner struct {
	node       node.NodeID
	inc, epoch uint64
}

// QueueNodeConfig is the node configuration the simulator uses: small
// segments, so segment rolls (and their directory syncs) happen often, and
// a replica down for 3s is replaced, so replacement fits in a run;
// checkpoints travel in 64 KiB chunks (a log page's bytes), so that a
// transfer takes several of them. A chunk costs a round trip, and a
// checkpoint holds the queue's live messages: with payloads of up to
// 4 KiB a simulated backlog reaches a megabyte or more, which 1 KiB
// chunks took a thousand round trips (seconds) to copy to a
// replacement, longer than the failover bound allows a recovery that
// must bring that replacement in before it activates. A finished build
// appends its window to the journal 64 entries a tick, so that the
// simulated queues' windows of a few hundred IDs take several ticks, as
// a busy queue's tens of thousands do, and crashes and new cuts meet a
// journal part way written.
func QueueNodeConfig() node.Config {
	return node.Config{Tick: 20 * time.Millisecond, SegmentSize: 32 << 10, PageRecords: 64, PageBytes: 64 << 10,
		CheckpointChunkBytes: 64 << 10, ReplaceAfter: 3 * time.Second, JournalStepEntries: 64}
}

// journalStepSwarmMax is the largest checkpoint cadence the swarm draws
// (records); runs checkpointing more rarely step their journal by the
// cadence.
const journalStepSwarmMax = 256

// NewQueueSystem returns a queue system for one run of sc.
func NewQueueSystem(sc Scenario) *QueueSystem {
	return &QueueSystem{cfg: QueueConfig(sc), founders: sc.Nodes, owners: make(map[string]activeOwner)}
}

// QueueConfig is the node configuration a run of sc gives every node
// (IDs and peers aside).
func QueueConfig(sc Scenario) node.Config {
	cfg := QueueNodeConfig()
	if sc.Detection == node.DetectEager {
		cfg.Detection = node.DetectionPolicy{Mode: node.DetectEager, Interval: 100 * time.Millisecond}
	}
	if sc.DetectionInterval > 0 {
		if cfg.Detection.Mode == 0 {
			cfg.Detection = faultDetectionPolicy(node.DetectHeartbeat)
		}
		cfg.Detection.Interval = sc.DetectionInterval
	}
	cfg.DedupWindow, cfg.DataBytesMax, cfg.RestAfter = sc.Dedup, sc.Quota, sc.RestAfter
	cfg.Replicas = sc.Replicas
	cfg.CheckpointRecords, cfg.CheckpointBytes = -1, 0
	c := sc.Checkpoint
	if c.Records > 0 {
		cfg.CheckpointRecords, cfg.CheckpointBytes, cfg.CheckpointInterval = c.Records, c.Bytes, c.Interval
	}
	if c.Records > journalStepSwarmMax {
		// A long settled history (the failover trials') fills a window
		// of tens of thousands of IDs: a checkpoint's worth of records a
		// step keeps its journal within a few ticks of its build, where
		// 64 a tick would take longer than the trial.
		cfg.JournalStepEntries = c.Records
	}
	// The segment size holds with checkpoints off too, so a run can be
	// compared with and without them on the same segments.
	if c.Segment > 0 {
		cfg.SegmentSize = c.Segment
	}
	return cfg
}

// DetectionPolicies lists the failure detection policies a run of sc
// may use: the one its nodes start with and each one a set-detection
// fault switches the cluster to.
func DetectionPolicies(sc Scenario) []node.DetectionPolicy {
	first := QueueConfig(sc).Detection
	if first.Mode == 0 {
		first = faultDetectionPolicy(node.DetectHeartbeat)
	}
	out := []node.DetectionPolicy{first}
	for _, f := range sc.Faults {
		if f.Kind == FaultSetDetection {
			out = append(out, faultDetectionPolicy(uint8(f.Hit)))
		}
	}
	return out
}

// QueueBoundaries lists boundaries a crash-at fault may target.
var QueueBoundaries = []string{
	"queue.before.persist-epoch", "queue.after.persist-epoch",
	"queue.before.append", "queue.after.append", "queue.after.commit",
	"storage.before.sync", "storage.after.sync",
	"storage.before.create-segment", "storage.after.create-segment",
	"storage.before.rename-segment", "storage.after.rename-segment",
	"storage.before.truncate", "storage.after.truncate",
	"storage.before.write-state", "storage.before.rename-state",
	"storage.after.rename-state", "storage.after.write-state",
	"meta.before.append", "meta.after.append",
	"meta.before.persist-hardstate", "meta.after.persist-hardstate",
	"meta.before.write-snapshot", "meta.after.write-snapshot",
	"queue.before.prepare", "queue.after.prepare",
	"checkpoint.before.append-window", "checkpoint.after.append-window", "checkpoint.before.write", "checkpoint.after.write",
	"checkpoint.before.reset-log", "checkpoint.after.reset-log",
	"checkpoint.before.certify", "compaction.before.drop-segments", "compaction.after.drop-segments",
}

// QueueScenario draws a queue scenario for seed.
func QueueScenario(seed uint64) Scenario { return QueueScenarioOf(seed, 0) }

// QueueScenarioOf draws a queue scenario for seed on a cluster of nodes
// founding nodes (0: drawn, as QueueScenario does).
func QueueScenarioOf(seed uint64, nodes int) Scenario {
	return Generate(seed, GenerateOptions{
		Nodes: nodes, Safety: 8 * time.Second, Liveness: 8 * time.Second,
		Boundaries: QueueBoundaries, NoFlips: true, Workload: true,
	})
}

// NewNode implements System.
func (s *QueueSystem) NewNode(id node.NodeID, peers []node.NodeID, env node.Env, lostDisk bool) node.Handler {
	cfg := s.cfg
	cfg.ID, cfg.Nodes = id, peers
	cfg.Join = int(id) > s.founders
	cfg.Rejoin = lostDisk && !cfg.Join
	return node.New(cfg, env)
}

// Observe implements System: it follows who leads the metadata and who
// owns each queue, for the faults aimed at those roles. The world
// records what checkers need.
func (s *QueueSystem) Observe(_ time.Duration, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.MetaLeader:
		// Leaders of older terms may still announce themselves late; the
		// leader is the one of the highest term.
		if term := e.Term(); term >= s.leaderTerm {
			s.leader, s.leaderTerm = id, term
		}
	case event.QueueActive:
		// A new incarnation starts its epochs over; within one, the
		// highest epoch's owner is the owner.
		q, inc, epoch := e.Queue(), e.Inc(), e.Epoch()
		if cur := s.owners[q]; inc != cur.inc || epoch >= cur.epoch {
			s.owners[q] = activeOwner{id, inc, epoch}
		}
	}
}

// MetaLeader implements Targets.
func (s *QueueSystem) MetaLeader() (node.NodeID, bool) { return s.leader, s.leader != 0 }

// QueueOwner implements Targets.
func (s *QueueSystem) QueueOwner(queue string) (node.NodeID, bool) {
	a, ok := s.owners[queue]
	return a.node, ok
}

// LivenessStart implements System.
func (s *QueueSystem) LivenessStart(*World) {}

// Check implements System: it reads what a power loss would leave on each
// disk into the history, for props to judge.
func (s *QueueSystem) Check(w *World) []Violation {
	h := w.hist
	place := node.Placement{Nodes: w.Founders(), Replicas: w.sc.ReplicaCount()}
	for i, id := range w.NodeIDs() {
		// The churned queues hold no messages, and a deleted one's files
		// may outlive it on a disk (a removal not yet synced comes back
		// at a power loss, and the node removes it again when it starts):
		// queue-lifecycle judges them, from what the nodes hold.
		h.Final[id] = slices.DeleteFunc(node.DumpReplicas(w.DurableFS(i), "", s.cfg.PageRecords, s.cfg.PageBytes),
			func(r node.ReplicaDump) bool { return IsChurnQueue(r.Queue) })
	}
	if wl := w.sc.Workload; wl != nil {
		for _, q := range wl.Queues {
			h.Owners[q.Name] = place.Owner(q.Name)
		}
	}
	return nil
}

// Summary implements System.
func (s *QueueSystem) Summary() string { return "" }
