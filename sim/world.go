// Package sim is cairn's deterministic simulator: one goroutine, virtual
// time, an event heap, seeded randomness split per subsystem, simulated
// disks and a simulated network, processes that crash, restart and pause,
// and a trace of everything that happened. A run is a pure function of its
// scenario: the same scenario always produces the same trace hash.
package sim

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// System is what a simulation runs and judges: it builds node handlers,
// watches what nodes emit, and checks the outcome.
type System interface {
	// NewNode builds the handler for one incarnation of node id, talking
	// to the world through env. lostDisk says the node's disk was lost
	// since it first started, so it starts as the operations guide says
	// a node over an empty data directory must.
	NewNode(id node.NodeID, peers []node.NodeID, env node.Env, lostDisk bool) node.Handler
	// Observe sees every event a node emits.
	Observe(now time.Duration, id node.NodeID, e event.Event)
	// LivenessStart is called when the calm phase begins.
	LivenessStart(w *World)
	// Check judges the run once it is over.
	Check(w *World) []Violation
	// Summary describes the work done, for the one-line report.
	Summary() string
}

// Targets is what a System that knows the roles its nodes play tells the
// fault injector, so that faults aimed at a role (crash-leader,
// crash-owner, isolate-leader) find the node that holds it. The kernel
// itself knows processes, time, disks and networks, not queues.
type Targets interface {
	// MetaLeader is the metadata leader as the nodes announced it.
	MetaLeader() (node.NodeID, bool)
	// QueueOwner is queue's owner as the nodes announced it.
	QueueOwner(queue string) (node.NodeID, bool)
}

// ViolationKind separates broken safety from missing progress.
type ViolationKind int

// Violation kinds.
const (
	Safety ViolationKind = iota + 1
	Liveness
)

// Violation is one failed check.
type Violation struct {
	Kind    ViolationKind
	Checker string
	Detail  string
}

// String renders the violation on one line.
func (v Violation) String() string {
	kind := "safety"
	if v.Kind == Liveness {
		kind = "liveness"
	}
	return fmt.Sprintf("%s violation [%s]: %s", kind, v.Checker, v.Detail)
}

// Result is the outcome of one run.
type Result struct {
	Seed       uint64
	TraceHash  uint64
	Events     int
	Lines      int
	SimTime    time.Duration
	Violations []Violation
	Boundaries map[string]int
	// NodeBoundaries counts hits per node and boundary.
	NodeBoundaries map[BoundaryHit]int
	Summary        string
	Net            netsim.Stats
	Disk           DiskStats
	History        *History
}

// Failed reports whether any check failed.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// SafetyFailed reports whether a safety check failed.
func (r Result) SafetyFailed() bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Kind == Safety })
}

// Epoch is the virtual wall-clock instant at which every run starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// haltRestartDelay is how long a supervisor waits before restarting a
// process that halted itself.
const haltRestartDelay = 200 * time.Millisecond

// maxEvents bounds a run, so a node stuck in a zero-delay loop ends the run
// as a liveness failure instead of hanging it.
const maxEvents = 20_000_000

// World is one simulated cluster and everything around it.
type World struct {
	sc       Scenario
	sys      System
	now      time.Duration
	seq      uint64
	queue    stepQueue
	procs    []*process
	net      *netsim.Network
	netRng   *rand.Rand
	trace    *Trace
	events   int
	live     bool // in the liveness phase
	hits     map[string]int
	nodeHits map[BoundaryHit]int
	extra    []Violation

	// Clients and their connections, when the scenario has a workload.
	clients      []*clientProc
	conns        map[node.ConnID]*conn
	connByKey    map[connKey]node.ConnID
	nextConn     node.ConnID
	clientResets map[clientNodeKey]uint64
	hist         *History
	sendSeq      uint64
	crashes      int
	// damaged holds "index/queue" for each replica a damage, misdirect or
	// lost-writes fault broke: its data is lost by the fault's design,
	// whatever it had promised.
	damaged map[string]bool
	// cov records what the run reached, for sweep coverage reports.
	cov *coverage
	// reassign keeps what judging reassignments needs (see reassign.go).
	reassign reassignWatch
	// restCuts are the lengths of the isolate-resting-owner faults
	// armed and waiting for an owner to rest (restingowner.go).
	restCuts []time.Duration
	// stepCrashes are the crash-at-step faults armed and waiting for a
	// process to reach their boundary (stepcrash.go).
	stepCrashes []armedCrash
	// stack is the stack-loss fault that struck, if one did.
	stack *stackLoss
	// serving keeps what polling for serving owners needs (serving.go).
	serving servingWatch
	// progress keeps the open service and redundancy spans (calm.go).
	progress progressWatch
	// scratch is where messages are encoded before each is copied out at
	// its exact size (see encode).
	scratch []byte
	slab    []byte // the unused end of the slab frames are cut from
}

// NewWorld builds a world for the scenario. If traceOut is not nil, every
// trace line is also written to it.
func NewWorld(sc Scenario, sys System, traceOut io.Writer) *World {
	if sc.Nodes < 1 {
		panic(fmt.Sprintf("sim: scenario with %d nodes", sc.Nodes))
	}
	w := &World{
		sc: sc, sys: sys, trace: newTrace(traceOut), hits: make(map[string]int), nodeHits: make(map[BoundaryHit]int),
		conns: make(map[node.ConnID]*conn), connByKey: make(map[connKey]node.ConnID),
		clientResets: make(map[clientNodeKey]uint64), damaged: make(map[string]bool),
		hist: &History{Final: make(map[node.NodeID][]node.ReplicaDump), Owners: make(map[string]node.NodeID),
			EventCounts: make(map[event.Name]int)},
	}
	w.cov = newCoverage(sc)
	w.netRng = newStream(sc.Seed, streamNetwork)
	w.net = netsim.New(w.netRng, sc.Swarm.Net)
	clock := newStream(sc.Seed, streamClock)
	ids := NodeIDs(sc.Nodes + sc.Spares)
	founders := ids[:sc.Nodes]
	for i := range sc.Nodes + sc.Spares {
		// A founder knows the founders; a spare knows only itself until
		// the cluster admits it and its metadata names the members.
		p := &process{w: w, index: i, id: ids[i], peers: founders}
		if i >= sc.Nodes {
			p.peers = ids[i : i+1]
		}
		p.disk = NewDisk(newStream(sc.Seed, streamDisk, uint64(i)), sc.Swarm.Disk)
		if sc.Swarm.ClockMax > 0 {
			p.clockOffset = time.Duration(clock.Int64N(int64(2*sc.Swarm.ClockMax)+1)) - sc.Swarm.ClockMax
		}
		w.procs = append(w.procs, p)
	}
	return w
}

// Now is the current virtual time since the start of the run.
func (w *World) Now() time.Duration { return w.now }

// Scenario is the scenario being run.
func (w *World) Scenario() Scenario { return w.sc }

// NodeDisk returns node i's disk (0-based), for checkers.
func (w *World) NodeDisk(i int) *Disk { return w.procs[i].disk }

// DurableFS is what a power loss at this instant would leave of node i's
// disk (0-based): a copy judges may read without disturbing the run.
func (w *World) DurableFS(i int) vfs.FS { return w.procs[i].disk.Durable() }

// FaultBroke reports whether a damage, misdirect or lost-writes fault
// broke node i's replica of queue (0-based): its data is lost by the
// fault's design, whatever it had promised, so judges do not hold it to
// those promises.
func (w *World) FaultBroke(i int, queue string) bool { return w.damaged[damagedKey(i, queue)] }

// Live reports whether the calm liveness phase has begun.
func (w *World) Live() bool { return w.live }

// Up reports whether node id's process is running: started, not crashed,
// not halted and not paused.
func (w *World) Up(id node.NodeID) bool {
	i := int(id) - 1
	return i >= 0 && i < len(w.procs) && w.procs[i].state == stateUp
}

// Tracef adds a line to the trace on behalf of the simulator or a checker.
func (w *World) Tracef(format string, args ...any) { w.trace.line(w.now, "sim", format, args...) }

// schedule queues fn to run at virtual time at for process proc (or -1).
func (w *World) schedule(at time.Duration, proc int, inc uint64, fn func()) {
	if at < w.now {
		panic(fmt.Sprintf("sim: scheduling at %v, before now %v", at, w.now))
	}
	w.seq++
	w.queue.push(step{at: at, seq: w.seq, proc: proc, inc: inc, fn: fn})
}

// Run executes the scenario to its end and checks the outcome.
func (w *World) Run() Result {
	w.trace.line(0, "sim", "scenario seed=%d nodes=%d safety=%v liveness=%v", w.sc.Seed, w.sc.Nodes, w.sc.Safety, w.sc.Liveness)
	w.trace.line(0, "sim", "swarm %s", w.sc.Swarm)
	for _, f := range w.sc.Faults {
		w.schedule(f.At, -1, 0, func() { w.applyFault(f) })
	}
	w.schedule(w.sc.Safety, -1, 0, w.startLiveness)
	w.schedule(servingSampleEvery, -1, 0, w.sampleServing)
	for _, p := range w.procs {
		p.start()
	}
	if w.sc.Workload != nil {
		w.trace.line(0, "sim", "workload %s", *w.sc.Workload)
		w.startClients()
	}
	end := w.sc.Safety + w.sc.Liveness
	for w.queue.Len() > 0 && w.queue[0].at <= end {
		e := w.queue.pop()
		w.cov.advance(e.at, w.hits)
		w.now = e.at
		w.events++
		if w.events > maxEvents {
			w.extra = append(w.extra, Violation{Liveness, "event-budget", fmt.Sprintf("more than %d events by %v", maxEvents, w.now)})
			break
		}
		w.fire(e)
	}
	w.now = max(w.now, end)
	w.closeProgress()
	w.hist.Crashes = w.crashes
	violations := append(w.sys.Check(w), w.extra...)
	for _, v := range violations {
		// Only the first line: details may hold stacks, which differ
		// between processes and must not reach the trace hash.
		first, _, _ := strings.Cut(v.String(), "\n")
		w.trace.line(w.now, "sim", "%s", first)
	}
	res := Result{
		Seed: w.sc.Seed, TraceHash: w.trace.Hash(), Events: w.events, Lines: w.trace.Lines(),
		SimTime: w.now, Violations: violations, Boundaries: w.hits, NodeBoundaries: w.nodeHits, Summary: w.sys.Summary(),
		Net: w.net.Stats(), History: w.hist,
	}
	for _, p := range w.procs {
		s := p.disk.Stats()
		res.Disk.Syncs += s.Syncs
		res.Disk.SyncErrors += s.SyncErrors
		res.Disk.WriteErrors += s.WriteErrors
		res.Disk.ReadErrors += s.ReadErrors
		res.Disk.NameErrors += s.NameErrors
		res.Disk.TrappedReads += s.TrappedReads
		res.Disk.TornFiles += s.TornFiles
		res.Disk.TornSectors += s.TornSectors
		res.Disk.Flips += s.Flips
		res.Disk.Crashes += s.Crashes
		res.Disk.LostWrites += s.LostWrites
		res.Disk.Rots += s.Rots
		res.Disk.StalledSyncs += s.StalledSyncs
	}
	w.hist.Coverage = w.cov.finish(w.hits, w.hist, res.Disk)
	return res
}

func (w *World) fire(e step) {
	if e.proc < 0 {
		e.fn()
		return
	}
	p := w.procs[e.proc]
	switch {
	case e.inc != p.inc || p.state == stateDown:
		return // meant for an incarnation that is gone
	case p.state == statePaused:
		p.deferred = append(p.deferred, e)
	default:
		p.run(e.fn)
	}
}

// startLiveness ends the faults: heal the network, quiet the disks,
// resume and restart every process, then let the system show progress.
func (w *World) startLiveness() {
	w.live = true
	w.hist.LivenessAt, w.hist.Live = w.now, true
	w.trace.line(w.now, "sim", "liveness phase: heal, calm, restart all")
	w.net.Heal(w.now)
	calm := w.sc.Swarm.Net
	calm.Loss, calm.Duplicate, calm.Reorder = 0, 0, 0
	calm.Latency.TailChance = 0
	w.net.Calm(calm)
	for _, p := range w.procs {
		p.disk.SetFaulty(false)
		p.armed = nil
		switch p.state {
		case statePaused:
			p.resume()
		case stateDown:
			p.restart(p.inc)
		}
	}
	w.sys.LivenessStart(w)
}

// NodeIDs are the IDs the simulator gives a cluster of n nodes: 1 to n,
// node i (0-based) having ID i+1.
func NodeIDs(n int) []node.NodeID {
	ids := make([]node.NodeID, n)
	for i := range ids {
		ids[i] = node.NodeID(i + 1)
	}
	return ids
}

// NodeIDs lists the ID of every process, in order: the founders, then
// the spares.
func (w *World) NodeIDs() []node.NodeID { return NodeIDs(len(w.procs)) }

// Founders lists the IDs of the nodes the cluster was founded with: the
// ones queues created before any membership change are placed on.
func (w *World) Founders() []node.NodeID { return NodeIDs(w.sc.Nodes) }

func (w *World) addrs() []netsim.Addr {
	out := make([]netsim.Addr, len(w.procs))
	for i, p := range w.procs {
		out[i] = netsim.Addr(p.id)
	}
	return out
}

// recordedEvents are the node events checkers read from the history,
// each with what becomes its NodeEvent's Value (nil for none).
var recordedEvents = map[event.Name]func(event.Event) uint64{
	event.QueueReported: event.Event.Durable,
	// A seal's answer: the epoch the replica witnessed is in Epoch.
	event.QueueSealed:   nil,
	event.QueueDurable:  event.Event.Index,
	event.QueueTruncate: event.Event.After,
	event.QueueOpen:     event.Event.Last,
	event.QueueActive:   event.Event.Last,
	event.MetaLeader:    nodeValue,
	event.MetaActivated: nil,
	// An applied metadata entry's index; its term is in Term.
	event.MetaApplied:   event.Event.Index,
	event.DetectSuspect: nodeValue,
	event.DetectConfirm: nodeValue,
	// The failover stages a trial breaks its time into: the leader's plan
	// (naming the candidate) and the candidate's start.
	event.MetaPlanRecovery: func(e event.Event) uint64 { return uint64(e.ToNode()) },
	event.RecoveryStart:    nil,
	// A recovered owner's activation: queue, incarnation and epoch say
	// which, and an owner that recovered its epoch may serve only after
	// it (props checks that).
	event.MetaRecoveryActivated: nil,
	// Microseconds, as the event carries them; a recovery that spans a
	// backward clock jump wraps, as it always has.
	event.RecoveryDone: func(e event.Event) uint64 { return uint64(e.Elapsed().Microseconds()) },
	// A stale owner's epoch is in Epoch already.
	event.QueueStale: nil,
	// A recovered owner's rebuild: how many records it replayed. And how
	// far a replica dropped its log.
	event.QueueRebuilt:   func(e event.Event) uint64 { return e.Last() - e.Index() },
	event.QueueCompacted: event.Event.Index,
	// An owner cut off from its quorum sends its subscribers away and
	// hands their leased messages back.
	event.QueueQuorumLost:   nil,
	event.QueueOwnerStopped: func(e event.Event) uint64 { return uint64(e.Next()) },
	event.QueueCommit:       event.Event.Index,
	// meta.replica-replaced carries no number; queue and epoch say which.
	event.MetaReplicaReplaced: nil,
	event.QueueFenced:         nil,
	event.QueueReplaced:       nil,
	event.QueueRetired:        nil,
	// A replica opened over an earlier process's storage is suspect
	// until an owner verifies it: until then a recovery may need other
	// witnesses (props' redundancy checker reads it).
	event.QueueTrusted: nil,
	// A refused truncation means an owner without a confirmed record.
	event.QueueRefusedTruncation: nil,
	// The size of the state a checkpoint holds: bounded-memory tests
	// watch it.
	event.CheckpointBuilt: func(e event.Event) uint64 { return uint64(e.Bytes()) },
}

// parseMessageID reads a message ID as wire.MessageID.String writes it.
// Events carry IDs as text; one that does not parse is a bug in the node.
func parseMessageID(s string) wire.MessageID {
	var id wire.MessageID
	if _, err := fmt.Sscanf(s, "p%d.%d", &id.Producer, &id.Seq); err != nil {
		panic(fmt.Sprintf("sim: event names message %q: %v", s, err))
	}
	return id
}

// nodeValue is the Value of the events about one node: that node.
func nodeValue(e event.Event) uint64 { return uint64(e.Node()) }

// encode returns m's frame in a slice of its own, exactly as long as the
// frame and with no room past it. Encoding into a fresh slice grew it
// step by step, a copy at each step; the scratch buffer grows once to the
// largest frame of the run. Small frames are then cut from a shared slab
// rather than allocated one by one (an allocation per message sent was a
// fortieth of a sweep's CPU); a slab lives until the last frame cut from
// it is delivered and dropped, and nothing writes into a frame after it
// is made.
func (w *World) encode(m wire.Message) []byte {
	w.scratch = wire.Encode(w.scratch[:0], m)
	n := len(w.scratch)
	if n > frameSlabBytes/16 {
		return bytes.Clone(w.scratch)
	}
	if len(w.slab) < n {
		w.slab = make([]byte, frameSlabBytes)
	}
	frame := w.slab[:n:n]
	copy(frame, w.scratch)
	w.slab = w.slab[n:]
	return frame
}

// frameSlabBytes is the size of the slabs encode cuts frames from.
const frameSlabBytes = 64 << 10

func (w *World) recordNodeEvent(id node.NodeID, e event.Event) {
	w.hist.EventCounts[e.Name]++
	w.cov.observe(w, id, e)
	w.watchReassign(id, e)
	w.serving.observe(w.now, e)
	w.hist.tell(w.now, id, e)
	if e.Name == event.QueueDeadLetterSent {
		w.hist.DeadLetters = append(w.hist.DeadLetters, DeadLetterRecord{
			At: w.now, Node: id, Queue: e.Queue(), Target: e.To(), ID: parseMessageID(e.ID())})
	}
	if e.Name == event.QueueResting {
		w.noteRest(id)
	}
	if e.Name == event.MetaPlanReplace {
		w.noteStackPlan(e)
	}
	if e.Name == event.QueuePurgeWritten {
		w.hist.PurgeWrites = append(w.hist.PurgeWrites, PurgeWriteRecord{
			At: w.now, Node: id, Queue: e.Queue(), Token: parseMessageID(e.ID()), Index: e.Index()})
	}
	value, ok := recordedEvents[e.Name]
	if !ok {
		return
	}
	ne := NodeEvent{At: w.now, Node: id, Name: e.Name, Queue: e.Queue(), Epoch: e.Epoch(), Inc: e.Inc(), Term: e.Term()}
	if value != nil {
		ne.Value = value(e)
	}
	if (e.Name == event.DetectSuspect || e.Name == event.DetectConfirm) && ne.Value >= 1 && int(ne.Value) <= len(w.procs) {
		ne.TargetUp = w.procs[ne.Value-1].state != stateDown
	}
	w.hist.NodeEvents = append(w.hist.NodeEvents, ne)
}

// nodePanic records a node's panic as a safety violation, with the stack
// of the panicking goroutine to find it by.
func (w *World) nodePanic(p *process, r any) {
	w.trace.line(w.now, p.who(), "PANIC %v", r)
	if len(w.extra) < 3 {
		w.extra = append(w.extra, Violation{Safety, "node-panic",
			fmt.Sprintf("%s panicked at %v: %v\n%s", p.id, w.now, r, panicStack())})
	}
}

// BoundaryHit names a boundary on one node (0-based index).
type BoundaryHit struct {
	Node     int
	Boundary string
}
