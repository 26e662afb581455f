// Package counter is a trivial replicated counter that exercises the node
// environment end to end: timers, messages, a storage log with
// asynchronous syncs, boundaries, events and halting. A fixed leader
// appends increments and streams them to followers; an increment is
// confirmed once a majority holds it durably. The value of increment i is
// i itself, so replicas that agree on length agree on content.
package counter

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// Config configures one counter node.
type Config struct {
	ID     node.NodeID
	Peers  []node.NodeID // every node, this one included
	Leader node.NodeID
	// Tick is the leader's append and heartbeat interval.
	Tick time.Duration
	// MaxUnconfirmed bounds how far the leader runs ahead of confirmation.
	MaxUnconfirmed uint64
	// SegmentSize is the log's segment size.
	SegmentSize int64
	// ResendPage bounds how many increments one catch-up message carries.
	ResendPage uint32
}

// LogDir is where the counter keeps its log on the node's disk.
const LogDir = "counter"

// recordIncrement is the log record type of one increment.
const recordIncrement storage.RecordType = 1

const timerTick node.TimerKind = 1

// Boundaries the counter itself declares (storage adds its own).
const (
	BoundaryBeforeAck     = "counter.before.send-ack"
	BoundaryAfterConfirm  = "counter.after.confirm"
	BoundaryBeforeAppend  = "counter.before.append"
	BoundaryAfterAppended = "counter.after.append"
)

// Node is one counter replica.
type Node struct {
	cfg   Config
	env   node.Env
	syncs *node.SyncRouter
	log   *storage.Log
	// fenced is set when storage could not be opened; the node then
	// refuses to take part rather than guess.
	fenced error
	// durable holds each peer's last reported durable index (leader only).
	durable   map[node.NodeID]uint64
	confirmed uint64
	tickSeq   uint64
	// ackedDurable is the largest durable index this node has reported.
	ackedDurable uint64
}

// New returns a counter node; Start opens its storage.
func New(cfg Config, env node.Env) *Node {
	if cfg.ID == 0 || cfg.Leader == 0 || !slices.Contains(cfg.Peers, cfg.ID) {
		panic(fmt.Sprintf("counter: invalid config %+v", cfg))
	}
	if cfg.Tick <= 0 || cfg.MaxUnconfirmed == 0 || cfg.ResendPage == 0 {
		panic(fmt.Sprintf("counter: tick, window and page must be positive: %+v", cfg))
	}
	return &Node{cfg: cfg, env: env, syncs: node.NewSyncRouter(env), durable: make(map[node.NodeID]uint64)}
}

func (n *Node) isLeader() bool { return n.cfg.ID == n.cfg.Leader }

// Start implements node.Handler.
func (n *Node) Start() {
	l, err := storage.Open(n.env.FS(), LogDir, n.syncs, storage.Options{
		SegmentSize: n.cfg.SegmentSize,
		OnDurable:   n.onDurable,
		OnFailed:    func(err error) { n.env.Halt(fmt.Sprintf("counter log failed: %v", err)) },
	})
	if err != nil && !errors.Is(err, storage.ErrCorrupt) {
		// An I/O error is not evidence about the data: halt, and let the
		// restart try again.
		n.env.Halt(fmt.Sprintf("counter log did not open: %v", err))
	}
	if err != nil {
		n.fenced = err
		n.env.Emit(event.NewCounterFenced(err))
		return
	}
	n.log = l
	n.env.Emit(event.NewCounterOpen(l.LastIndex(), l.Digest().String()))
	if n.isLeader() {
		n.scheduleTick()
	}
}

func (n *Node) scheduleTick() {
	n.tickSeq++
	n.env.After(n.cfg.Tick, node.Timer{Kind: timerTick, Seq: n.tickSeq})
}

// OnTimer implements node.Handler.
func (n *Node) OnTimer(t node.Timer) {
	if t.Kind != timerTick || t.Seq != n.tickSeq || n.log == nil {
		return
	}
	n.scheduleTick()
	if n.log.LastIndex() < n.confirmed+n.cfg.MaxUnconfirmed {
		count := uint32(1 + n.env.Rand().IntN(3))
		first := n.log.LastIndex() + 1
		n.appendIncrements(first, count)
		for _, p := range n.followers() {
			n.env.Send(p, &wire.CounterAppend{FirstIndex: first, Count: count})
		}
	}
	for _, p := range n.followers() {
		n.env.Send(p, &wire.CounterProbe{LeaderLast: n.log.LastIndex()})
	}
}

func (n *Node) followers() []node.NodeID {
	out := make([]node.NodeID, 0, len(n.cfg.Peers)-1)
	for _, p := range n.cfg.Peers {
		if p != n.cfg.ID {
			out = append(out, p)
		}
	}
	return out
}

// appendIncrements appends increments first..first+count-1, skipping any
// the log already holds.
func (n *Node) appendIncrements(first uint64, count uint32) {
	last := first + uint64(count) - 1
	if last <= n.log.LastIndex() || first > n.log.LastIndex()+1 {
		return
	}
	n.env.Boundary(BoundaryBeforeAppend)
	entries := make([]storage.Entry, 0, count)
	for i := n.log.LastIndex() + 1; i <= last; i++ {
		entries = append(entries, storage.Entry{Type: recordIncrement, Body: wire.AppendUint64(nil, i)})
	}
	if _, err := n.log.AppendBatch(entries); err != nil {
		return // the log failed; OnFailed has halted the process
	}
	n.env.Boundary(BoundaryAfterAppended)
	n.log.RequestSync()
}

// OnMessage implements node.Handler.
func (n *Node) OnMessage(from node.NodeID, m wire.Message) {
	if n.log == nil {
		return
	}
	switch m := m.(type) {
	case *wire.CounterAppend:
		n.onAppend(from, m)
	case *wire.CounterProbe:
		n.sendAck(from, true)
	case *wire.CounterAck:
		n.onAck(from, m)
	default:
		panic(fmt.Sprintf("counter: unexpected message %s from %s", m.Kind(), from))
	}
}

func (n *Node) onAppend(from node.NodeID, m *wire.CounterAppend) {
	if from != n.cfg.Leader || n.isLeader() {
		return
	}
	n.appendIncrements(m.FirstIndex, m.Count)
	n.sendAck(from, false)
}

func (n *Node) sendAck(to node.NodeID, probed bool) {
	n.env.Boundary(BoundaryBeforeAck)
	durable := n.log.DurableIndex()
	if durable > n.ackedDurable {
		n.ackedDurable = durable
		n.env.Emit(event.NewCounterAcked(durable))
	}
	n.env.Send(to, &wire.CounterAck{LastIndex: n.log.LastIndex(), DurableIndex: durable, Probed: probed})
}

func (n *Node) onAck(from node.NodeID, m *wire.CounterAck) {
	if !n.isLeader() {
		return
	}
	n.durable[from] = m.DurableIndex
	n.updateConfirmed()
	if last := n.log.LastIndex(); m.Probed && m.LastIndex < last {
		first := m.LastIndex + 1
		count := uint32(min(uint64(n.cfg.ResendPage), last-m.LastIndex))
		n.env.Send(from, &wire.CounterAppend{FirstIndex: first, Count: count})
	}
}

func (n *Node) onDurable(index uint64) {
	if n.isLeader() {
		n.updateConfirmed()
		return
	}
	n.sendAck(n.cfg.Leader, false)
}

// updateConfirmed moves the confirmed index to the largest index a
// majority holds durably, never past what the leader itself holds.
func (n *Node) updateConfirmed() {
	durable := []uint64{n.log.DurableIndex()}
	for _, p := range n.followers() {
		durable = append(durable, n.durable[p])
	}
	slices.Sort(durable)
	majority := durable[len(durable)-(len(durable)/2+1)]
	c := min(majority, n.log.LastIndex())
	if c <= n.confirmed {
		return
	}
	n.confirmed = c
	n.env.Emit(event.NewCounterConfirmed(c))
	n.env.Boundary(BoundaryAfterConfirm)
}

// OnSynced implements node.Handler.
func (n *Node) OnSynced(tok node.SyncToken, err error) {
	if !n.syncs.Complete(tok, err) {
		panic(fmt.Sprintf("counter: sync completion for unknown token %d", tok))
	}
}

// OnDisconnect implements node.Handler. The leader forgets a follower's
// durable index only in the sense that it will resend on the next ack; a
// durable index never shrinks, so nothing else changes.
func (n *Node) OnDisconnect(peer node.NodeID) {
	n.env.Emit(event.NewCounterDisconnect(uint32(peer)))
}

// OnPeerRefused implements node.Handler. The counter's leader never
// changes, so a dead peer is no news to act on.
func (n *Node) OnPeerRefused(node.NodeID) {}

// OnClient implements node.Handler. The counter has no client protocol.
func (n *Node) OnClient(conn node.ConnID, req wire.Message) {}

// LastIndex is the index of the last increment in the node's log, or 0 if
// the node is fenced.
func (n *Node) LastIndex() uint64 {
	if n.log == nil {
		return 0
	}
	return n.log.LastIndex()
}

// DurableIndex is the last increment the node holds durably.
func (n *Node) DurableIndex() uint64 {
	if n.log == nil {
		return 0
	}
	return n.log.DurableIndex()
}

// Fenced reports why the node refused to take part, or nil.
func (n *Node) Fenced() error { return n.fenced }

// OnClientGone implements node.Handler.
func (n *Node) OnClientGone(conn node.ConnID) {}
