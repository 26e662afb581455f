package live

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// Reconnect backoff bounds. A connection that broke is redialed at once,
// and the first failed dial is retried quickly, so a peer that restarts is
// back within a fraction of a second; a peer that stays down is retried
// every couple of seconds, not hammered.
const (
	dialBackoffMin = 50 * time.Millisecond
	dialBackoffMax = 2 * time.Second
)

// peerLink is this node's side of its one connection with a peer. The
// node with the lower ID dials; the other accepts. cur is the established
// connection, or nil; the node's goroutine reads it to send. ctx ends
// when the peer stops being a member (or the runtime shuts down), which
// stops the dialer.
type peerLink struct {
	id      node.NodeID
	addr    string
	cur     atomic.Pointer[frameConn]
	ctx     context.Context
	cancel  context.CancelFunc
	dialing atomic.Bool // a dialer runs for it (startDialer)
}

// dialedLinks returns the links this node dials, in ID order.
func (r *Runtime) dialedLinks() []*peerLink {
	var out []*peerLink
	for id, l := range *r.links.Load() {
		if id > r.id {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b *peerLink) int { return int(a.id) - int(b.id) })
	return out
}

// dialLoop keeps a connection to l's peer until the runtime shuts down,
// redialing with jittered exponential backoff.
func (r *Runtime) dialLoop(l *peerLink) {
	backoff := dialBackoffMin
	failures := 0
	for l.ctx.Err() == nil {
		conn, br, err := r.dialSession(l)
		if err != nil {
			if refused(err) {
				r.post(func() { r.handler.OnPeerRefused(l.id) })
			}
			failures++
			level := slog.LevelDebug
			if failures == 1 {
				level = slog.LevelInfo
			}
			r.log.Log(r.ctx, level, "cannot reach peer", slog.String("peer", l.id.String()),
				slog.String("addr", l.addr), slog.String("err", err.Error()), slog.Int("failures", failures))
			if !sleep(l.ctx, jitter(backoff)) {
				return
			}
			backoff = min(2*backoff, dialBackoffMax)
			continue
		}
		failures, backoff = 0, dialBackoffMin
		began := time.Now()
		r.runPeer(l, conn, br)
		r.budget.give() // dialSession took it
		// Redial at once after a connection that lasted: the node is
		// verifying the peer (detect.go), and a peer that is alive must
		// be reachable again within a few milliseconds to answer. A
		// connection that broke right after it was made waits first, so
		// a peer that keeps cutting it off is not dialed in a tight loop.
		if time.Since(began) < time.Second && !sleep(l.ctx, jitter(dialBackoffMin)) {
			return
		}
	}
}

// jitter spreads d over [d/2, d], so peers that lost each other together
// do not redial in lockstep.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d, or reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// serveIncomingPeer authenticates a connection on the peer port and runs
// it as the link of the peer that dialed.
func (r *Runtime) serveIncomingPeer(nc net.Conn) {
	conn, br, hello, err := r.acceptSession(nc, sidePeer, r.peerGate, r.admitPeer)
	if err != nil {
		return
	}
	peer := node.NodeID(hello.Node)
	l := r.link(peer)
	if l == nil && !r.hasMeta.Load() {
		l = r.strangerLink(peer)
	}
	if l == nil {
		// It stopped being a member during the handshake.
		conn.Close()
		return
	}
	r.runPeer(l, conn, br)
}

// admitPeer lets in only peers of this cluster that are meant to dial
// this node, so each pair of nodes shares exactly one connection. A peer
// is of this cluster if the metadata lists it, or, while this node has
// no metadata yet (it is joining, or still starting), if it proved the
// peer credential: a joining node learns the members from the leader
// that dials it.
func (r *Runtime) admitPeer(role session.Role, id uint32) error {
	if role != session.RolePeer {
		return fmt.Errorf("this is the peer port; %ss connect to the client port", role)
	}
	peer := node.NodeID(id)
	switch {
	case peer == r.id || peer == 0:
		return fmt.Errorf("a peer claims to be node %s", peer)
	case r.link(peer) == nil && r.hasMeta.Load():
		return fmt.Errorf("node %s is not a member of this cluster", peer)
	}
	if peer > r.id {
		return fmt.Errorf("node %s must be dialed by %s, not dial it", peer, r.id)
	}
	return nil
}

// runPeer installs a connection as l's current one and serves it until
// it closes, then tells the node the peer disconnected. A newer
// connection from the same peer (it restarted before the old one was
// noticed dead) replaces the old one.
func (r *Runtime) runPeer(l *peerLink, conn net.Conn, br *bufio.Reader) {
	fc := newFrameConn(conn, br, sidePeer, wire.MaxBodySize, r.cfg.SendQueue, r.log, r.m)
	// Peers get no idle timeout: a quiet link is not a dead one, and
	// cutting it would look like a failure to the node.
	fc.setTimeouts(0, disabled(r.cfg.Limits.FrameReadTimeout))
	r.open.attach(rawConn(conn), fc)
	if old := l.cur.Swap(fc); old != nil {
		old.close("replaced", slog.LevelInfo, nil)
	} else {
		r.m.peersUp.Inc()
	}
	if l.ctx.Err() != nil {
		// The peer stopped being a member while this connection was
		// being made; retireLink may have looked before it was installed.
		fc.close("no longer a member", slog.LevelInfo, nil)
	}
	r.board.setPeer(l.id, true)
	r.log.Info("peer connected", slog.String("peer", l.id.String()), slog.String("remote", fc.remote))
	fc.serve(func(m wire.Message) error {
		if _, ok := wire.RequestID(m); ok || isServerTraffic(m) {
			return fmt.Errorf("peer %s sent client traffic (%s)", l.id, m.Kind())
		}
		ev := func() { r.handler.OnMessage(l.id, m) }
		switch {
		case isControl(m):
			r.postFirst(ev)
		case !r.offer(ev):
			r.m.recvDropped.Inc()
		}
		return nil
	})
	if l.cur.CompareAndSwap(fc, nil) {
		r.m.peersUp.Dec()
		r.board.setPeer(l.id, false)
	}
	r.open.remove(rawConn(conn))
	r.log.Info("peer disconnected", slog.String("peer", l.id.String()), slog.String("remote", fc.remote))
	r.post(func() { r.handler.OnDisconnect(l.id) })
	r.startRefusalProbe(l)
}
