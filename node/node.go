package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// Config configures a queue node.
type Config struct {
	ID    NodeID
	Nodes []NodeID // every node in the cluster, this one included
	// Cluster names the cluster. The data directory is stamped with it
	// and with ID the first time the node starts, and a node refuses to
	// start on a directory stamped otherwise.
	Cluster string
	// DataDir is the directory under which the node keeps everything on
	// its FS. Empty means the FS root (the simulator's disks).
	DataDir string
	// Replicas is each queue's replication factor. Default 3, at most
	// len(Nodes).
	Replicas int
	// Tick paces heartbeats, lease expiry and delayed-message promotion.
	// Default 20ms.
	Tick time.Duration
	// SegmentSize is the log segment size. Default 64 MiB.
	SegmentSize int64
	// PageRecords and PageBytes bound one replication message. Defaults
	// 256 records and 1 MiB.
	PageRecords int
	PageBytes   int
	// CheckpointRecords and CheckpointBytes say how much a queue's owner
	// confirms between checkpoints: a new cut is certified once either
	// many records were confirmed or many bytes appended since the last
	// one. Defaults 100,000 records and 32 MiB (half a default segment,
	// so compaction keeps pace with the log). A negative CheckpointRecords
	// turns checkpoints off.
	CheckpointRecords int
	CheckpointBytes   int64
	// CheckpointChunkBytes bounds one message of a checkpoint sent to a
	// replica that needs history its sender dropped: a larger state goes
	// in chunks, each asked for by the receiver. Default 1 MiB.
	CheckpointChunkBytes int
	// JournalStepEntries bounds the window entries a finished checkpoint
	// build appends to its journal in one tick (journal.go). Default
	// 4,096: a few milliseconds of the loop.
	JournalStepEntries int
	// CheckpointInterval certifies a cut on a queue that confirmed
	// anything at all since the last one this long ago, so a quiet queue
	// is compacted too. Default 5m. Every threshold is scaled by a factor
	// drawn from [0.9, 1.1) for each attempt, so queues created together
	// do not all checkpoint at once.
	CheckpointInterval time.Duration
	// DedupWindow is how long a queue created without a window of its
	// own remembers a published message ID: a publish retried with the
	// same ID within it is stored once, one retried later is a new
	// message. An owner writes the queue's window into the queue's log
	// when it opens its epoch, so every replica forgets the same IDs.
	// Default 2m, well beyond the client's default retry deadline (10s).
	DedupWindow time.Duration
	// DiskFreeMin is the free-space watermark: with less free space than
	// this on the data directory's file system, the node refuses new
	// messages and queues (disk-full) while everything else goes on.
	// Default 256 MiB; negative turns the check off. DataBytesMax, when
	// positive, is a quota on what the node's queues keep on disk, with
	// the same effect past it.
	DiskFreeMin  int64
	DataBytesMax int64
	// MetaTick paces the metadata group: raft heartbeats on the leader,
	// election timers elsewhere. Default 50ms.
	MetaTick time.Duration
	// Detection is the failure detection policy a fresh cluster starts
	// with; later changes are metadata commands.
	Detection DetectionPolicy
	// ReplaceAfter is how long a replica must stay confirmed down before
	// the metadata leader replaces it with a node outside the queue's
	// replica set (when there is one), so that the queue regains its
	// redundancy. Default 5m: long enough that a restart or a short
	// maintenance does not copy whole logs around, short enough that a
	// dead machine does not leave queues one failure from unavailable for
	// long. Negative disables replacement.
	ReplaceAfter time.Duration
	// RestAfter is how long an owner's queue must have been idle before
	// the owner rests: it stops keeping its quorum's grant fresh, and the
	// next request waits one round trip while it wins the grant back
	// (rest.go). Default 2s; negative: owners never rest.
	RestAfter time.Duration
	// Rejoin says this node's data directory was lost and it starts over
	// an empty one in a cluster that already exists: its metadata member
	// grants no vote until it has caught up with a leader, so it cannot
	// help elect a leader that lacks entries it had acknowledged before.
	// Ignored when the data directory holds metadata.
	Rejoin bool
	// Join says this node joins a running cluster that admitted it
	// (AddNode) and does not found one: with an empty data directory it
	// waits for the metadata leader's snapshot instead of bootstrapping.
	// Nodes then lists only what the node knows before that snapshot
	// arrives; the metadata's member list replaces it. Ignored when the
	// data directory holds metadata.
	Join bool
}

func (c *Config) fill() {
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.Tick == 0 {
		c.Tick = 20 * time.Millisecond
	}
	if c.PageRecords == 0 {
		c.PageRecords = 256
	}
	if c.PageBytes == 0 {
		c.PageBytes = 1 << 20
	}
	if c.CheckpointRecords == 0 {
		c.CheckpointRecords = 100_000
	}
	if c.CheckpointBytes == 0 {
		c.CheckpointBytes = 32 << 20
	}
	if c.CheckpointChunkBytes == 0 {
		c.CheckpointChunkBytes = 1 << 20
	}
	if c.JournalStepEntries == 0 {
		c.JournalStepEntries = 4096
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = 5 * time.Minute
	}
	if c.RestAfter == 0 {
		c.RestAfter = defaultRestAfter
	}
	if c.DiskFreeMin == 0 {
		c.DiskFreeMin = 256 << 20
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.MetaTick == 0 {
		c.MetaTick = 50 * time.Millisecond
	}
	if c.ReplaceAfter == 0 {
		c.ReplaceAfter = 5 * time.Minute
	}
	if c.Detection.Mode == 0 {
		c.Detection = DetectionPolicy{Mode: DetectHeartbeat, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}
	}
}

// DefaultDedupWindow is Config.DedupWindow's default.
const DefaultDedupWindow = 2 * time.Minute

// dedupWindowOf is the deduplication window of a queue incarnation: the
// one it was created with, or this node's default when it has none. An
// owner writes it into every epoch marker, so the window follows the
// queue from owner to owner; only a queue created without one takes its
// owner's default.
func (n *Node) dedupWindowOf(name string, inc uint64) time.Duration {
	if n.meta != nil && n.meta.state != nil {
		if q := n.meta.state.queues[name]; q != nil && q.Incarnation == inc && q.DedupWindow != 0 {
			return q.DedupWindow
		}
	}
	return n.cfg.DedupWindow
}

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("node ID must be non-zero")
	case !slices.Contains(c.Nodes, c.ID):
		return fmt.Errorf("node %s is not in the node list %v", c.ID, c.Nodes)
	case c.Replicas < 1 || (c.Replicas > len(c.Nodes) && !c.Join):
		return fmt.Errorf("replication factor %d outside [1, %d]", c.Replicas, len(c.Nodes))
	case c.Tick <= 0:
		return fmt.Errorf("tick %v must be positive", c.Tick)
	case wire.CheckDedupWindow(c.DedupWindow) != nil:
		return wire.CheckDedupWindow(c.DedupWindow)
	case len(c.Nodes) > wire.MaxMembers:
		return fmt.Errorf("%d nodes: a cluster has at most %d", len(c.Nodes), wire.MaxMembers)
	case c.Detection.Mode != DetectHeartbeat && c.Detection.Mode != DetectEager:
		return fmt.Errorf("unknown detection mode %d", c.Detection.Mode)
	}
	return nil
}

const (
	timerTick TimerKind = 1
	timerMeta TimerKind = 2
)

// queuesDir holds one directory per queue replica.
const queuesDir = "queues"

// Node is a cairn node: it holds replicas of queues, owns some of them,
// and serves clients for the queues it owns.
type Node struct {
	cfg    Config
	env    Env
	syncs  *SyncRouter
	queues map[string]*replica
	// parked holds client requests waiting for their queue's failover,
	// and resetAt when each peer's connection last reset with nothing
	// heard from it since (park.go).
	parked  []parkedRequest
	resetAt map[NodeID]time.Duration // on the monotonic clock
	// names lists queue names in sorted order, so every walk over the
	// queues is deterministic.
	names []string
	// slots holds the replicas in names' order for the per-tick pass
	// (rest.go).
	slots []tickSlot
	// drainFor is the consumer bound of the drain DrainOwned started
	// (zero: none); drainDue says a handoff ended since the last tick,
	// so the drain may start another; drainLarge, that it skips
	// checkpoints (handoff.go); drainLeaderTried, that it tried to hand
	// the metadata leadership away (membership.go).
	drainFor                               time.Duration
	drainDue, drainLarge, drainLeaderTried bool
	// drainHanded counts the queues the drain handed over (HandedOff).
	drainHanded int
	disk        diskState
	tickSeq     uint64
	leaseSeq    uint64
	// appendTick is the tick in which this node last sent each peer an
	// append, for heartbeatDue.
	appendTick map[NodeID]uint64
	// started is set once the queues directory is durable and every
	// replica on disk is open; until then the node serves no one.
	started bool
	// preparing holds queues whose replica directory is being made
	// durable.
	preparing map[string]bool
	// meta is this node's member of the metadata raft group.
	meta *metaNode
	// process identifies this process incarnation; an owner that restarts
	// is a new writer and must take a new epoch.
	process uint64
	// lifecycle holds per-queue proposals in flight and client waiters.
	lifecycle map[string]*queueLife
	detector  *detector
	// receiving holds, per queue, a checkpoint arriving in chunks from
	// another replica (at most one per queue).
	receiving map[string]*checkpointAssembly
	// rebuildScheduled is set while a timer for the next rebuild step is
	// pending.
	rebuildScheduled bool
	// flushScheduled is set while the timer that ends the owners' turn
	// is pending.
	flushScheduled bool
	// refused keeps each client connection's latest refusals.
	refused map[ConnID]*refusals
}

// New returns a node; Start opens its storage. It panics on an invalid
// configuration, which the caller should have validated.
func New(cfg Config, env Env) *Node {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("node: invalid config: %v", err))
	}
	return &Node{
		cfg: cfg, env: env, syncs: NewSyncRouter(env),
		queues: make(map[string]*replica), preparing: make(map[string]bool),
		lifecycle: make(map[string]*queueLife), receiving: make(map[string]*checkpointAssembly), refused: make(map[ConnID]*refusals),
	}
}

// path joins elements under the node's data directory.
func (n *Node) path(elem ...string) string {
	if n.cfg.DataDir == "" {
		return n.env.FS().PathJoin(elem...)
	}
	return n.env.FS().PathJoin(append([]string{n.cfg.DataDir}, elem...)...)
}

func (n *Node) emit(e event.Event) { n.env.Emit(e) }

// Start implements Handler: it makes the node's directories durable,
// starts its metadata member, then opens every queue replica on disk.
func (n *Node) Start() {
	n.process = n.env.Rand().Uint64() | 1
	n.leaseSeq = firstLease(n.process)
	n.scheduleTick()
	n.scheduleMetaTick()
	n.startDetector()
	fs := n.env.FS()
	storage.MakeDirs(fs, n.path(queuesDir), n.syncs, func(err error) {
		if err != nil {
			n.env.Halt(fmt.Sprintf("preparing %s: %v", n.path(queuesDir), err))
			return
		}
		storage.MakeDirs(fs, n.metaDir(), n.syncs, func(err error) {
			if err != nil {
				n.env.Halt(fmt.Sprintf("preparing %s: %v", n.metaDir(), err))
				return
			}
			n.checkIdentity(func() { n.openMeta(n.openReplicas) })
		})
	})
}

// openReplicas opens every replica directory on disk. Which of them still
// matter is for the metadata to say; until it does, none serves.
func (n *Node) openReplicas() {
	dirs, err := n.env.FS().List(n.path(queuesDir))
	if err != nil {
		n.env.Halt(fmt.Sprintf("listing %s: %v", n.path(queuesDir), err))
		return
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		if strings.HasSuffix(dir, replacedSuffix) {
			// A replaced replica whose removal a crash interrupted.
			n.env.FS().RemoveAll(n.path(queuesDir, dir))
			continue
		}
		name, inc, ok := ParseReplicaDir(dir)
		if !ok {
			n.emit(event.NewNodeStrayDirectory(dir))
			continue
		}
		if old := n.queues[name]; old != nil && old.inc > inc {
			continue // an older incarnation; the newer one stays
		}
		n.openReplica(name, inc, n.placement().ReplicaSet(name))
	}
	n.started = true
	n.detector.followMembers(n.clusterNodes())
	n.emit(event.NewNodeStarted(len(n.names)))
	n.reconcileAll()
}

func (n *Node) scheduleMetaTick() {
	n.env.After(n.cfg.MetaTick, Timer{Kind: timerMeta})
}

func (n *Node) scheduleTick() {
	n.tickSeq++
	n.env.After(n.cfg.Tick, Timer{Kind: timerTick, Seq: n.tickSeq})
}

// OnTimer implements Handler.
func (n *Node) OnTimer(t Timer) {
	switch t.Kind {
	case timerMeta:
		n.scheduleMetaTick()
		if n.meta != nil {
			n.meta.tick()
			n.retryLifecycle()
		}
		return
	case timerDetect:
		n.onDetectTimer()
		return
	case timerRebuild:
		n.onRebuildTimer()
		return
	case timerFlush:
		n.onFlushTimer()
		return
	case timerHold:
		n.onHoldTimer()
		return
	case timerOutwait:
		n.onOutwaitTimer()
		return
	}
	if t.Kind != timerTick || t.Seq != n.tickSeq {
		return
	}
	n.scheduleTick()
	n.checkDisk()
	n.checkParked("")
	if n.drainDue {
		n.drainDue = false
		n.continueDrain()
	}
	for i := range n.slots {
		s := &n.slots[i]
		if s.skipUntil > n.tickSeq {
			continue // rest.go
		}
		r := s.r
		if r.dozing() {
			s.skipUntil = n.nextDozeVisit(i)
		}
		if r.hasOwnerSide() {
			r.ownerTick()
		}
		r.rollBase()
		// A journal that a build finishing now starts takes its first
		// step at once and its next one on the next tick.
		r.stepJournal()
		r.stepCheckpoint()
		if !bugs.Active(bugs.CompactOnlyWhenCertified) {
			r.compact()
		}
		if s.skipUntil != 0 && r.dozing() {
			r.restFiles()
		}
	}
}

// onMetaMessage hands m to the metadata member if it is one of its
// messages, and reports whether it was.
func (n *Node) onMetaMessage(from NodeID, m wire.Message) bool {
	switch m := m.(type) {
	case *wire.Raft:
		if n.meta != nil {
			n.meta.step(from, m.Data)
		}
	case *wire.MetaLostLog:
		if n.meta != nil {
			n.meta.onLostLog(from, m)
		}
	case *wire.MetaCommitted:
		if n.meta != nil {
			n.meta.learnCommit(from, m)
		}
	default:
		return false
	}
	return true
}

// OnMessage implements Handler: one handler per peer message type.
func (n *Node) OnMessage(from NodeID, m wire.Message) {
	if !n.started {
		n.onMetaMessage(from, m) // metadata runs before the queues open
		return
	}
	n.notePeerHeard(from)
	if n.onMetaMessage(from, m) {
		return
	}
	switch m := m.(type) {
	case *wire.Append:
		n.onAppend(from, m)
	case *wire.AppendReply:
		n.onAppendReply(from, m)
	case *wire.DeadLetter:
		n.onDeadLetter(from, m)
	case *wire.DeadLetterReply:
		n.onDeadLetterReply(from, m)
	case *wire.Ping:
		n.env.Send(from, &wire.Pong{Seq: m.Seq})
	case *wire.Pong:
		n.detectPong(from, m.Seq)
	case *wire.Probe:
		n.onProbe(from, m)
	case *wire.ProbeAck:
		n.onProbeAck(from, m)
	case *wire.Seal:
		n.onSeal(from, m)
	case *wire.SealReply:
		n.onSealReply(from, m)
	case *wire.Fetch:
		n.onFetch(from, m)
	case *wire.FetchReply:
		n.onFetchReply(from, m)
	case *wire.CheckpointAsk:
		n.onCheckpointAsk(from, m)
	case *wire.CheckpointReceipt:
		n.onCheckpointReceipt(from, m)
	case *wire.Checkpoint:
		n.onCheckpoint(from, m)
	case *wire.CheckpointAck:
		n.onCheckpointAck(from, m)
	default:
		n.emit(event.NewNodeUnexpectedMessage(m.Kind().String(), uint32(from)))
	}
}

// OnSynced implements Handler.
func (n *Node) OnSynced(tok SyncToken, err error) {
	if !n.syncs.Complete(tok, err) {
		panic(fmt.Sprintf("node: sync completion for unknown token %d", tok))
	}
}

// OnDisconnect implements Handler. Replication recovers from lost
// messages by itself; a reset only means the next heartbeat may probe.
func (n *Node) OnDisconnect(peer NodeID) {
	n.detectReset(peer)
	n.notePeerReset(peer)
	for _, name := range n.names {
		if r := n.queues[name]; r.hasOwnerSide() {
			r.peerReset(peer)
		}
	}
}

// OnPeerRefused implements Handler.
func (n *Node) OnPeerRefused(peer NodeID) {
	if !n.started {
		return
	}
	n.detectRefused(peer)
}

// StartingDetail is the detail of the answer a node gives every request
// until it has started: unavailable, before the request is looked at.
const StartingDetail = "node is starting"

// OnClient implements Handler: one handler per client request type.
func (n *Node) OnClient(conn ConnID, req wire.Message) {
	if !n.started {
		for _, id := range wire.RequestIDs(req) {
			n.reply(conn, id, wire.StatusUnavailable, StartingDetail)
		}
		return
	}
	if req = n.answerRefusedAgain(conn, req); req == nil {
		return
	}
	switch m := req.(type) {
	case *wire.CreateQueue:
		n.onCreateQueue(conn, m)
	case *wire.DeleteQueue:
		n.onDeleteQueue(conn, m)
	case *wire.Publish:
		n.onPublish(conn, m)
	case *wire.Subscribe:
		n.onSubscribe(conn, m)
	case *wire.Settle:
		n.onSettle(conn, m)
	case *wire.SettleBatch:
		for _, st := range m.Settles() {
			n.onSettle(conn, st)
		}
	case *wire.Unsubscribe:
		n.onUnsubscribe(conn, m)
	case *wire.Extend:
		n.onExtend(conn, m)
	case *wire.Purge:
		n.onPurge(conn, m)
	case *wire.QueueInfo:
		n.onQueueInfo(conn, m)
	case *wire.SetDetection:
		n.onSetDetection(conn, m)
	case *wire.MoveOwner:
		n.onMoveOwner(conn, m)
	case *wire.SetQueueOptions:
		n.onSetQueueOptions(conn, m)
	case *wire.AddNode:
		n.onAddNode(conn, m)
	case *wire.RemoveNode:
		n.onRemoveNode(conn, m)
	case *wire.MemberList:
		n.onMemberList(conn, m)
	case *wire.Rebalance:
		n.onRebalance(conn, m)
	default:
		n.emit(event.NewNodeUnexpectedRequest(req.Kind().String()))
	}
}

// OnClientGone implements Handler: the connection's subscriptions end and
// its leases go back to their queues. An owner recovering into a newer
// epoch of its own keeps its subscriptions as a candidate, to serve them
// once it activates, so the connection must leave those too: a
// subscription kept for a closed connection would have the new epoch hand
// messages to no one, each such delivery using up an attempt and holding
// its message back until the lease runs out, behind newer ones.
func (n *Node) OnClientGone(conn ConnID) {
	delete(n.refused, conn)
	for _, name := range n.names {
		r := n.queues[name]
		if r.hasOwnerSide() {
			r.dropConnection(conn, true)
		}
	}
	n.dropParked(conn)
}

// reply answers a client request. Anything but OK is a refusal, and is
// kept so that a copy of the request gets the same answer (refusals.go).
func (n *Node) reply(conn ConnID, reqID uint64, st wire.Status, detail string) {
	if st != wire.StatusOK {
		n.noteRefusal(conn, reqID, st, detail)
	}
	n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: st, Detail: detail})
}

// addQueue registers a replica under its name, keeping names sorted.
func (n *Node) addQueue(r *replica) {
	n.queues[r.name] = r
	i, _ := slices.BinarySearch(n.names, r.name)
	n.names = slices.Insert(n.names, i, r.name)
	n.slots = slices.Insert(n.slots, i, tickSlot{r: r})
}
