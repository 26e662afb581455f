package live

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// env is the production node.Env. Every method runs on the node's
// goroutine and returns at once; slow work goes to other goroutines and
// comes back through the inbox.
type env struct {
	r   *Runtime
	rng *rand.Rand
	// boot is when the environment was made; it carries Go's monotonic
	// clock reading, the origin of Monotonic.
	boot time.Time

	notConnected prometheus.Counter
	notMember    prometheus.Counter
	clientGone   prometheus.Counter
}

var _ node.Env = (*env)(nil)

func newEnv(r *Runtime) *env {
	return &env{
		r: r, rng: newPCG(), boot: time.Now(),
		notConnected: r.m.dropped.WithLabelValues(sidePeer, "not-connected"),
		notMember:    r.m.dropped.WithLabelValues(sidePeer, "not-member"),
		clientGone:   r.m.dropped.WithLabelValues(sideClient, "gone"),
	}
}

// Now implements node.Env with the OS clock.
func (e *env) Now() time.Time { return time.Now() }

// Monotonic implements node.Env with Go's monotonic clock reading, which
// keeps counting while the process is stopped.
func (e *env) Monotonic() time.Duration { return time.Since(e.boot) }

// After implements node.Env. Go timers run on the monotonic clock, so a
// wall-clock jump does not move them.
func (e *env) After(d time.Duration, t node.Timer) {
	r := e.r
	if d <= 0 {
		r.soon = append(r.soon, t) // the node's goroutine fires it (runLoop)
		return
	}
	time.AfterFunc(d, func() { r.post(func() { r.handler.OnTimer(t) }) })
}

// Send implements node.Env. The message is encoded now, as in the
// simulator, so the node may reuse its memory at once. With no connection
// to the peer the message is dropped: the node resends what matters. So
// is a message to a node this runtime keeps no link with: a member the
// runtime has not linked yet, or one that left, where a node whose
// metadata lags may still send.
func (e *env) Send(to node.NodeID, m wire.Message) {
	if e.r.halted {
		return
	}
	l := e.r.link(to)
	if l == nil {
		e.notMember.Inc()
		return
	}
	fc := l.cur.Load()
	if fc == nil {
		e.notConnected.Inc()
		return
	}
	if isControl(m) {
		fc.enqueueFirst(wire.Encode(session.FrameBuffer(), m))
		return
	}
	fc.enqueue(wire.Encode(session.FrameBuffer(), m))
}

// Reply implements node.Env. A reply to a connection that has closed is
// dropped: the client already counts the request as ambiguous.
func (e *env) Reply(conn node.ConnID, m wire.Message) {
	if e.r.halted {
		return
	}
	fc := e.r.clients[conn]
	if fc == nil {
		e.clientGone.Inc()
		return
	}
	e.r.traffic.reply(m)
	fc.enqueue(wire.Encode(session.FrameBuffer(), m))
}

// FS implements node.Env: the OS file system, whose removals under
// Config.DataDir (an absolute path, where the node works) finish off the
// loop (trash.go).
func (e *env) FS() vfs.FS {
	if e.r.trash == nil {
		return vfs.Default
	}
	return e.r.trash
}

// Sync implements node.Env by handing f to the sync workers.
func (e *env) Sync(f vfs.File, tok node.SyncToken) { e.r.syncer.submit(f, tok) }

// Rand implements node.Env: a PCG seeded from the OS at startup.
func (e *env) Rand() *rand.Rand { return e.rng }

// Boundary implements node.Env. Boundaries are where the simulator
// crashes processes; in production nothing happens there.
func (e *env) Boundary(string) {}

// Emit implements node.Env: the event is logged at debug level, counted,
// and folded into the status page.
func (e *env) Emit(ev event.Event) {
	e.r.m.events.WithLabelValues(string(ev.Name)).Inc()
	if ev.Name == event.MetaMembership {
		e.r.membersDirty = true // the links follow once the handler returns
	}
	now := time.Now()
	e.r.board.apply(now, ev)
	e.r.events.emit(now, ev)
}

// Halt implements node.Env: the process exits with status 1 and restarts
// from what its disk made durable. If the configured Exit returns (only
// in tests), the node's goroutine stops after the current handler and
// nothing it does from here on leaves the process.
func (e *env) Halt(reason string) {
	e.r.log.Error("node halted", slog.String("reason", reason))
	e.r.halted = true
	e.r.die(1, fmt.Errorf("%w: halt: %s", errHalted, reason))
}
