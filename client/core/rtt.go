package core

import (
	"fmt"
	"time"
)

// Adaptive hedge delay. A fixed delay has to sit above the slowest
// healthy confirmation any deployment may see, so on a fast network it
// leaves a client waiting on a silent owner far longer than the cluster
// takes to fail over (eager detection activates a new owner in well under
// 100 ms on loopback). So by default the client learns how long its own
// publishes take to be confirmed and hedges once an attempt has waited
// well past that: the smoothed confirmation time plus four times its
// smoothed deviation, as TCP's retransmission timer (RFC 6298), but never
// less than twice the smoothed time, held between HedgeFloor and the
// ceiling (Config.HedgeAfter's default). The deviation of very steady
// confirmations tends to zero, and a delay of barely more than the
// typical confirmation would hedge every other healthy publish; TCP
// guards the same way with a clock-granularity term and a one-second
// minimum, which would be far too long here.
//
// Only publishes answered OK on their first and only attempt are
// samples. A publish that was retried, redirected or hedged ran through
// trouble, and which of its attempts the reply answers says nothing about
// a healthy owner (Karn's rule); refusals are answered without a sync or a
// replica's ack, so they would teach the client a round trip far shorter
// than a confirmation and make it hedge healthy publishes.

// HedgeFloor is the shortest adaptive hedge delay. Below it a hedge would
// race ordinary scheduling noise (a garbage collection, a slow fsync)
// rather than a silent owner, and the failover it is waiting for takes
// longer than this anyway.
const HedgeFloor = 50 * time.Millisecond

// rttEstimator smooths the confirmation times of healthy publishes.
type rttEstimator struct {
	srtt    time.Duration // smoothed confirmation time
	rttvar  time.Duration // smoothed mean deviation from srtt
	samples uint64
}

// observe folds one confirmation time into the estimate, with the gains
// RFC 6298 gives (1/8 for the mean, 1/4 for the deviation).
func (e *rttEstimator) observe(sample time.Duration) {
	if sample < 0 {
		panic(fmt.Sprintf("core: negative confirmation time %v", sample))
	}
	if e.samples == 0 {
		e.srtt, e.rttvar = sample, sample/2
	} else {
		dev := e.srtt - sample
		if dev < 0 {
			dev = -dev
		}
		e.rttvar += (dev - e.rttvar) / 4
		e.srtt += (sample - e.srtt) / 8
	}
	e.samples++
}

// delay returns the hedge delay the estimate calls for, held within
// [floor, ceiling]; ceiling itself until there is a sample, since a
// client that has seen no confirmation knows nothing of its network.
func (e *rttEstimator) delay(floor, ceiling time.Duration) time.Duration {
	if floor <= 0 || ceiling < floor {
		panic(fmt.Sprintf("core: hedge delay bounds [%v, %v] are empty", floor, ceiling))
	}
	if e.samples == 0 {
		return ceiling
	}
	return min(max(e.srtt+max(e.srtt, 4*e.rttvar), floor), ceiling)
}

// hedgeDelay returns how long the attempt launched now waits before op
// may hedge: Config.HedgeAfter when it was set, the adaptive delay when
// it was left zero.
func (c *Client) hedgeDelay() time.Duration {
	if !c.hedgeAdaptive {
		return c.hedgeAfter
	}
	return c.rtt.delay(HedgeFloor, c.hedgeAfter)
}

// hedgeDelayOf returns how long the attempt of op launched now waits
// before op may hedge. An adaptive delay doubles with each hedge op has
// sent, up to the ceiling: the first hedge leaves a silent owner quickly,
// but an owner that stays silent for seconds (down, with its node's
// queues not yet failed over) is not worth a hedge every 50 ms from every
// operation waiting on it; past the first few, hedges go out no more
// often than with the fixed default.
func (c *Client) hedgeDelayOf(op *operation) time.Duration {
	d := c.hedgeDelay()
	if c.hedgeAdaptive {
		d = min(d<<min(op.hedged, 3), c.hedgeAfter)
	}
	return d
}

// HedgeDelay returns the delay after which the first attempt of an
// operation sent now would be hedged, or zero when hedging is off.
func (c *Client) HedgeDelay() time.Duration {
	if c.hedgeAfter == 0 {
		return 0
	}
	return c.hedgeDelay()
}

// observeConfirmation takes a publish's confirmation time as a sample if
// its first attempt alone carried it through (see the comment above).
func (c *Client) observeConfirmation(now time.Time, op *operation, f flight) {
	if op.kind != OpPublish || op.attempts != 1 {
		return
	}
	c.rtt.observe(now.Sub(f.sent))
}
