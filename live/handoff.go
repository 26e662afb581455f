package live

import (
	"log/slog"
	"time"
)

// ownerDrainer is a handler that can hand the queues it owns to other
// replicas before a planned shutdown; *node.Node is one.
type ownerDrainer interface {
	// DrainOwned starts handoffs and returns how many are under way.
	DrainOwned(drainFor time.Duration) int
	Owned() int
	// HandedOff counts the queues the drain handed over.
	HandedOff() int
}

// Shutdown handoff pacing: how often to look at what the node still
// owns, and the longest a handoff waits for consumers to settle (the
// node's own default).
const (
	handoffPoll          = 50 * time.Millisecond
	handoffConsumerDrain = 5 * time.Second
)

// handOff is the first step of a shutdown: it hands every queue this
// node owns to another replica and waits, at most ShutdownHandoff, until
// it owns none. The loop and the listeners keep running meanwhile, so
// clients are served, and publishes parked by a handoff are redirected
// to the next owner, instead of finding the owner gone and waiting for
// the cluster to notice. A queue still owned when the wait ends fails
// over as before once the node is down.
func (r *Runtime) handOff() (ownsNone bool) {
	d, ok := r.handler.(ownerDrainer)
	if !ok || r.cfg.ShutdownHandoff <= 0 || len(r.cfg.Members) == 1 {
		return false // (a single node has nobody to hand its queues to)
	}
	start := time.Now()
	before, owned, why := r.awaitHandedOff(d, start.Add(r.cfg.ShutdownHandoff))
	if why == "stopped" {
		return false
	}
	handed, _ := onLoop(r, d.HandedOff)
	attrs := []any{slog.Int("handed_off", handed), slog.Int("owned_at_start", before), slog.Int("remaining", owned), slog.Duration("took", time.Since(start))}
	if owned > 0 {
		r.log.Warn("shutdown handoff ended early; the queues left fail over once the node is down",
			append(attrs, slog.String("why", why))...)
		return false
	}
	r.log.Info("handed off owned queues", attrs...)
	return true
}

// awaitHandedOff starts the handoffs and polls until the node owns no
// queue, the deadline passes, no handoff is under way and none can
// start, too few peers are connected for the metadata to name a next
// owner, or the node stopped; why says which ended it (empty when the
// node owns nothing). It returns how many queues the node owned before
// and still owns.
func (r *Runtime) awaitHandedOff(d ownerDrainer, deadline time.Time) (before, owned int, why string) {
	before, ok := onLoop(r, d.Owned)
	owned = before
	for ok && owned > 0 {
		if time.Now().After(deadline) {
			return before, owned, "the bound (shutdown_handoff) passed"
		}
		if !r.quorumConnected() {
			return before, owned, "too few peers are connected to name a next owner"
		}
		// Half the time left goes to consumers at most, leaving the rest
		// for in-flight publishes and the next owner's recovery (and the
		// node reads zero as its default, so at least a millisecond).
		// The node paces the handoffs itself; asking on every poll also
		// starts the handoff of a queue whose first attempt gave up (its
		// target went down) or that this node came to own meanwhile.
		drainFor := max(min(handoffConsumerDrain, time.Until(deadline)/2), time.Millisecond)
		var running int
		owned, ok = onLoop(r, func() int {
			running = d.DrainOwned(drainFor)
			return d.Owned()
		})
		switch {
		case !ok:
			return before, owned, "stopped"
		case owned == 0:
			return before, 0, ""
		case running == 0:
			// No handoff is under way and none could start: the queues
			// left have no replica to go to.
			return before, owned, "no other replica can take the queues left"
		}
		select {
		case <-r.dead:
			return before, owned, "stopped"
		case <-time.After(handoffPoll):
		}
	}
	if !ok {
		return before, owned, "stopped"
	}
	return before, owned, ""
}

// quorumConnected reports whether this node and the peers connected to
// it are a majority of the cluster. With fewer, the metadata cannot
// commit a next owner, and waiting would only delay the shutdown.
func (r *Runtime) quorumConnected() bool {
	up := 1
	for _, p := range r.board.snapshot().Peers {
		if p.Connected {
			up++
		}
	}
	return 2*up > len(r.cfg.Members)
}

// onLoop runs fn on the node's goroutine and returns its result; ok is
// false when that goroutine stopped first.
func onLoop[T any](r *Runtime, fn func() T) (v T, ok bool) {
	got := make(chan T, 1)
	r.post(func() { got <- fn() })
	select {
	case v = <-got:
		return v, true
	case <-r.loopDone:
		return v, false
	}
}
