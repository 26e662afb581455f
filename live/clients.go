package live

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// clientFrameLimit bounds a client frame's body: the largest payload the
// node accepts plus room for the envelope. A client gets no more memory
// than that per frame, far below wire.MaxBodySize.
const clientFrameLimit = wire.MaxPayloadSize + wire.MaxQueueNameLen + 1024

// serveClient authenticates a connection on the client port and serves
// it: each request goes to the node as OnClient, the node's replies come
// back through Env.Reply, and OnClientGone follows the last request. Only
// authenticated connections count against MaxClients: strangers have
// their own, smaller bounds, and cannot crowd out real clients.
func (r *Runtime) serveClient(nc net.Conn) {
	conn, br, hello, err := r.acceptSession(nc, sideClient, r.clientGate, admitClient)
	if err != nil {
		return
	}
	if n := r.clientCount.Add(1); n > int64(r.cfg.MaxClients) {
		r.clientCount.Add(-1)
		r.refuse(nc, sideClient, "admission", &limitError{limit: "clients", detail: fmt.Sprintf("%d client connections already open", r.cfg.MaxClients)})
		return
	}
	defer r.clientCount.Add(-1)
	fc := newFrameConn(conn, br, sideClient, clientFrameLimit, r.cfg.SendQueue, r.log, r.m)
	fc.setTimeouts(disabled(r.cfg.Limits.ClientIdleTimeout), disabled(r.cfg.Limits.FrameReadTimeout))
	r.open.attach(nc, fc)
	id := node.ConnID(r.nextConn.Add(1))
	r.m.clients.Inc()
	defer r.m.clients.Dec()
	r.board.addClients(1)
	defer r.board.addClients(-1)
	fc.log.Debug("client connected", slog.Uint64("conn", uint64(id)), slog.String("role", hello.Role.String()))
	// The registration is posted before any request, from this same
	// goroutine, so the node's goroutine sees the connection first.
	r.post(func() { r.clients[id] = fc })
	fc.serve(func(m wire.Message) error { return r.acceptRequest(id, hello.Role, m) })
	r.post(func() {
		delete(r.clients, id)
		r.handler.OnClientGone(id)
	})
}

// acceptRequest hands one request from client connection id to the node,
// unless the connection's role does not allow it: then the runtime
// answers itself, and the node never sees the request.
func (r *Runtime) acceptRequest(id node.ConnID, role session.Role, m wire.Message) error {
	// Anything else decodable is a request; the node answers or ignores
	// kinds it does not serve.
	if isPeerTraffic(m) || isServerTraffic(m) {
		return fmt.Errorf("a client sent %s, which is not a request", m.Kind())
	}
	if what := adminOnly(m); what != "" && role != session.RoleAdmin {
		reqID, _ := wire.RequestID(m)
		r.m.denied.WithLabelValues(m.Kind().String()).Inc()
		r.post(func() { r.env.Reply(id, permissionDenied(reqID, what)) })
		return nil
	}
	r.post(func() { r.onClientRequest(id, m) })
	return nil
}

// admitClient lets only clients and admins use the client port.
func admitClient(role session.Role, _ uint32) error {
	if !role.IsClient() {
		return fmt.Errorf("this is the client port; %ss connect to the peer port", role)
	}
	return nil
}
