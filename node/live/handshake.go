package live

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/node/live/session"
)

// readBufferSize is each connection's read buffer.
const readBufferSize = 64 << 10

// acceptSession authenticates an accepted connection: TLS when
// configured, then the session handshake, all within HandshakeTimeout.
// admit decides who may use this port. On failure the connection is
// refused with a logged reason and the caller just returns.
func (r *Runtime) acceptSession(nc net.Conn, side string, admit func(session.Role, uint32) error) (net.Conn, *bufio.Reader, session.Hello, error) {
	nc.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	conn := nc
	if r.cfg.TLS != nil {
		tc := tls.Server(nc, r.cfg.TLS)
		if err := tc.HandshakeContext(r.ctx); err != nil {
			r.refuse(nc, side, "tls-handshake", err)
			return nil, nil, session.Hello{}, err
		}
		conn = tc
		admitRole := admit
		admit = func(role session.Role, id uint32) error {
			if err := admitRole(role, id); err != nil {
				return err
			}
			if role == session.RolePeer {
				return checkPeerIdentity(tc, node.NodeID(id))
			}
			return nil
		}
	}
	br := bufio.NewReaderSize(conn, readBufferSize)
	re := session.Responder{Self: uint32(r.id), Secret: r.cfg.Secret, Admit: admit, Nodes: r.nodes}
	hello, err := re.Handshake(br, conn)
	if err != nil {
		r.refuse(nc, side, "session-handshake", err)
		return nil, nil, session.Hello{}, err
	}
	nc.SetDeadline(time.Time{})
	return conn, br, hello, nil
}

// dialSession opens an authenticated connection to a peer.
func (r *Runtime) dialSession(l *peerLink) (net.Conn, *bufio.Reader, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return nil, nil, err
	}
	setNoDelay(nc)
	r.open.add(nc)
	conn, br, err := r.initiate(ctx, nc, l)
	if err != nil {
		r.open.remove(nc)
		nc.Close()
		return nil, nil, err
	}
	return conn, br, nil
}

// initiate runs TLS and the session handshake as the dialing peer.
func (r *Runtime) initiate(ctx context.Context, nc net.Conn, l *peerLink) (net.Conn, *bufio.Reader, error) {
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	conn := nc
	if r.cfg.TLS != nil {
		tc := tls.Client(nc, dialTLS(r.cfg.TLS, l.addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, nil, fmt.Errorf("TLS handshake: %w", err)
		}
		if err := checkPeerIdentity(tc, l.id); err != nil {
			return nil, nil, err
		}
		conn = tc
	}
	br := bufio.NewReaderSize(conn, readBufferSize)
	in := session.Initiator{Role: session.RolePeer, Self: uint32(r.id), Expect: uint32(l.id), Secret: r.cfg.Secret}
	if _, err := in.Handshake(br, conn); err != nil {
		return nil, nil, fmt.Errorf("session handshake: %w", err)
	}
	nc.SetDeadline(time.Time{})
	return conn, br, nil
}

// refuse logs and counts a connection turned away before it could send a
// single wire frame, and closes it.
func (r *Runtime) refuse(nc net.Conn, side, stage string, err error) {
	r.log.Warn("refusing connection", slog.String("side", side), slog.String("remote", nc.RemoteAddr().String()),
		slog.String("reason", stage+" failed"), slog.String("err", err.Error()))
	r.m.refused.WithLabelValues(side).Inc()
	nc.Close()
}

// rawConn returns the TCP connection under a TLS one, which is what the
// runtime's connection set holds.
func rawConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
