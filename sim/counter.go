package sim

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/node/counter"
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// CounterSystem runs the trivial replicated counter and checks its one
// promise: an increment the leader confirmed is held durably by a majority,
// and after the calm phase every replica has caught up.
type CounterSystem struct {
	nodes         map[node.NodeID]*counter.Node
	acked         map[node.NodeID]uint64
	lost          []Violation
	maxConfirmed  uint64
	atLiveness    uint64
	confirmations int
}

// NewCounterSystem returns a fresh counter system for one run.
func NewCounterSystem() *CounterSystem {
	return &CounterSystem{nodes: make(map[node.NodeID]*counter.Node), acked: make(map[node.NodeID]uint64)}
}

// CounterBoundaries lists every boundary the counter system can hit.
var CounterBoundaries = []string{
	counter.BoundaryBeforeAppend, counter.BoundaryAfterAppended,
	counter.BoundaryBeforeAck, counter.BoundaryAfterConfirm,
	"storage.before.sync", "storage.after.sync",
	"storage.before.create-segment", "storage.after.create-segment",
	"storage.before.rename-segment", "storage.after.rename-segment",
}

// CounterScenario draws a scenario for the counter system.
func CounterScenario(seed uint64) Scenario {
	return Generate(seed, GenerateOptions{
		Nodes: 3, Safety: 10 * time.Second, Liveness: 5 * time.Second,
		Boundaries: CounterBoundaries, NoFlips: true,
	})
}

// NewNode implements System.
func (s *CounterSystem) NewNode(id node.NodeID, peers []node.NodeID, env node.Env, _ bool) node.Handler {
	n := counter.New(counter.Config{
		ID: id, Peers: peers, Leader: peers[0], Tick: 10 * time.Millisecond,
		MaxUnconfirmed: 64, SegmentSize: 16 << 10, ResendPage: 32,
	}, env)
	s.nodes[id] = n
	return n
}

// Observe implements System.
// A node must never come back from a crash holding fewer increments than
// it told the leader it held durably: that is the replica-level promise
// the leader's confirmations rest on.
func (s *CounterSystem) Observe(now time.Duration, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.CounterConfirmed:
		s.confirmations++
		s.maxConfirmed = max(s.maxConfirmed, e.Index())
	case event.CounterAcked:
		s.acked[id] = max(s.acked[id], e.Durable())
	case event.CounterOpen:
		if last := e.Last(); last < s.acked[id] {
			s.lost = append(s.lost, Violation{Safety, "counter-ack-durable",
				fmt.Sprintf("%s reopened at %v with %d increments after acknowledging %d as durable", id, now, last, s.acked[id])})
		}
	}
}

// LivenessStart implements System.
func (s *CounterSystem) LivenessStart(w *World) { s.atLiveness = s.maxConfirmed }

// Check implements System.
func (s *CounterSystem) Check(w *World) []Violation {
	out := append([]Violation(nil), s.lost...)
	holders := 0
	for i, id := range w.NodeIDs() {
		last, err := durableCounterLength(w.NodeDisk(i))
		if err != nil {
			w.Tracef("check %s: durable log unreadable: %v", id, err)
			continue
		}
		if last >= s.maxConfirmed {
			holders++
		}
	}
	if majority := len(w.NodeIDs())/2 + 1; holders < majority {
		out = append(out, Violation{Safety, "counter-durable",
			fmt.Sprintf("increment %d was confirmed but only %d of %d replicas hold it durably", s.maxConfirmed, holders, len(w.NodeIDs()))})
	}
	if s.maxConfirmed <= s.atLiveness {
		out = append(out, Violation{Liveness, "counter-progress",
			fmt.Sprintf("no increment confirmed in the calm phase (stuck at %d)", s.maxConfirmed)})
	}
	for _, id := range w.NodeIDs() {
		if n := s.nodes[id]; n.DurableIndex() < s.atLiveness {
			out = append(out, Violation{Liveness, "counter-catch-up",
				fmt.Sprintf("%s holds %d durably after the calm phase, %d were confirmed before it", id, n.DurableIndex(), s.atLiveness)})
		}
	}
	return out
}

// Summary implements System.
func (s *CounterSystem) Summary() string {
	return fmt.Sprintf("confirmed=%d confirmations=%d", s.maxConfirmed, s.confirmations)
}

// durableCounterLength opens what a power loss would leave of a node's
// counter log and returns its last index.
func durableCounterLength(d *Disk) (uint64, error) {
	clone := d.mem.CrashClone(vfs.CrashCloneCfg{})
	l, err := storage.Open(clone, counter.LogDir, nullHost{}, storage.Options{SegmentSize: 16 << 10})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.LastIndex(), nil
}

// nullHost is a storage host for read-only inspection: syncs never finish.
type nullHost struct{}

func (nullHost) Sync(vfs.File, func(error)) {}
func (nullHost) Boundary(string)            {}
