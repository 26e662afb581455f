package live

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
)

// readBufferSize is an authenticated connection's read buffer.
const readBufferSize = 64 << 10

// preAuthBufferSize is the read buffer of a connection still in the
// handshake: enough for the small frames a node reads from a stranger
// (session.MaxInitiatorBody), so that a flood of strangers costs little
// memory. The full buffer comes after authentication.
const preAuthBufferSize = 512

// acceptSession authenticates an accepted connection: TLS when
// configured, then the session handshake, all within HandshakeTimeout
// and within gate's bounds on unauthenticated connections. admit decides
// who may use this port. On failure the connection is refused with a
// logged reason and the caller just returns.
func (r *Runtime) acceptSession(nc net.Conn, side string, gate *preAuthGate, admit func(session.Role, uint32) error) (net.Conn, *bufio.Reader, session.Hello, error) {
	source := sourceOf(nc)
	if err := gate.enter(source); err != nil {
		r.refuse(nc, side, "admission", err)
		return nil, nil, session.Hello{}, err
	}
	defer gate.leave(source)
	nc.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	conn := nc
	if r.cfg.TLS != nil {
		tc := tls.Server(nc, r.cfg.TLS)
		if err := tc.HandshakeContext(r.ctx); err != nil {
			r.refuse(nc, side, "tls-handshake", err)
			return nil, nil, session.Hello{}, err
		}
		conn, admit = tc, admitByCertificate(tc, admit)
	}
	small := bufio.NewReaderSize(conn, preAuthBufferSize)
	re := session.Responder{Self: uint32(r.id), Keys: r.cfg.keys(), Admit: admit, Nodes: *r.directory.Load()}
	hello, err := re.Handshake(small, conn)
	if err != nil {
		r.refuse(nc, side, "session-handshake", err)
		return nil, nil, session.Hello{}, err
	}
	nc.SetDeadline(time.Time{})
	return conn, growReader(small, conn), hello, nil
}

// admitByCertificate adds to admit the check that the TLS certificate
// grants the claimed role: a peer's must name the node it claims to be,
// a client's must not be a node's, and an admin's must name the admin
// role.
func admitByCertificate(tc *tls.Conn, admit func(session.Role, uint32) error) func(session.Role, uint32) error {
	return func(role session.Role, id uint32) error {
		if err := admit(role, id); err != nil {
			return err
		}
		if role == session.RolePeer {
			return checkPeerIdentity(tc, node.NodeID(id))
		}
		return checkClientCert(tc, role)
	}
}

// growReader returns the full-size reader for a connection that has
// authenticated, carrying over whatever the handshake's small reader
// already buffered (a client may send its first request right after its
// proof).
func growReader(small *bufio.Reader, conn net.Conn) *bufio.Reader {
	n := small.Buffered()
	if n == 0 {
		return bufio.NewReaderSize(conn, readBufferSize)
	}
	early, _ := small.Peek(n)
	return bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), readBufferSize)
}

// dialSession opens an authenticated connection to a peer.
func (r *Runtime) dialSession(l *peerLink) (net.Conn, *bufio.Reader, error) {
	ctx, cancel := context.WithTimeout(l.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	if !r.budget.take() {
		return nil, nil, r.budgetSpent()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		r.budget.give()
		return nil, nil, err
	}
	setNoDelay(nc)
	r.open.add(nc)
	conn, br, err := r.initiate(ctx, nc, l)
	if err != nil {
		r.open.remove(nc)
		nc.Close()
		r.budget.give()
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
	in := session.Initiator{Role: session.RolePeer, Self: uint32(r.id), Expect: uint32(l.id), Secret: r.cfg.keys().Peer}
	if _, err := in.Handshake(br, conn); err != nil {
		return nil, nil, fmt.Errorf("session handshake: %w", err)
	}
	nc.SetDeadline(time.Time{})
	return conn, br, nil
}

// refuse counts a connection turned away before it could send a single
// wire frame, closes it, and logs why, at a bounded rate: strangers
// decide how often this happens, and must not decide how much the node
// logs.
func (r *Runtime) refuse(nc net.Conn, side, stage string, err error) {
	r.m.refused.WithLabelValues(side).Inc()
	var le *limitError
	if errors.As(err, &le) {
		r.m.limited.WithLabelValues(side, le.limit).Inc()
	}
	nc.Close()
	ok, suppressed := r.refusals.allow(time.Now())
	if !ok {
		return
	}
	attrs := []any{slog.String("side", side), slog.String("remote", nc.RemoteAddr().String()),
		slog.String("reason", stage+" failed"), slog.String("err", err.Error())}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	r.log.Warn("refusing connection", attrs...)
}

// rawConn returns the TCP connection under a TLS one, which is what the
// runtime's connection set holds.
func rawConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
