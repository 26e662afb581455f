package live

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/node/live/status"
)

// statusBoard is the node as the status page shows it. It is built from
// the events the node emits (so nothing in the node had to change to
// expose it) plus what the transport knows. The node's goroutine writes
// it; HTTP handlers read snapshots.
type statusBoard struct {
	mu       sync.Mutex
	self     node.NodeID
	place    node.Placement
	started  bool
	draining bool
	leader   uint64 // the last term in which this node became leader
	clients  int
	peers    []status.Peer // in ID order
	queues   map[string]*status.Queue
}

func newStatusBoard(nc node.Config, members []Member) *statusBoard {
	b := &statusBoard{
		self: nc.ID, place: node.Placement{Nodes: nc.Nodes, Replicas: nc.Replicas},
		queues: make(map[string]*status.Queue),
	}
	for _, m := range members {
		if m.ID != nc.ID {
			b.peers = append(b.peers, status.Peer{ID: uint32(m.ID), Addr: m.PeerAddr, HTTPAddr: m.HTTPAddr})
		}
	}
	slices.SortFunc(b.peers, func(x, y status.Peer) int { return int(x.ID) - int(y.ID) })
	return b
}

// apply folds one node event into the board.
func (b *statusBoard) apply(e node.Event) {
	switch e.Name {
	case "node.started":
		b.mu.Lock()
		b.started = true
		b.mu.Unlock()
		return
	case "meta.leader":
		term, _ := attrUint(e.Attrs, "term")
		b.mu.Lock()
		b.leader = term
		b.mu.Unlock()
		return
	}
	if !strings.HasPrefix(e.Name, "queue.") {
		return
	}
	name, ok := attrString(e.Attrs, "q")
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue(name)
	switch e.Name {
	case "queue.open":
		q.LastIndex, _ = attrUint(e.Attrs, "last")
		q.Epoch, _ = attrUint(e.Attrs, "epoch")
	case "queue.active":
		q.Active = true
		q.Epoch, _ = attrUint(e.Attrs, "epoch")
		q.LastIndex, _ = attrUint(e.Attrs, "last")
	case "queue.durable":
		q.LastIndex, _ = attrUint(e.Attrs, "index")
	case "queue.commit":
		q.Commit, _ = attrUint(e.Attrs, "index")
	case "queue.reported":
		q.Epoch, _ = attrUint(e.Attrs, "epoch")
	case "queue.truncate":
		if after, ok := attrUint(e.Attrs, "after"); ok {
			q.LastIndex = min(q.LastIndex, after)
		}
	case "queue.retired":
		delete(b.queues, name)
	case "queue.fenced":
		q.Fenced, _ = attrString(e.Attrs, "err")
		q.Active = false
	}
}

// queue returns the entry for name, creating it with its placement.
func (b *statusBoard) queue(name string) *status.Queue {
	if q := b.queues[name]; q != nil {
		return q
	}
	set := b.place.ReplicaSet(name)
	q := &status.Queue{Name: name, Role: "follower", Owner: uint32(set[0])}
	for _, id := range set {
		q.Replicas = append(q.Replicas, uint32(id))
	}
	if set[0] == b.self {
		q.Role = "owner"
	}
	b.queues[name] = q
	return q
}

func (b *statusBoard) setPeer(id node.NodeID, up bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.peers {
		if b.peers[i].ID == uint32(id) {
			b.peers[i].Connected = up
		}
	}
}

func (b *statusBoard) addClients(n int) {
	b.mu.Lock()
	b.clients += n
	b.mu.Unlock()
}

func (b *statusBoard) setDraining() {
	b.mu.Lock()
	b.draining = true
	b.mu.Unlock()
}

// snapshot copies the board into a status document.
func (b *statusBoard) snapshot() status.Node {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := status.Node{
		ID: uint32(b.self), Started: b.started, Draining: b.draining, LeaderTerm: b.leader, Clients: b.clients,
		Peers: slices.Clone(b.peers), Queues: []status.Queue{},
	}
	for _, q := range b.queues {
		c := *q
		c.Replicas = slices.Clone(q.Replicas)
		out.Queues = append(out.Queues, c)
	}
	slices.SortFunc(out.Queues, func(x, y status.Queue) int { return strings.Compare(x.Name, y.Name) })
	return out
}

func attrString(attrs []slog.Attr, key string) (string, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

func attrUint(attrs []slog.Attr, key string) (uint64, bool) {
	for _, a := range attrs {
		if a.Key != key {
			continue
		}
		switch a.Value.Kind() {
		case slog.KindUint64:
			return a.Value.Uint64(), true
		case slog.KindInt64:
			return uint64(max(a.Value.Int64(), 0)), true
		}
	}
	return 0, false
}
