package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"
)

// Run serves until ctx ends, then hands the queues the node owns to
// other replicas (for up to Config.ShutdownHandoff, still serving) and
// drains: it stops accepting connections, refuses new client requests
// with "unavailable", lets in-flight syncs and replies finish for up to
// Config.DrainTimeout, closes everything and returns nil. It returns an error if the node halted or a goroutine
// panicked (in production the process has exited by then). Run may be
// called once.
func (r *Runtime) Run(ctx context.Context) error {
	r.post(r.handler.Start)
	var wg conc.WaitGroup
	// Dialers start before the loop, which may add links of its own
	// (followMembers); startDialer starts each link's dialer once.
	for _, l := range r.dialedLinks() {
		r.startDialer(l)
	}
	r.spawn(&wg, "node loop", r.runLoop)
	for i := range r.cfg.SyncWorkers {
		r.spawn(&wg, fmt.Sprintf("sync worker %d", i), r.syncer.work)
	}
	r.spawn(&wg, "client listener", func() { r.acceptLoop(r.clientLn, sideClient, r.serveClient) })
	r.spawn(&wg, "peer listener", func() { r.acceptLoop(r.peerLn, sidePeer, r.serveIncomingPeer) })
	r.spawn(&wg, "member watch", r.watchMembers)
	r.spawn(&wg, "trash", func() { r.trash.empty(r.ctx.Done()) })
	if r.httpSrv != nil {
		r.spawn(&wg, "http server", r.serveHTTP)
	}
	r.log.Info("node serving", slog.String("client", r.ClientAddr()), slog.String("peer", r.PeerAddr()),
		slog.String("http", r.HTTPAddr()), slog.String("data", r.cfg.DataDir))
	select {
	case <-ctx.Done():
		ownsNone := r.handOff()
		r.log.Info("draining")
		r.stopAccepting()
		r.awaitQuiet(ownsNone)
	case <-r.dead:
		r.stopAccepting()
	}
	r.shutdown()
	wg.Wait()
	r.dialers.Wait()
	r.conns.Wait()
	r.lock.Close()
	r.log.Info("node stopped")
	return r.deathErr
}

// spawn runs fn on a goroutine of wg. A panic there is fatal to the
// process: a node with a dead reader, writer or loop would half serve.
func (r *Runtime) spawn(wg *conc.WaitGroup, name string, fn func()) {
	wg.Go(func() {
		if rec := panics.Try(fn); rec != nil {
			r.log.Error("panic: stopping the process", slog.String("goroutine", name), slog.String("panic", rec.String()))
			r.die(2, fmt.Errorf("%w: panic in %s: %v", errHalted, name, rec.Value))
		}
	})
}

// die ends the process with code. If Exit returns (in tests), the runtime
// stops serving instead.
func (r *Runtime) die(code int, err error) {
	r.cfg.Exit(code)
	r.deadOnce.Do(func() {
		r.deathErr = err
		close(r.dead)
	})
}

// stopAccepting closes the listeners and starts refusing client
// requests. Established connections keep working: replication between
// peers is what confirms the requests still in flight.
func (r *Runtime) stopAccepting() {
	r.draining.Store(true)
	r.board.setDraining()
	r.clientLn.Close()
	r.peerLn.Close()
}

// Drain pacing: how often to look, and how many quiet looks in a row
// count as finished.
const (
	drainPoll  = 20 * time.Millisecond
	drainQuiet = 5
)

// awaitQuiet waits, at most DrainTimeout, until no fsync is pending or
// running and no frame waits to be written, several polls in a row. A
// node that owns no queue (ownsNone: it handed them all off) waits only
// for its frames: it confirms nothing to any client, and as a follower
// under steady traffic its syncs never pause, so waiting for them would
// last the whole timeout; stopping it mid-sync is what a crash does, which
// its queues' owners ride through.
func (r *Runtime) awaitQuiet(ownsNone bool) {
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	quiet := 0
	for quiet < drainQuiet {
		if time.Now().After(deadline) {
			r.log.Warn("drain timed out; closing with work in flight", slog.Duration("timeout", r.cfg.DrainTimeout))
			return
		}
		select {
		case <-r.dead:
			return
		case <-time.After(drainPoll):
		}
		if (ownsNone || r.syncer.idle()) && r.open.queued() == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// shutdown stops every goroutine: dialers and handshakes (by the
// context), connections (by closing them), the node's goroutine, the
// sync workers and the HTTP server.
func (r *Runtime) shutdown() {
	r.cancel()
	r.open.closeAll()
	close(r.loopStop)
	<-r.loopDone
	r.syncer.stop()
	if r.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.httpSrv.Shutdown(ctx)
	}
}

// budgetSpent is the error for a connection refused because the node
// holds as many sockets as its descriptor reserve allows.
func (r *Runtime) budgetSpent() error {
	return &limitError{limit: "connections", detail: fmt.Sprintf(
		"the node holds %d sockets, its limit (Limits.MaxConns), keeping descriptors for its own files", r.budget.inUse())}
}

func (r *Runtime) serveHTTP() {
	ln := &limitListener{Listener: r.httpLn, r: r, slots: make(chan struct{}, r.cfg.Limits.MaxHTTPConns)}
	var err error
	if r.httpSrv.TLSConfig != nil {
		err = r.httpSrv.ServeTLS(ln, "", "")
	} else {
		err = r.httpSrv.Serve(ln)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		r.log.Error("HTTP server failed", slog.String("err", err.Error()))
	}
}

// acceptLoop accepts connections until ln closes, serving each on its own
// goroutine.
func (r *Runtime) acceptLoop(ln net.Listener, side string, serve func(net.Conn)) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Typically out of file descriptors: wait rather than spin.
			r.log.Warn("accept failed", slog.String("side", side), slog.String("err", err.Error()))
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if !r.budget.take() {
			r.refuse(nc, side, "admission", r.budgetSpent())
			continue
		}
		setNoDelay(nc)
		r.open.add(nc)
		r.spawn(&r.conns, side+" connection", func() {
			defer r.budget.give()
			defer r.open.remove(nc)
			defer nc.Close()
			serve(nc)
		})
	}
}

// setNoDelay turns off Nagle's algorithm: frames are written whole and
// flushed in batches already, so waiting for more only adds latency.
func setNoDelay(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}
