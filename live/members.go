package live

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
)

// memberLister is a handler that reports the cluster's members as its
// applied metadata records them; *node.Node is one.
type memberLister interface {
	MemberRecords() []node.Member
}

// membersPoll is how often the node's goroutine compares its links with
// the metadata's member list even without a membership event: loading
// the metadata at startup or installing a snapshot changes the list
// without one.
const membersPoll = 500 * time.Millisecond

// link returns the link to peer id, or nil when the runtime keeps none.
// Any goroutine may call it.
func (r *Runtime) link(id node.NodeID) *peerLink {
	return (*r.links.Load())[id]
}

// newLink makes the link to peer id, reached at addr ("" when this node
// never dials it).
func (r *Runtime) newLink(id node.NodeID, addr string) *peerLink {
	l := &peerLink{id: id, addr: addr}
	l.ctx, l.cancel = context.WithCancel(r.ctx)
	return l
}

// changeLinks replaces the link map with a copy that change edited.
// Readers never lock: they see the old map or the new one whole.
func (r *Runtime) changeLinks(change func(map[node.NodeID]*peerLink)) {
	r.linksMu.Lock()
	defer r.linksMu.Unlock()
	next := maps.Clone(*r.links.Load())
	change(next)
	r.links.Store(&next)
}

// strangerLink returns the link of a peer the runtime admitted without
// knowing it (a joining node has no member list yet), making one if
// there is none. The node never dials it: it has the lower ID.
func (r *Runtime) strangerLink(id node.NodeID) *peerLink {
	var out *peerLink
	r.changeLinks(func(links map[node.NodeID]*peerLink) {
		if out = links[id]; out == nil {
			out = r.newLink(id, "")
			links[id] = out
		}
	})
	r.board.followLinks(*r.links.Load())
	return out
}

// startDialer starts dialing l's peer if this node is the one that
// dials it, knows where, and does not dial it already.
func (r *Runtime) startDialer(l *peerLink) {
	if l.id < r.id || l.addr == "" || r.ctx.Err() != nil || !l.dialing.CompareAndSwap(false, true) {
		return
	}
	r.spawn(&r.dialers, "dialer for "+l.id.String(), func() { r.dialLoop(l) })
}

// followMembers makes the links follow the metadata's member list: a
// link for every other member (dialed by the lower ID as always, at the
// configured address or else the one the metadata records) and none for
// a node that is no longer a member. Until the node has metadata the
// configured peers stand. It runs on the node's goroutine.
func (r *Runtime) followMembers() {
	r.membersDirty = false
	ml, ok := r.handler.(memberLister)
	if !ok || r.halted {
		return
	}
	members := ml.MemberRecords()
	if len(members) == 0 {
		return
	}
	r.hasMeta.Store(true)
	r.publishDirectory(members)
	want := make(map[node.NodeID]string, len(members))
	for _, m := range members {
		if m.ID != r.id {
			want[m.ID] = r.peerAddr(m.ID, m.Addr)
		}
	}
	var added, dropped []*peerLink
	r.changeLinks(func(links map[node.NodeID]*peerLink) {
		for _, id := range slices.Sorted(maps.Keys(want)) {
			if links[id] == nil {
				links[id] = r.newLink(id, want[id])
				added = append(added, links[id])
			}
		}
		for _, id := range slices.Sorted(maps.Keys(links)) {
			if _, ok := want[id]; !ok {
				dropped = append(dropped, links[id])
				delete(links, id)
			}
		}
	})
	if len(added)+len(dropped) > 0 {
		r.board.followLinks(*r.links.Load())
	}
	for _, l := range dropped {
		r.retireLink(l)
	}
	for _, l := range added {
		r.log.Info("peer link added", slog.String("peer", l.id.String()), slog.String("addr", l.addr))
		r.startDialer(l)
	}
}

// publishDirectory sets the node list welcomes carry from the member
// list: a member the configuration names keeps its configured addresses,
// another is listed with those AddNode recorded, and a node that left is
// no longer listed. A client that connects, or reconnects, so learns
// where the nodes that joined later are.
func (r *Runtime) publishDirectory(members []node.Member) {
	out := make([]session.NodeInfo, 0, len(members))
	for _, m := range members {
		info := session.NodeInfo{ID: uint32(m.ID), ClientAddr: m.ClientAddr, HTTPAddr: m.HTTPAddr}
		if c := r.cfg.findMember(m.ID); c != nil && c.ClientAddr != "" {
			info.ClientAddr, info.HTTPAddr = c.ClientAddr, c.HTTPAddr
		}
		out = append(out, info)
	}
	r.directory.Store(&out)
}

// peerAddr is where this node reaches peer id: the configured address
// when the configuration names the peer, else the one the metadata
// recorded when the cluster admitted it.
func (r *Runtime) peerAddr(id node.NodeID, recorded string) string {
	if m := r.cfg.findMember(id); m != nil && m.PeerAddr != "" {
		return m.PeerAddr
	}
	return recorded
}

// retireLink stops l: its dialer ends and its connection closes, which
// tells the node the peer disconnected.
func (r *Runtime) retireLink(l *peerLink) {
	l.cancel()
	if fc := l.cur.Load(); fc != nil {
		fc.close("no longer a member", slog.LevelInfo, nil)
	}
	r.log.Info("peer link dropped", slog.String("peer", l.id.String()))
}

// watchMembers asks the node's goroutine to compare its links with the
// member list every membersPoll until the runtime shuts down.
func (r *Runtime) watchMembers() {
	t := time.NewTicker(membersPoll)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			r.post(r.followMembers)
		}
	}
}
