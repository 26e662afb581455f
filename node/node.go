package node

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node/wire"
	"github.com/cairnmq/cairn/storage"
)

// Config configures a queue node.
type Config struct {
	ID    NodeID
	Nodes []NodeID // every node in the cluster, this one included
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
}

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("node ID must be non-zero")
	case !slices.Contains(c.Nodes, c.ID):
		return fmt.Errorf("node %s is not in the node list %v", c.ID, c.Nodes)
	case c.Replicas < 1 || c.Replicas > len(c.Nodes):
		return fmt.Errorf("replication factor %d outside [1, %d]", c.Replicas, len(c.Nodes))
	case c.Tick <= 0:
		return fmt.Errorf("tick %v must be positive", c.Tick)
	}
	return nil
}

const timerTick TimerKind = 1

// queuesDir holds one directory per queue replica.
const queuesDir = "queues"

// Node is a cairn node: it holds replicas of queues, owns some of them,
// and serves clients for the queues it owns.
type Node struct {
	cfg    Config
	env    Env
	place  Placement
	syncs  *SyncRouter
	queues map[string]*replica
	// names lists queue names in sorted order, so every walk over the
	// queues is deterministic.
	names    []string
	tickSeq  uint64
	leaseSeq uint64
	// started is set once the queues directory is durable and every
	// replica on disk is open; until then the node serves no one.
	started bool
	// preparing holds queues whose replica directory is being made
	// durable.
	preparing map[string]bool
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
		place:  Placement{Nodes: cfg.Nodes, Replicas: cfg.Replicas},
		queues: make(map[string]*replica), preparing: make(map[string]bool),
	}
}

// path joins elements under the node's data directory.
func (n *Node) path(elem ...string) string {
	if n.cfg.DataDir == "" {
		return n.env.FS().PathJoin(elem...)
	}
	return n.env.FS().PathJoin(append([]string{n.cfg.DataDir}, elem...)...)
}

func (n *Node) emit(name string, attrs ...slog.Attr) { n.env.Emit(Event{Name: name, Attrs: attrs}) }

// Start implements Handler: it makes the queues directory durable, then
// opens every queue replica on disk.
func (n *Node) Start() {
	n.scheduleTick()
	dir := n.path(queuesDir)
	storage.MakeDirs(n.env.FS(), dir, n.syncs, func(err error) {
		if err != nil {
			n.env.Halt(fmt.Sprintf("preparing %s: %v", dir, err))
			return
		}
		names, err := n.env.FS().List(dir)
		if err != nil {
			n.env.Halt(fmt.Sprintf("listing %s: %v", dir, err))
			return
		}
		slices.Sort(names)
		for _, name := range names {
			if ValidQueueName(name) != nil {
				n.emit("node.stray-directory", slog.String("name", name))
				continue
			}
			n.openReplica(name)
		}
		n.started = true
		n.emit("node.started", slog.Int("queues", len(n.names)))
	})
}

// prepareReplica makes a new queue's replica directory durable, then
// opens the replica and hands it to then. Nothing is written into a
// directory whose own entry could still vanish at a crash.
func (n *Node) prepareReplica(name string, then func(*replica)) {
	n.preparing[name] = true
	storage.MakeDirs(n.env.FS(), n.replicaDir(name), n.syncs, func(err error) {
		delete(n.preparing, name)
		if err != nil {
			n.env.Halt(fmt.Sprintf("preparing queue %s: %v", name, err))
			return
		}
		then(n.openReplica(name))
	})
}

func (n *Node) scheduleTick() {
	n.tickSeq++
	n.env.After(n.cfg.Tick, Timer{Kind: timerTick, Seq: n.tickSeq})
}

// OnTimer implements Handler.
func (n *Node) OnTimer(t Timer) {
	if t.Kind != timerTick || t.Seq != n.tickSeq {
		return
	}
	n.scheduleTick()
	for _, name := range n.names {
		r := n.queues[name]
		if r.owner {
			r.ownerTick()
		}
	}
}

// OnMessage implements Handler: one handler per peer message type.
func (n *Node) OnMessage(from NodeID, m wire.Message) {
	if !n.started {
		return // the sender retries; nothing here is ready to answer
	}
	switch m := m.(type) {
	case *wire.Append:
		n.onAppend(from, m)
	case *wire.AppendReply:
		n.onAppendReply(from, m)
	default:
		n.emit("node.unexpected-message", slog.String("kind", m.Kind().String()), slog.String("from", from.String()))
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
	for _, name := range n.names {
		if r := n.queues[name]; r.owner {
			r.peerReset(peer)
		}
	}
}

// OnClient implements Handler: one handler per client request type.
func (n *Node) OnClient(conn ConnID, req wire.Message) {
	if !n.started {
		if id, ok := requestID(req); ok {
			n.reply(conn, id, wire.StatusUnavailable, "node is starting")
		}
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
	default:
		n.emit("node.unexpected-request", slog.String("kind", req.Kind().String()))
	}
}

// OnClientGone implements Handler: the connection's subscriptions end and
// its leases go back to their queues.
func (n *Node) OnClientGone(conn ConnID) {
	for _, name := range n.names {
		if r := n.queues[name]; r.own != nil && r.own.active {
			r.dropConnection(conn)
		}
	}
}

// requestID extracts the request ID of a client request.
func requestID(req wire.Message) (uint64, bool) {
	switch m := req.(type) {
	case *wire.CreateQueue:
		return m.ReqID, true
	case *wire.DeleteQueue:
		return m.ReqID, true
	case *wire.Publish:
		return m.ReqID, true
	case *wire.Subscribe:
		return m.ReqID, true
	case *wire.Settle:
		return m.ReqID, true
	}
	return 0, false
}

func (n *Node) reply(conn ConnID, reqID uint64, st wire.Status, detail string) {
	n.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: st, Detail: detail})
}

// addQueue registers a replica under its name, keeping names sorted.
func (n *Node) addQueue(r *replica) {
	n.queues[r.name] = r
	i, _ := slices.BinarySearch(n.names, r.name)
	n.names = slices.Insert(n.names, i, r.name)
}
