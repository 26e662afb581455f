//go:build linux

package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/client"
)

// inflightBound is how long after a cut an owner may still confirm: acks
// its followers sent before the cut may sit in its socket buffers, and
// confirmations it wrote before the cut may still be on their way to
// the client. Anything it confirms later was confirmed while cut off.
const inflightBound = 200 * time.Millisecond

// cutEpisode is one partition of one node during a scenario.
type cutEpisode struct {
	node   int // the node's ID
	kind   linkCut
	owner  bool   // it served the queue when cut
	epoch  uint64 // its replica's epoch when cut
	at     time.Time
	healed time.Time // zero if never healed
}

// partitionRun is everything one run of a scenario observed.
type partitionRun struct {
	nodes      int
	cut        time.Time // the first cut: what the timings are measured from
	episodes   []cutEpisode
	stopped    time.Time // when the publisher stopped starting publishes
	rounds     []statusRound
	pubs       []publishRecord
	deliveries []deliveryRecord
	settled    map[client.MessageID]time.Time
}

// confirmed lists the IDs of the publishes that were confirmed.
func (pr *partitionRun) confirmed() []client.MessageID {
	var out []client.MessageID
	for _, p := range pr.pubs {
		if p.err == nil && !p.done.IsZero() {
			out = append(out, p.id)
		}
	}
	return out
}

// staleConfirmations describes every confirmation a cut-off owner made
// after the in-flight bound and before it was healed, judged two ways:
// by the confirmed index the owner's own /status reported (while the
// test could still reach it), and, when clients could still reach it, by
// the publisher's confirmations that arrived while no other node served
// the queue, so that only the cut-off owner can have made them.
func (pr *partitionRun) staleConfirmations() []string {
	var out []string
	for _, ep := range pr.episodes {
		if !ep.owner {
			continue
		}
		from, until := ep.at.Add(inflightBound), ep.healed
		if until.IsZero() {
			until = pr.stopped
		}
		if msg, _ := commitGrowth(pr.rounds, ep.node, ep.epoch, from, until); msg != "" {
			out = append(out, msg)
		}
		// An isolated node cannot answer a client at all, so only a cut
		// that leaves clients through can be judged by what they saw.
		if ep.kind == cutAll {
			continue
		}
		quiet, ok := othersIdleUntil(pr.rounds, ep.at, until, ep.node, pr.nodes)
		if !ok {
			continue
		}
		for _, p := range pr.pubs {
			if p.err == nil && p.done.After(from) && !p.done.After(quiet) {
				out = append(out, fmt.Sprintf("publish %s confirmed %v after n%d was %s, while no other node served the queue",
					p.id, p.done.Sub(ep.at).Round(time.Millisecond), ep.node, ep.kind))
			}
		}
	}
	return out
}

// duplicateReport counts the redeliveries (deliveries of a message
// already delivered) and describes every delivery that is a duplicate
// beyond them: one of a message never published, or one that came after
// the message's settle was confirmed, which promises it is never
// delivered again.
func (pr *partitionRun) duplicateReport() (redelivered int, bad []string) {
	published := make(map[client.MessageID]bool, len(pr.pubs))
	for _, p := range pr.pubs {
		published[p.id] = true
	}
	seen := make(map[client.MessageID]bool, len(pr.deliveries))
	for _, d := range pr.deliveries {
		if !published[d.id] {
			bad = append(bad, fmt.Sprintf("%s delivered but never published", d.id))
		}
		if at, ok := pr.settled[d.id]; ok && d.at.After(at) {
			bad = append(bad, fmt.Sprintf("%s delivered (attempt %d) %v after the first cut, though its settle was confirmed at %v",
				d.id, d.attempt, d.at.Sub(pr.cut).Round(time.Millisecond), at.Sub(pr.cut).Round(time.Millisecond)))
		}
		if seen[d.id] {
			redelivered++
		}
		seen[d.id] = true
	}
	return redelivered, bad
}

// partitionTimes are one run's timings, from the first cut.
type partitionTimes struct {
	failover       time.Duration // a node serves at an epoch above the cut owner's
	firstConfirm   time.Duration // a publish started after the cut is confirmed
	firstDelivery  time.Duration // a message published after the cut is delivered
	longestGap     time.Duration // between consecutive confirmations, from the last before the cut
	hasFailover    bool
	hasConfirm     bool
	hasDelivery    bool
	confirmedTotal int
}

// times computes the run's timings.
func (pr *partitionRun) times() partitionTimes {
	var pt partitionTimes
	if len(pr.episodes) > 0 {
		first := pr.episodes[0]
		if first.owner {
			if r, _, ok := newOwnerServing(pr.rounds, first.at, first.epoch); ok {
				pt.failover, pt.hasFailover = r.began.Sub(pr.cut), true
			}
		}
	}
	fresh := make(map[client.MessageID]bool)
	var confirms []time.Time
	for _, p := range pr.pubs {
		if p.err != nil || p.done.IsZero() {
			continue
		}
		pt.confirmedTotal++
		confirms = append(confirms, p.done)
		if !p.sent.Before(pr.cut) {
			fresh[p.id] = true
			if d := p.done.Sub(pr.cut); !pt.hasConfirm || d < pt.firstConfirm {
				pt.firstConfirm, pt.hasConfirm = d, true
			}
		}
	}
	for _, d := range pr.deliveries {
		if fresh[d.id] {
			if since := d.at.Sub(pr.cut); !pt.hasDelivery || since < pt.firstDelivery {
				pt.firstDelivery, pt.hasDelivery = since, true
			}
		}
	}
	pt.longestGap = longestGap(confirms, pr.cut)
	return pt
}

// longestGap is the longest time between consecutive confirmations,
// counted from the last one before from (or from itself if none).
func longestGap(confirms []time.Time, from time.Time) time.Duration {
	slices.SortFunc(confirms, func(a, b time.Time) int { return a.Compare(b) })
	prev := from
	for _, c := range confirms {
		if c.Before(from) {
			prev = c
		}
	}
	var gap time.Duration
	for _, c := range confirms {
		if c.After(prev) {
			gap = max(gap, c.Sub(prev))
			prev = c
		}
	}
	return gap
}
