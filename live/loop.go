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

// postFirst queues ev on the urgent inbox, which the loop empties before
// the other: a peer's control traffic (isControl).
func (r *Runtime) postFirst(ev func()) {
	select {
	case r.urgent <- ev:
	case <-r.loopDone:
	}
}

// offer queues ev if the inbox has room, and reports whether it did. A
// peer's reader offers the queue traffic it reads rather than wait for
// room: waiting, it would read nothing more, and the control traffic
// behind it on the connection (the raft heartbeats, the detector's pings)
// would wait too. A node with thousands of queues, its loop behind on a
// busy machine, then missed pings, was confirmed down, and the failovers
// that followed put it further behind. What is dropped is lost as on the
// network: owners send appends again, and every request is retried.
func (r *Runtime) offer(ev func()) bool {
	select {
	case r.inbox <- ev:
		return true
	default:
		return false
	}
}

// isControl reports whether m is peer control traffic: the metadata
// group's raft messages and the failure detector's pings and probes. It
// travels ahead of queue traffic, both in the sender's queue and in the
// receiver's inbox, and is never dropped for want of room.
func isControl(m wire.Message) bool {
	switch m.(type) {
	case *wire.Raft, *wire.Ping, *wire.Pong, *wire.Probe, *wire.ProbeAck, *wire.MetaLostLog, *wire.MetaCommitted:
		return true
	}
	return false
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
		// Only this goroutine takes from the inboxes, so an input seen
		// waiting is still there for the select. The urgent inbox goes
		// first (postFirst).
		if len(r.soon) > 0 && (len(r.inbox)+len(r.urgent) == 0 || r.turn >= maxTurn) {
			if !r.runSoon() {
				return
			}
			continue
		}
		ev, ok := r.next()
		if !ok || !r.handle(ev) {
			return
		}
		if len(r.soon) > 0 {
			r.turn++
		}
	}
}

// next waits for the loop's next input, from the urgent inbox if it holds
// one; ok is false once the loop is told to stop.
func (r *Runtime) next() (ev func(), ok bool) {
	select {
	case ev = <-r.urgent:
		return ev, true
	default:
	}
	select {
	case <-r.loopStop:
		return nil, false
	case ev = <-r.urgent:
	case ev = <-r.inbox:
	}
	return ev, true
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
