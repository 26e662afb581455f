package props

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// Checkpoint progress. Checkpoints bound a queue's disk and its replicas'
// restart and failover cost, but no safety checker notices if they stop:
// a queue that never certifies a cut keeps every record and stays correct.
// This checker holds the owner to its cadence instead. An owner starts a
// certification once the records confirmed since the last cut reach the
// queue's record threshold, scaled by a jitter of at most 1.1; the
// attempt either ends in a certificate or is given up after
// its give-up time, and the next attempt starts on the owner's next tick.
// So every record the owner of the final epoch confirmed more than
// ckptProgressBound before the end of a run that reached its calm phase
// lies at most ceil(1.1 × threshold) records past the newest certified
// cut.

// ckptProgressMargin covers a certification's own work once nothing
// stands in its way: a checkpoint built in steps on every replica, a
// receipt from each, and the certificate's round through the metadata.
const ckptProgressMargin = time.Second

// ckptProgressBound is how long before the end of a run a confirmed
// record must have been for the checker to require a cut near it: an
// attempt that began just before may wait out its give-up time, and its
// successor a resend period and what a replacement takes to settle (a
// replica the metadata still counts down) before it completes.
func ckptProgressBound(lim progressLimits) time.Duration {
	return lim.certifyGiveUp + lim.certifyResend + lim.settle + ckptProgressMargin
}

// commitSeen is one owner's commit index as it advanced.
type commitSeen struct {
	at    time.Duration
	node  node.NodeID
	epoch uint64
	index uint64
}

// ckptProgress collects what its check judges: every
// owner's commits and the newest cut certified per queue.
type ckptProgress struct {
	commits   map[string][]commitSeen
	certified map[string]uint64
}

// observe keeps the events the checker reads.
func (p *ckptProgress) observe(now time.Duration, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.QueueCommit:
		if p.commits == nil {
			p.commits = make(map[string][]commitSeen)
		}
		p.commits[e.Queue()] = append(p.commits[e.Queue()], commitSeen{now, id, e.Epoch(), e.Index()})
	case event.CheckpointCertified:
		if p.certified == nil {
			p.certified = make(map[string]uint64)
		}
		p.certified[e.Queue()] = max(p.certified[e.Queue()], e.Index())
	}
}

// check judges the run that ended at end. Runs without checkpoints, or
// that never calmed, are not judged.
func (p *ckptProgress) check(sc sim.Scenario, lim progressLimits, live bool, end time.Duration) []sim.Violation {
	if sc.Checkpoint.Records <= 0 || !live {
		return nil
	}
	bound := ckptProgressBound(lim)
	slack := uint64(math.Ceil(1.1 * float64(sc.Checkpoint.Records)))
	var out []sim.Violation
	for _, q := range slices.Sorted(maps.Keys(p.commits)) {
		seen := p.commits[q]
		final := slices.MaxFunc(seen, func(a, b commitSeen) int { return cmp.Compare(a.epoch, b.epoch) }).epoch
		var due commitSeen
		for _, c := range seen {
			if c.epoch == final && c.at <= end-bound && c.index > due.index {
				due = c
			}
		}
		if cut := p.certified[q]; due.index > cut+slack {
			out = append(out, sim.Violation{Kind: sim.Liveness, Checker: "checkpoint-progress",
				Detail: fmt.Sprintf("queue %s: %s, owner in epoch %d, confirmed through %d at %v, yet the newest certified cut at the end (%v) is %d, more than %d records behind",
					q, due.node, due.epoch, due.index, due.at, end, cut, slack)})
		}
	}
	return out
}
