package live

import (
	"log/slog"
	"net"
	"sync"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// post hands an event to the node's goroutine. It waits while the inbox
// is full (which is how a fast sender is slowed down), and drops the
// event once that goroutine has stopped.
func (r *Runtime) post(ev func()) {
	select {
	case r.inbox <- ev:
	case <-r.loopDone:
	}
}

// runLoop is the node's goroutine: the only one that ever calls the
// handler or touches the state the Env methods use. Timers armed with no
// delay (an owner's end of turn, a rebuild's next step) run as soon as
// no input waits, or after maxTurn inputs if inputs keep coming: what
// arrived together is handled together, and nothing waits on a timer
// goroutine to be scheduled.
func (r *Runtime) runLoop() {
	defer close(r.loopDone)
	for {
		// Only this goroutine takes from the inbox, so an input seen
		// waiting is still there for the select.
		if len(r.soon) > 0 && (len(r.inbox) == 0 || r.turn >= maxTurn) {
			if !r.runSoon() {
				return
			}
			continue
		}
		select {
		case <-r.loopStop:
			return
		case ev := <-r.inbox:
			if !r.handle(ev) {
				return
			}
			if len(r.soon) > 0 {
				r.turn++
			}
		}
	}
}

// maxTurn bounds how many inputs the loop takes while timers armed with
// no delay wait.
const maxTurn = 256

// handle runs one event, and reports false once the node has halted.
func (r *Runtime) handle(ev func()) bool {
	r.m.inbox.Set(float64(len(r.inbox)))
	ev()
	if r.membersDirty && !r.halted {
		r.followMembers()
	}
	return !r.halted
}

// runSoon fires the timers armed with no delay so far; those they arm
// wait for the next turn. It reports false once the node has halted.
func (r *Runtime) runSoon() bool {
	due := r.soon
	r.soon, r.turn = nil, 0
	for _, t := range due {
		r.handler.OnTimer(t)
		if r.halted {
			return false
		}
	}
	if r.membersDirty {
		r.followMembers()
	}
	return true
}

// onClientRequest passes a client request to the node, except while
// draining: then the runtime answers "unavailable" itself, which promises
// the client that nothing was done, so it may retry elsewhere or later.
func (r *Runtime) onClientRequest(conn node.ConnID, m wire.Message) {
	if !r.draining.Load() {
		r.traffic.request(m)
		r.handler.OnClient(conn, m)
		return
	}
	for _, reqID := range wire.RequestIDs(m) {
		r.env.Reply(conn, &wire.Reply{ReqID: reqID, Status: wire.StatusUnavailable, Detail: "node is shutting down"})
	}
}

// isPeerTraffic reports whether m is a message only nodes exchange.
func isPeerTraffic(m wire.Message) bool {
	switch m.(type) {
	case *wire.Append, *wire.AppendReply, *wire.Raft, *wire.Ping, *wire.Pong:
		return true
	}
	return false
}

// isServerTraffic reports whether m is a message only a node sends to a
// client.
func isServerTraffic(m wire.Message) bool {
	switch m.(type) {
	case *wire.Reply, *wire.Delivery:
		return true
	}
	return false
}

// connSet is every open connection, so shutdown can close them all and
// the drain can see how much each still has to write. Connections are
// registered raw, as accepted or dialed, and get their frameConn once the
// handshake is through.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]*frameConn
	closed bool
}

// add registers nc; after closeAll it closes nc at once instead.
func (s *connSet) add(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return
	}
	if s.conns == nil {
		s.conns = make(map[net.Conn]*frameConn)
	}
	s.conns[nc] = nil
}

// attach records the frameConn running over nc.
func (s *connSet) attach(nc net.Conn, fc *frameConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[nc]; ok {
		s.conns[nc] = fc
	}
}

func (s *connSet) remove(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, nc)
}

// closeAll closes every connection and every one registered later.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for nc, fc := range s.conns {
		if fc != nil {
			fc.close("shutdown", slog.LevelDebug, nil)
		} else {
			nc.Close()
		}
	}
}

// queued sums the frames waiting to be written on every connection.
func (s *connSet) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, fc := range s.conns {
		if fc != nil {
			n += fc.queued()
		}
	}
	return n
}
