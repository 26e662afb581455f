package sqs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
)

// EndpointConfig configures the SQS endpoint a node runs beside its
// runtime.
type EndpointConfig struct {
	// Listen is the address to serve on (host:port; port 0 picks one).
	Listen string
	// TLS, when set, serves HTTPS with this configuration (the node's
	// certificate); SQS clients present no client certificate.
	TLS *tls.Config
	// Server configures the protocol side: region, account, access
	// keys. Backend and Node are filled in.
	Server Config
	// Client and Admin are the cluster credentials the endpoint connects
	// with (see ClusterConfig). Window and IdleAfter tune its receive
	// buffers.
	Client    client.Options
	Admin     *client.Options
	Window    int
	IdleAfter time.Duration
	// StatusAuth is how the endpoint reads other nodes' status (for the
	// counts of queues they own): the client secret, or TLS with a
	// client certificate.
	StatusAuth status.Auth
	// Logger receives the endpoint's logs. Default slog.Default().
	Logger *slog.Logger
}

// Endpoint is a listening SQS endpoint, not yet connected to its node.
type Endpoint struct {
	cfg EndpointConfig
	ln  net.Listener
}

// Timeouts of the endpoint's HTTP server. Writes must outlast the
// longest long poll.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	headerBytesMax    = 16 << 10
)

// Listen opens the endpoint's port, so its address is known (and a port
// already taken is reported) before the node starts.
func Listen(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Server.Keys) == 0 {
		return nil, errors.New("sqs: the endpoint has no access keys")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("sqs: listening on %s: %w", cfg.Listen, err)
	}
	return &Endpoint{cfg: cfg, ln: ln}, nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// connectRetry is how long Run waits between attempts to connect to its
// node while the node starts.
const connectRetry = 200 * time.Millisecond

// Run connects to the node rt runs (retrying while it starts), serves
// SQS requests until ctx ends, then shuts the server down and closes its
// connections. It returns nil after a clean shutdown.
func (e *Endpoint) Run(ctx context.Context, rt *live.Runtime) error {
	defer e.ln.Close()
	backend, err := e.connect(ctx, rt)
	if err != nil {
		return err
	}
	if backend == nil {
		return nil // ctx ended first
	}
	defer backend.Close()
	scfg := e.cfg.Server
	scfg.Backend, scfg.Node, scfg.Logger = backend, uint32(rt.Status().ID), e.cfg.Logger
	handler, err := New(scfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: headerBytesMax,
		ErrorLog: slog.NewLogLogger(e.cfg.Logger.Handler(), slog.LevelDebug)}
	ln := &limitListener{Listener: e.ln, slots: make(chan struct{}, connsMax), log: e.cfg.Logger}
	served := make(chan error, 1)
	go func() {
		if e.cfg.TLS != nil {
			t := e.cfg.TLS.Clone()
			t.ClientAuth = tls.NoClientCert
			srv.TLSConfig = t
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	e.cfg.Logger.Info("SQS endpoint serving", slog.String("addr", e.Addr()), slog.Bool("tls", e.cfg.TLS != nil))
	select {
	case err := <-served:
		return fmt.Errorf("sqs: serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// connect builds the cluster backend on the node's client port,
// retrying until the node completes a handshake or ctx ends (nil, nil).
func (e *Endpoint) connect(ctx context.Context, rt *live.Runtime) (*ClusterBackend, error) {
	cfg := ClusterConfig{
		Addrs: []string{rt.ClientAddr()}, Client: e.cfg.Client, Admin: e.cfg.Admin, Window: e.cfg.Window,
		IdleAfter: e.cfg.IdleAfter, Logger: e.cfg.Logger,
		Status: func(context.Context) (status.Node, error) { return rt.Status(), nil },
		OwnerStatus: func(ctx context.Context, addr string) (*status.Node, error) {
			return status.FetchAuth(ctx, addr, e.cfg.StatusAuth)
		},
	}
	for attempt := 0; ; attempt++ {
		b, err := NewClusterBackend(ctx, cfg)
		if err == nil {
			return b, nil
		}
		// A node still starting refuses for a moment; one that keeps
		// refusing (a wrong credential, say) is worth a warning now and
		// then.
		if attempt%25 == 24 {
			e.cfg.Logger.Warn("SQS endpoint cannot connect to its node", slog.String("err", err.Error()))
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(connectRetry):
		}
	}
}

// connsMax bounds the endpoint's open connections: SQS clients keep a
// pool each, and a flood of them must not exhaust the node's
// descriptors, which its disk needs.
const connsMax = 1024

// limitListener closes connections beyond connsMax at once.
type limitListener struct {
	net.Listener
	slots chan struct{}
	log   *slog.Logger
}

// Accept returns the next connection within the bound.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: nc, release: func() { <-l.slots }}, nil
		default:
			l.log.Debug("SQS endpoint refused a connection over its limit", slog.Int("limit", connsMax), slog.String("remote", nc.RemoteAddr().String()))
			nc.Close()
		}
	}
}

// slotConn gives its slot back when closed, once.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
