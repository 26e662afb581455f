package node

// A peer whose loop stalls, not one that died, can be confirmed down: on
// a machine where every core is busy, a node with thousands of queues
// answered its pings a few hundred milliseconds late. Its queues then
// fail over, the failovers keep every node busier still, and the next
// stall is confirmed too. Three nodes creating their 8,500th queue on two
// shared cores went that way and kept confirming one another down every
// few seconds for minutes after the load that started it had gone. The
// leader therefore remembers, per peer, how often lately a peer it
// confirmed down answered again with no connection reset in between (its
// process never died), and lets such a peer stay silent longer before it
// verifies it: the damping Lifeguard and phi-accrual detectors apply to
// flapping members. A peer that restarts or is killed still resets its
// connections and is verified at once (detectreset.go); only a silent
// failure of a peer that flapped lately is found later, by at most
// flapSlackMax.

// flapsMax caps the flap count a peer accumulates.
const flapsMax = 5

// flapDecayTicks is how long a peer must not flap for its count to drop
// by one: ten seconds.
const flapDecayTicks = 1000

// flapSlackMax bounds the extra silence a flapping peer is allowed: one
// second.
const flapSlackMax = 100

// FlapSlackMax is the most extra silence the metadata leader allows a
// peer it confirmed down lately while the peer's process ran: how much
// later than DetectionPolicy.Silence such a peer may be confirmed down.
const FlapSlackMax = flapSlackMax * detectTick

// flapSlack is the extra silence, in ticks, a peer that flapped lately is
// allowed before it is verified: one interval after the first flap, then
// doubling with each further one, up to flapSlackMax.
func flapSlack(w *watch, interval uint64) uint64 {
	if w.flaps == 0 {
		return 0
	}
	return min(interval*(1<<w.flaps-1), flapSlackMax)
}

// quietLimit is how long, in ticks, a ping to w may go unanswered before
// the leader verifies w: the eager idle limit or heartbeat detection's
// grace, stretched for a peer that flapped lately.
func (d *detector) quietLimit(w *watch, p DetectionPolicy, interval, grace uint64) uint64 {
	limit := heartbeatVerifyAfter(interval, grace)
	if p.Mode == DetectEager {
		limit = d.idleLimit(w, interval)
	}
	return limit + flapSlack(w, interval)
}
