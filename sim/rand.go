package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream names for the simulator's independent random sources. Each
// subsystem draws from its own stream, so adding a draw in one (say, a new
// network fault) never shifts the numbers another (the disk) sees.
const (
	streamNetwork  = "network"
	streamDisk     = "disk"
	streamWorkload = "workload"
	streamFaults   = "faults"
	streamNode     = "node"
	streamClock    = "clock"
	streamScenario = "scenario"
	// streamCheckpoint draws a generated scenario's checkpoint cadence,
	// apart from the scenario stream so that adding it changed no other
	// draw.
	streamCheckpoint = "checkpoint"
	// streamDedup draws a generated scenario's deduplication window.
	streamDedup = "dedup"
	// streamQuota draws a generated scenario's data quota.
	streamQuota = "quota"
	// streamAckLinger draws how long a generated scenario's consumers
	// hold their acks.
	streamAckLinger = "ack-linger"
	// streamExtend draws a generated scenario's share of extended
	// deliveries and, per consumer, which deliveries it extends and for
	// how long, so seeds whose consumers extend nothing run as before.
	streamExtend = "extend"
	// streamOutage draws a generated five-node scenario's long outage.
	streamOutage = "outage"
	// streamDeadLetter draws a generated scenario's dead-letter queue and
	// delivery limits.
	streamDeadLetter = "dead-letter"
	// streamUnsubscribe draws whether a generated scenario's consumers
	// unsubscribe now and then and, per consumer, when and from what.
	streamUnsubscribe = "unsubscribe"
	// streamRest draws how long a generated scenario's owners wait on an
	// idle queue before they rest.
	streamRest = "rest"
	// streamReplicas draws a generated scenario's replica count.
	streamReplicas = "replicas"
	// streamNameErrors draws a generated scenario's rate of EIO on
	// operations on file and directory names. (Its string is the one it
	// was first drawn under; a new one would move every seed's draw.)
	streamNameErrors = "meta-errors"
	// streamAtOwner draws a generated scenario's share of settles and
	// extensions sent to the queue's owner and, per consumer, which go
	// that way.
	streamAtOwner = "ack-at-owner"
)

// newStream returns a PCG generator for (seed, name, ids...). Distinct
// names or ids give unrelated sequences.
func newStream(seed uint64, name string, ids ...uint64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	a := splitmix(seed ^ h.Sum64())
	b := splitmix(a ^ 0x9e3779b97f4a7c15)
	for _, id := range ids {
		a = splitmix(a ^ id)
		b = splitmix(b + id)
	}
	return rand.New(rand.NewPCG(a, b))
}

// splitmix is SplitMix64's finalizer: a cheap bijective mixer that spreads
// nearby seeds far apart.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// chance reports true with probability p.
func chance(r *rand.Rand, p float64) bool { return p > 0 && r.Float64() < p }
