package live

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// preAuthGate bounds the connections of one port that have not yet
// authenticated: in all, and from any one source address. Strangers get
// a few slots and a short handshake timeout, never the memory or the
// descriptors the authenticated connections need.
type preAuthGate struct {
	maxTotal     int
	maxPerSource int

	mu       sync.Mutex
	total    int
	bySource map[string]int
}

func newPreAuthGate(maxTotal, maxPerSource int) *preAuthGate {
	return &preAuthGate{maxTotal: maxTotal, maxPerSource: maxPerSource, bySource: make(map[string]int)}
}

// enter takes a slot for a connection from source, or says which limit
// it hit. A nil error must be paired with leave.
func (g *preAuthGate) enter(source string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total >= g.maxTotal {
		return &limitError{limit: "preauth-port", detail: fmt.Sprintf("%d connections are already authenticating on this port", g.total)}
	}
	if g.bySource[source] >= g.maxPerSource {
		return &limitError{limit: "preauth-source", detail: fmt.Sprintf("%d connections from %s are already authenticating", g.bySource[source], source)}
	}
	g.total++
	g.bySource[source]++
	return nil
}

// leave gives back the slot enter took for source.
func (g *preAuthGate) leave(source string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.bySource[source]--; g.bySource[source] <= 0 {
		delete(g.bySource, source)
	}
}

// count reports the connections authenticating now.
func (g *preAuthGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// limitError is a connection turned away because a bound was reached.
// limit names the bound for metrics and logs.
type limitError struct {
	limit  string
	detail string
}

func (e *limitError) Error() string { return e.detail }

// sourceOf is the address a connection's limits are counted against: its
// IP, without the port, which each new connection changes.
func sourceOf(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// connBudget bounds every socket the runtime holds at once (accepted,
// dialed and HTTP, authenticated or not), so that however many
// connections arrive, the process keeps descriptors for its own files: a
// flood may be refused, but it never makes a durable write fail.
type connBudget struct {
	max  int64
	used atomic.Int64
}

// take reserves one socket, or reports false when the budget is spent.
func (b *connBudget) take() bool {
	if b.used.Add(1) > b.max {
		b.used.Add(-1)
		return false
	}
	return true
}

// give returns a socket take reserved.
func (b *connBudget) give() { b.used.Add(-1) }

// inUse reports the sockets reserved now.
func (b *connBudget) inUse() int64 { return b.used.Load() }
