package sim

import "time"

// A consumer's host that dies outright (power lost, a kernel hung) sends
// no close and no reset: its node keeps the subscription until the client
// idle timeout, minutes later, and must not keep handing it messages that
// wait a lease each for no one. Restarted consumers close their
// connections, and those a partition kept the close from only go silent
// for as long as a partition lasts; so two fifths of the generated queue
// scenarios, drawn from a stream of their own so that no other draw
// moves, take one consumer's host away for 4 to 8 s, several leases of
// the longest the workload draws, from a drawn time in the first half of
// the safety phase.

// streamVanish draws a generated scenario's vanished consumer.
const streamVanish = "vanish-consumer"

// drawVanishConsumer adds the fault above to a generated scenario,
// reporting whether it did.
func drawVanishConsumer(sc *Scenario) bool {
	r := newStream(sc.Seed, streamVanish)
	if r.IntN(5) >= 2 {
		return false
	}
	sc.Faults = append(sc.Faults, Fault{
		At:     time.Duration(r.Int64N(int64(sc.Safety) / 2)),
		Kind:   FaultVanishConsumer,
		Hit:    1 + r.IntN(3),
		Length: 4*time.Second + time.Duration(r.Int64N(int64(4*time.Second))),
	})
	return true
}
