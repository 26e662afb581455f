// Package netsim models the network between simulated processes: per-link
// latency with a tail, loss, duplication, reordering, clogged links,
// latency spikes and partitions (symmetric, one-way, isolate-one). It only
// decides when, and whether, each message arrives; the simulator moves the
// bytes. Everything is a pure function of the calls made and the seeded
// generator it is given.
package netsim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Addr names a process on the network: nodes and clients share the space.
type Addr uint32

// Latency is a distribution of durations with a tail: most draws are
// uniform in [Min, Max], and a TailChance fraction are uniform in
// [Max, TailMax].
type Latency struct {
	Min, Max   time.Duration
	TailChance float64
	TailMax    time.Duration
}

// Draw returns one duration.
func (l Latency) Draw(r *rand.Rand) time.Duration {
	lo, hi := l.Min, l.Max
	if l.TailChance > 0 && r.Float64() < l.TailChance && l.TailMax > l.Max {
		lo, hi = l.Max, l.TailMax
	}
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// String renders the distribution compactly for swarm summaries.
func (l Latency) String() string {
	return fmt.Sprintf("%v-%v tail %.3f..%v", l.Min, l.Max, l.TailChance, l.TailMax)
}

// LinkProfile is the behaviour of one direction of one link.
type LinkProfile struct {
	Latency Latency
	// BytesPerSecond adds size/rate to each message's delay; 0 means
	// unlimited.
	BytesPerSecond int64
	// Loss, Duplicate and Reorder are per-message chances. A reordered
	// message ignores the link's first-in first-out order.
	Loss, Duplicate, Reorder float64
}

type linkKey struct{ from, to Addr }

// link is the state of one direction between two processes.
type link struct {
	profile     LinkProfile
	lastArrival time.Duration // keeps the link first-in first-out
	blocked     int           // partitions covering this link; >0: messages vanish
	clogUntil   time.Duration // nothing arrives before this
	spike       time.Duration // extra latency while spikeUntil is ahead
	spikeUntil  time.Duration
}

// Stats counts what the network did.
type Stats struct {
	Sent, Delivered, Dropped, Blocked, Duplicated, Reordered int
}

// Network is the set of links. It is not safe for concurrent use.
type Network struct {
	rng      *rand.Rand
	defaults LinkProfile
	links    map[linkKey]*link
	order    []*link // links in creation order, for whole-network changes
	stats    Stats
}

// New returns a network whose links start with profile defaults.
func New(rng *rand.Rand, defaults LinkProfile) *Network {
	return &Network{rng: rng, defaults: defaults, links: make(map[linkKey]*link)}
}

func (n *Network) link(from, to Addr) *link {
	k := linkKey{from, to}
	l, ok := n.links[k]
	if !ok {
		l = &link{profile: n.defaults}
		n.links[k] = l
		n.order = append(n.order, l)
	}
	return l
}

// SetProfile changes one direction of a link.
func (n *Network) SetProfile(from, to Addr, p LinkProfile) { n.link(from, to).profile = p }

// Route decides the fate of a message of size bytes sent at now: the
// arrival times of its copies (none if it is lost or blocked, two if it is
// duplicated).
func (n *Network) Route(now time.Duration, from, to Addr, size int) []time.Duration {
	n.stats.Sent++
	l := n.link(from, to)
	if l.blocked > 0 {
		n.stats.Blocked++
		return nil
	}
	p := l.profile
	if p.Loss > 0 && n.rng.Float64() < p.Loss {
		n.stats.Dropped++
		return nil
	}
	copies := 1
	if p.Duplicate > 0 && n.rng.Float64() < p.Duplicate {
		copies = 2
		n.stats.Duplicated++
	}
	out := make([]time.Duration, 0, copies)
	for range copies {
		out = append(out, n.arrival(now, l, size))
	}
	n.stats.Delivered += copies
	return out
}

func (n *Network) arrival(now time.Duration, l *link, size int) time.Duration {
	p := l.profile
	at := now + p.Latency.Draw(n.rng)
	if p.BytesPerSecond > 0 {
		at += time.Duration(int64(size) * int64(time.Second) / p.BytesPerSecond)
	}
	if now < l.spikeUntil {
		at += l.spike
	}
	at = max(at, l.clogUntil)
	if p.Reorder > 0 && n.rng.Float64() < p.Reorder {
		n.stats.Reordered++
		return at
	}
	at = max(at, l.lastArrival)
	l.lastArrival = at
	return at
}

// RoundTrip draws the time for a reset to travel back from to to from:
// how long a sender takes to learn its peer is gone. It ignores loss.
func (n *Network) RoundTrip(from, to Addr) time.Duration {
	return n.link(from, to).profile.Latency.Draw(n.rng) + n.link(to, from).profile.Latency.Draw(n.rng)
}

// Block cuts the direction from→to: messages vanish without a trace.
// Blocks nest: overlapping partitions each add one, and the link carries
// messages again only when every one of them has ended.
func (n *Network) Block(from, to Addr) { n.link(from, to).blocked++ }

// Unblock ends one block of from→to.
func (n *Network) Unblock(from, to Addr) {
	l := n.link(from, to)
	if l.blocked > 0 {
		l.blocked--
	}
}

// Blocked reports whether from→to is cut.
func (n *Network) Blocked(from, to Addr) bool {
	l, ok := n.links[linkKey{from, to}]
	return ok && l.blocked > 0
}

// Partition cuts every link between the two groups, in both directions.
func (n *Network) Partition(a, b []Addr) {
	for _, x := range a {
		for _, y := range b {
			n.Block(x, y)
			n.Block(y, x)
		}
	}
}

// Isolate cuts x from every address in others, both ways.
func (n *Network) Isolate(x Addr, others []Addr) {
	for _, y := range others {
		if y != x {
			n.Block(x, y)
			n.Block(y, x)
		}
	}
}

// Clog holds every message on from→to until the given time; they then
// arrive together, in order.
func (n *Network) Clog(from, to Addr, until time.Duration) {
	l := n.link(from, to)
	l.clogUntil = max(l.clogUntil, until)
}

// Spike adds extra latency to from→to for messages sent before until.
func (n *Network) Spike(from, to Addr, extra, until time.Duration) {
	l := n.link(from, to)
	l.spike, l.spikeUntil = extra, until
}

// Heal removes every partition, clog and spike. Messages already in
// flight keep their arrival times.
func (n *Network) Heal(now time.Duration) {
	for _, l := range n.order {
		l.blocked = 0
		l.clogUntil = min(l.clogUntil, now)
		l.spikeUntil = min(l.spikeUntil, now)
	}
}

// Calm resets every link to a quiet profile (no loss, duplication or
// reordering), for the liveness phase.
func (n *Network) Calm(p LinkProfile) {
	n.defaults = p
	for _, l := range n.order {
		l.profile = p
	}
}

// Stats reports what the network did so far.
func (n *Network) Stats() Stats { return n.stats }
