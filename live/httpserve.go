package live

import (
	"cmp"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/cairnmq/cairn/session"
)

// maxHTTPHeaderBytes bounds a request's headers; the node's endpoints
// need none of any size.
const maxHTTPHeaderBytes = 16 << 10

// newHTTPServer builds the HTTP server: every timeout set, so that idle
// or slow connections are closed, TLS when the node runs TLS, and a
// credential required beyond the open paths.
func (r *Runtime) newHTTPServer() *http.Server {
	lim := r.cfg.Limits
	srv := &http.Server{
		Handler:           r.authorize(r.httpHandler()),
		ReadHeaderTimeout: disabled(lim.HTTPReadHeaderTimeout),
		ReadTimeout:       disabled(lim.HTTPReadTimeout),
		WriteTimeout:      disabled(lim.HTTPWriteTimeout),
		IdleTimeout:       disabled(lim.HTTPIdleTimeout),
		MaxHeaderBytes:    maxHTTPHeaderBytes,
		// The server logs failed TLS handshakes and bad requests, which
		// anyone can cause: keep them at debug level.
		ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelDebug),
	}
	if r.cfg.TLS != nil {
		t := r.cfg.TLS.Clone()
		// A certificate is asked for, not required, so that probes of
		// the open paths need none; the handler checks it where needed.
		t.ClientAuth = tls.VerifyClientCertIfGiven
		srv.TLSConfig = t
	}
	return srv
}

// authorize serves the open paths to anyone and everything else only to
// a request that carries the credential HTTPAuth asks for: a client
// certificate (under TLS) naming the role, or the client or admin
// secret as a bearer token or a basic-auth password.
func (r *Runtime) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.cfg.HTTPAuth == HTTPAuthNone || slices.Contains(r.cfg.HTTPOpenPaths, req.URL.Path) || peerReadsStatus(req) {
			next.ServeHTTP(w, req)
			return
		}
		role, ok := r.httpRole(req)
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Basic realm="cairn", charset="UTF-8"`)
			http.Error(w, "a client or admin credential is required", http.StatusUnauthorized)
		case r.cfg.HTTPAuth == HTTPAuthAdmin && role != session.RoleAdmin:
			http.Error(w, "the admin role is required", http.StatusForbidden)
		default:
			next.ServeHTTP(w, req)
		}
	})
}

// peerReadsStatus reports whether req is another node reading /status
// with its node certificate, which the TLS layer verified against the
// cluster CA: a dashboard gathering the cluster's status (dashboard.go)
// needs no client or admin credential of its own.
func peerReadsStatus(req *http.Request) bool {
	return req.URL.Path == "/status" && req.TLS != nil && len(req.TLS.PeerCertificates) > 0 &&
		certRole(req.TLS.PeerCertificates[0]) == session.RolePeer
}

// httpRole returns the role a request's credential grants, if any.
func (r *Runtime) httpRole(req *http.Request) (session.Role, bool) {
	if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
		// The TLS layer verified the chain against the cluster CA.
		if role := certRole(req.TLS.PeerCertificates[0]); role.IsClient() {
			return role, true
		}
	}
	secret := presentedSecret(req)
	if secret == nil {
		return 0, false
	}
	if admin := r.cfg.AdminSecret; len(admin) > 0 && subtle.ConstantTimeCompare(secret, admin) == 1 {
		return session.RoleAdmin, true
	}
	if client := cmp.Or(string(r.cfg.ClientSecret), string(r.cfg.Secret)); client != "" && subtle.ConstantTimeCompare(secret, []byte(client)) == 1 {
		return session.RoleClient, true
	}
	return 0, false
}

// presentedSecret is the secret a request carries: a bearer token, or a
// basic-auth password (what a browser sends), or nil.
func presentedSecret(req *http.Request) []byte {
	if token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		return []byte(token)
	}
	if _, password, ok := req.BasicAuth(); ok && password != "" {
		return []byte(password)
	}
	return nil
}

// limitListener caps the HTTP port's open connections, within the
// node's socket budget. A connection over either bound is closed at once,
// with a rate-limited log line: a flood of idle keep-alive connections
// can no more exhaust descriptors than memory.
type limitListener struct {
	net.Listener
	r     *Runtime
	slots chan struct{}
}

// Accept returns the next connection within the bounds.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.r.refuse(nc, sideHTTP, "admission", &limitError{limit: "http", detail: "the HTTP connection limit (Limits.MaxHTTPConns) is reached"})
			continue
		}
		if !l.r.budget.take() {
			<-l.slots
			l.r.refuse(nc, sideHTTP, "admission", l.r.budgetSpent())
			continue
		}
		return &limitedConn{Conn: nc, release: func() { <-l.slots; l.r.budget.give() }}, nil
	}
}

// limitedConn gives its slots back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slots.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
