// Package live is cairn's production environment: it runs one node
// against the real clock, the real disk (pebble's vfs.Default) and real
// TCP connections, with nothing in the node changed.
//
// One goroutine owns the node's Handler and drains an inbox of events:
// peer messages, timer firings, sync completions, disconnects, client
// requests and departed clients. No two handlers ever run at once, and
// every Env method, always called on that goroutine, returns at once:
// timers, fsyncs and sends complete on other goroutines and come back
// through the inbox. Transport readers and writers, sync workers, dialers
// and the HTTP server are structured with conc, and a panic on any of
// them stops the process loudly instead of leaving it half serving.
//
// Connections are authenticated before any wire frame is accepted: by
// mutual TLS, or, when TLS is off, by the secret of the connection's role
// (peer, client or admin) proven with the HMAC handshake of package
// session. The role decides what a connection may do: only peers use the
// peer port, and only admins may change the cluster. Connections are
// bounded before and after authentication (see Limits), and bad input
// closes only the connection it arrived on, with a logged reason.
package live

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sourcegraph/conc"
)

// inboxSize bounds the events waiting for the node's goroutine. A full
// inbox makes client connection readers wait, which pushes back on
// clients through TCP rather than growing memory; a peer's queue traffic
// is dropped instead (offer), so the bound is set well above any burst a
// healthy node sees.
const inboxSize = 1 << 15

// Runtime drives one node: New binds its ports and locks its data
// directory, Run serves until its context ends and then drains.
type Runtime struct {
	cfg   Config
	id    node.NodeID
	log   *slog.Logger
	m     *metrics
	board *statusBoard
	lock  io.Closer
	// directory is the cluster as clients see it, the node list every
	// welcome carries: the configured nodes until the node has metadata,
	// then its members (see publishDirectory).
	directory atomic.Pointer[[]session.NodeInfo]
	// links holds one link per peer, replaced whole under linksMu when
	// the member list changes (members.go), so senders never lock.
	links   atomic.Pointer[map[node.NodeID]*peerLink]
	linksMu sync.Mutex
	// hasMeta says the node has reported a member list: from then on
	// only members may join the peer port.
	hasMeta atomic.Bool
	dialers conc.WaitGroup
	syncer  *syncer
	open    connSet

	// Bounds on what connections may cost (see Limits).
	clientGate, peerGate *preAuthGate
	budget               *connBudget
	refusals             *logLimiter
	// events writes node events to the log at their level.
	events *eventLogger

	clientLn, peerLn, httpLn net.Listener
	httpSrv                  *http.Server

	// The node and what only its goroutine touches.
	handler node.Handler
	env     *env
	// trash is the node's file system, which removes files off the loop
	// (trash.go); nil until the data directory is locked.
	trash   *trashFS
	clients map[node.ConnID]*frameConn
	halted  bool
	traffic trafficCounts
	// membersDirty says a membership change was applied during the
	// current handler, so the links must follow the member list.
	membersDirty bool

	// inbox holds the events for the node's goroutine; urgent, a peer's
	// control traffic, which the goroutine takes first (loop.go).
	inbox, urgent chan func()
	// soon holds the timers armed with no delay, and turn counts the
	// inputs taken since the first of them (runLoop).
	soon     []node.Timer
	turn     int
	loopStop chan struct{} // closed to stop the node's goroutine
	loopDone chan struct{} // closed once it has returned

	nextConn    atomic.Uint64
	clientCount atomic.Int64
	draining    atomic.Bool

	// ctx lives until the end of the drain; dialers and handshakes
	// watch it.
	ctx    context.Context
	cancel context.CancelFunc
	conns  conc.WaitGroup // one goroutine per accepted connection

	deadOnce sync.Once
	dead     chan struct{} // closed when the node halted or panicked
	deathErr error
}

// New validates cfg, creates and locks the data directory, binds the
// listeners and builds the node. Nothing runs until Run.
func New(cfg Config) (*Runtime, error) {
	cfg.fill()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nc := nodeConfig(&cfg)
	r := &Runtime{
		cfg: cfg, id: nc.ID, m: newMetrics(),
		log:     cfg.Logger.With(slog.String("node", nc.ID.String())),
		clients: make(map[node.ConnID]*frameConn),
		inbox:   make(chan func(), inboxSize), urgent: make(chan func(), inboxSize), loopStop: make(chan struct{}), loopDone: make(chan struct{}),
		dead: make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.board = newStatusBoard(nc, cfg.Members)
	r.m.reg.MustRegister(newQueueCollector(r))
	lim := cfg.Limits
	r.clientGate = newPreAuthGate(lim.MaxPreAuthConns, lim.MaxPreAuthPerSource)
	r.peerGate = newPreAuthGate(lim.MaxPreAuthConns, lim.MaxPreAuthPerSource)
	r.budget = &connBudget{max: int64(lim.MaxConns)}
	r.refusals = newLogLimiter(refusalLogBurst, refusalLogEvery)
	r.events = newEventLogger(r.log)
	links := make(map[node.NodeID]*peerLink)
	var nodes []session.NodeInfo
	for _, mem := range cfg.Members {
		nodes = append(nodes, session.NodeInfo{ID: uint32(mem.ID), ClientAddr: mem.ClientAddr, HTTPAddr: mem.HTTPAddr})
		if mem.ID != nc.ID {
			links[mem.ID] = r.newLink(mem.ID, mem.PeerAddr)
		}
	}
	r.links.Store(&links)
	r.directory.Store(&nodes)
	r.syncer = newSyncer(r.m, r.post, func(tok node.SyncToken, err error) { r.handler.OnSynced(tok, err) })
	r.env = newEnv(r)
	h, err := buildNode(nc, r.env)
	if err != nil {
		r.cancel()
		return nil, err
	}
	if err := r.acquire(); err != nil {
		r.cancel()
		r.release()
		return nil, err
	}
	r.handler = h
	return r, nil
}

// nodeConfig completes the node's configuration: the cluster, the data
// directory, and a replication factor the cluster can satisfy.
func nodeConfig(cfg *Config) node.Config {
	nc := cfg.nodeConfig()
	switch {
	case nc.Replicas != 0:
	case nc.Join:
		// A joining node's members list only what it knows of a cluster
		// of at least two others and itself.
		nc.Replicas = 3
	default:
		nc.Replicas = min(3, len(nc.Nodes))
	}
	return nc
}

// buildNode constructs the node. node.New fills in its own defaults and
// panics on a configuration that is still invalid; the panic becomes an
// error here, so New reports a bad configuration instead of crashing, and
// this package need not copy the node's defaults to check it first.
func buildNode(nc node.Config, env node.Env) (h *node.Node, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("live: %v", v)
		}
	}()
	return node.New(nc, env), nil
}

// Refused connections are logged at most refusalLogBurst at once and one
// more per refusalLogEvery; the rest are only counted.
const (
	refusalLogBurst = 20
	refusalLogEvery = time.Second
)

// acquire creates and locks the data directory and binds every listener.
func (r *Runtime) acquire() error {
	lock, err := lockDataDir(r.cfg.DataDir)
	if err != nil {
		return err
	}
	r.lock = lock
	if r.trash, err = newTrashFS(r.cfg.DataDir, r.log); err != nil {
		return fmt.Errorf("live: data directory %s: making its trash directory: %w", r.cfg.DataDir, err)
	}
	if r.clientLn, err = net.Listen("tcp", r.cfg.ClientListen); err != nil {
		return fmt.Errorf("live: client listener: %w", err)
	}
	if r.peerLn, err = net.Listen("tcp", r.cfg.PeerListen); err != nil {
		return fmt.Errorf("live: peer listener: %w", err)
	}
	if r.cfg.HTTPListen != "" {
		if r.httpLn, err = net.Listen("tcp", r.cfg.HTTPListen); err != nil {
			return fmt.Errorf("live: HTTP listener: %w", err)
		}
		r.httpSrv = r.newHTTPServer()
	}
	return nil
}

// lockDataDir creates the data directory, checks that this process may
// write in it, and locks it against other processes. Each failure says
// what is wrong: a directory this user cannot write is not one in use.
func lockDataDir(dir string) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("live: creating data directory: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return nil, fmt.Errorf("live: data directory %s is not writable by this process: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	lockPath := filepath.Join(dir, "LOCK")
	lock, err := vfs.Default.Lock(lockPath)
	if err == nil {
		return lock, nil
	}
	// Opening the lock file fails with a path error (permissions, a
	// directory in the way); only the lock itself failing means that
	// another process holds it.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("live: data directory %s: cannot open the lock file: %w", dir, err)
	}
	return nil, fmt.Errorf("live: data directory %s is in use by another process (lock %s): %w", dir, lockPath, err)
}

// release closes whatever acquire opened.
func (r *Runtime) release() {
	for _, ln := range []net.Listener{r.clientLn, r.peerLn, r.httpLn} {
		if ln != nil {
			ln.Close()
		}
	}
	if r.lock != nil {
		r.lock.Close()
	}
}

// ClientAddr is the bound client address.
func (r *Runtime) ClientAddr() string { return r.clientLn.Addr().String() }

// PeerAddr is the bound peer address.
func (r *Runtime) PeerAddr() string { return r.peerLn.Addr().String() }

// HTTPAddr is the bound HTTP address, or "" when there is none.
func (r *Runtime) HTTPAddr() string {
	if r.httpLn == nil {
		return ""
	}
	return r.httpLn.Addr().String()
}

// newSeed draws a seed for the node's generator from the OS.
func newSeed() (uint64, uint64) {
	var b [16]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
}

// newPCG returns a generator seeded from the OS.
func newPCG() *mrand.Rand { return mrand.New(mrand.NewPCG(newSeed())) }

// errHalted is what Run returns after the node halted or panicked.
var errHalted = errors.New("live: the node stopped itself")
