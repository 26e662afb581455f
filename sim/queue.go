package sim

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// QueueSystem runs cairn queue nodes. Its judging happens in props, over
// the history the world records; Check here only gathers the ground
// truth: what every disk holds at the end.
type QueueSystem struct {
	cfg node.Config
}

// QueueNodeConfig is the node configuration the simulator uses: small
// segments, so segment rolls (and their directory syncs) happen often, and
// a replica down for 3s is replaced, so replacement fits in a run.
func QueueNodeConfig() node.Config {
	return node.Config{Tick: 20 * time.Millisecond, SegmentSize: 32 << 10, PageRecords: 64, PageBytes: 64 << 10,
		ReplaceAfter: 3 * time.Second}
}

// NewQueueSystem returns a queue system for one run of sc.
func NewQueueSystem(sc Scenario) *QueueSystem {
	cfg := QueueNodeConfig()
	if sc.Detection == node.DetectEager {
		cfg.Detection = node.DetectionPolicy{Mode: node.DetectEager, Interval: 100 * time.Millisecond}
	}
	return &QueueSystem{cfg: cfg}
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
}

// QueueScenario draws a queue scenario for seed.
func QueueScenario(seed uint64) Scenario {
	return Generate(seed, GenerateOptions{
		Safety: 8 * time.Second, Liveness: 8 * time.Second,
		Boundaries: QueueBoundaries, NoFlips: true, Workload: true,
	})
}

// NewNode implements System.
func (s *QueueSystem) NewNode(id node.NodeID, peers []node.NodeID, env node.Env) node.Handler {
	cfg := s.cfg
	cfg.ID, cfg.Nodes = id, peers
	return node.New(cfg, env)
}

// Observe implements System; the world records what checkers need.
func (s *QueueSystem) Observe(time.Duration, node.NodeID, event.Event) {}

// LivenessStart implements System.
func (s *QueueSystem) LivenessStart(*World) {}

// Check implements System: it reads what a power loss would leave on each
// disk into the history, for props to judge.
func (s *QueueSystem) Check(w *World) []Violation {
	h := w.hist
	place := node.Placement{Nodes: w.NodeIDs(), Replicas: 3}
	for i, id := range w.NodeIDs() {
		clone := w.NodeDisk(i).mem.CrashClone(vfs.CrashCloneCfg{})
		h.Final[id] = node.DumpReplicas(clone, "", s.cfg.PageRecords, s.cfg.PageBytes)
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
