package live

import (
	"slices"
	"sync"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// statusBoard is what the runtime knows of the node without asking it:
// lifecycle and leadership events, and what the transport sees. Queue
// views come from the node itself (see Runtime.Status). The node's
// goroutine and the transport write the board; HTTP handlers read it.
type statusBoard struct {
	mu       sync.Mutex
	self     node.NodeID
	started  bool
	draining bool
	leader   uint64 // the last term in which this node became leader
	clients  int
	peers    []status.Peer // in ID order
	// timeline keeps the latest recovery attempts and the marks around
	// them; it has its own lock.
	timeline *timeline
}

func newStatusBoard(nc node.Config, members []Member) *statusBoard {
	b := &statusBoard{self: nc.ID, timeline: newTimeline(uint32(nc.ID))}
	for _, m := range members {
		if m.ID != nc.ID {
			b.peers = append(b.peers, status.Peer{ID: uint32(m.ID), Addr: m.PeerAddr, HTTPAddr: m.HTTPAddr})
		}
	}
	slices.SortFunc(b.peers, func(x, y status.Peer) int { return int(x.ID) - int(y.ID) })
	return b
}

// followLinks makes the board's peers those the runtime keeps links
// with: a member added later is listed at the address its link dials
// (or without one, if it dials this node), and one that left is dropped.
func (b *statusBoard) followLinks(links map[node.NodeID]*peerLink) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.peers[:0]
	for _, p := range b.peers {
		if links[node.NodeID(p.ID)] != nil {
			kept = append(kept, p)
		}
	}
	for id, l := range links {
		if !slices.ContainsFunc(kept, func(p status.Peer) bool { return p.ID == uint32(id) }) {
			kept = append(kept, status.Peer{ID: uint32(id), Addr: l.addr, Connected: l.cur.Load() != nil})
		}
	}
	slices.SortFunc(kept, func(x, y status.Peer) int { return int(x.ID) - int(y.ID) })
	b.peers = kept
}

// apply folds one node event, stamped now with the runtime's clock,
// into the board.
func (b *statusBoard) apply(now time.Time, e event.Event) {
	b.timeline.observe(now, e)
	switch e.Name {
	case event.NodeStarted:
		b.mu.Lock()
		b.started = true
		b.mu.Unlock()
	case event.MetaLeader:
		b.mu.Lock()
		b.leader = e.Term()
		b.mu.Unlock()
	}
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

// snapshot copies the board into a status document without queues.
func (b *statusBoard) snapshot() status.Node {
	b.mu.Lock()
	s := status.Node{
		ID: uint32(b.self), Started: b.started, Draining: b.draining, LeaderTerm: b.leader, Clients: b.clients,
		Peers: slices.Clone(b.peers), Queues: []status.Queue{},
	}
	b.mu.Unlock()
	if b.timeline != nil {
		s.Recoveries, s.Marks = b.timeline.snapshot()
	}
	return s
}

// queueStatus converts the node's view of a queue for the status page.
func queueStatus(v node.QueueView) status.Queue {
	q := status.Queue{
		Name: v.Name, State: v.State, Role: v.Role, Owner: uint32(v.Owner), Epoch: v.Epoch,
		ReplicaEpoch: v.ReplicaEpoch, LastIndex: v.LastIndex, Commit: v.Commit, Active: v.Role == "owner" && (!v.NoQuorum || v.Resting), NoQuorum: v.NoQuorum && !v.Resting, Resting: v.Resting, Fenced: v.Fenced, Suspect: v.Suspect,
		FirstIndex: v.FirstIndex, RetainedBytes: v.RetainedBytes, Segments: v.Segments,
		CheckpointIndex: v.CheckpointIndex, CheckpointBytes: v.CheckpointBytes, CertifiedIndex: v.CertifiedIndex,
		CheckpointAgeSeconds: v.CheckpointAge.Seconds(),
		DedupWindowSeconds:   v.DedupWindow.Seconds(), DedupDefault: v.DedupDefault,
		DeadLetter: v.DeadLetter, MaxDeliveries: v.MaxDeliveries,
	}
	for _, id := range v.Replicas {
		q.Replicas = append(q.Replicas, uint32(id))
	}
	for _, f := range v.Followers {
		q.Followers = append(q.Followers, status.Follower{Node: uint32(f.Node), Acked: f.Acked})
	}
	if d := v.Depth; d.Known {
		q.Depth = &status.Depth{Ready: d.Ready, Leased: d.Leased, Delayed: d.Delayed, DeadLettering: d.DeadLettering, Consumers: d.Consumers, HeldBack: d.HeldBack}
	}
	return q
}
