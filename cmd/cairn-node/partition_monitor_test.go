//go:build linux

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairnmq/cairn/live/status"
)

// monitorPeriod is how often the monitor samples every node's status,
// and monitorWait how long one sample waits for a node: a node that has
// not answered by then (isolated, say) is left out of that round, so it
// does not slow the sampling of the others.
const (
	monitorPeriod = 25 * time.Millisecond
	monitorWait   = 80 * time.Millisecond
)

// nodeView is what one node's /status said in one round.
type nodeView struct {
	q      status.Queue
	listed bool // the node lists the queue
}

// serving reports whether the node said it serves the queue's clients.
func (v nodeView) serving() bool { return v.listed && v.q.Active }

// mayConfirm reports whether the node may have confirmed publishes to the
// queue: it serves, or it is a candidate, which includes a recovered
// owner that admits and confirms publishes while it outwaits the old
// owner's quorum and says it serves only once that is over. (A CI run at
// 41bb67f: the new owner confirmed publishes 348 ms after the cut while
// its /status said "candidate" until 379 ms, and the check below took
// them for the cut-off owner's.)
func (v nodeView) mayConfirm() bool { return v.listed && (v.q.Active || v.q.Role == "candidate") }

// statusRound is one sampling of every node, begun at began. views
// holds the nodes that answered within monitorWait, by ID.
type statusRound struct {
	began time.Time
	ended time.Time // when the last answer came in, or the round gave up
	views map[int]nodeView
}

// servingNodes lists, in ID order, the nodes that said they serve.
func (r statusRound) servingNodes() []int {
	var out []int
	for id, v := range r.views {
		if v.serving() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// statusMonitor samples every node's view of one queue until stopped.
type statusMonitor struct {
	pc     *procCluster
	queue  string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	rounds []statusRound
	wake   chan struct{}
}

// startMonitor starts sampling pc's nodes' views of queue.
func startMonitor(ctx context.Context, pc *procCluster, queue string) *statusMonitor {
	mctx, cancel := context.WithCancel(ctx)
	m := &statusMonitor{pc: pc, queue: queue, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go m.run(mctx)
	return m
}

func (m *statusMonitor) run(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(monitorPeriod)
	defer tick.Stop()
	for ctx.Err() == nil {
		r := m.sample(ctx)
		m.mu.Lock()
		m.rounds = append(m.rounds, r)
		m.mu.Unlock()
		select {
		case m.wake <- struct{}{}:
		default:
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// sample asks every node at once and keeps the answers that came in
// time.
func (m *statusMonitor) sample(ctx context.Context) statusRound {
	r := statusRound{began: time.Now(), views: make(map[int]nodeView)}
	sctx, cancel := context.WithTimeout(ctx, monitorWait)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, nd := range m.pc.nodes {
		wg.Go(func() {
			s, err := status.FetchAuth(sctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
			if err != nil {
				return
			}
			var v nodeView
			for _, q := range s.Queues {
				if q.Name == m.queue {
					v.q, v.listed = q, true
				}
			}
			mu.Lock()
			r.views[nd.id] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	r.ended = time.Now()
	return r
}

// stop ends the sampling and returns every round.
func (m *statusMonitor) stop() []statusRound {
	m.cancel()
	<-m.done
	return m.snapshot()
}

func (m *statusMonitor) snapshot() []statusRound {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.rounds)
}

// waitFor waits until a round taken after since satisfies ok, and
// returns it; false if none did within timeout.
func (m *statusMonitor) waitFor(since time.Time, timeout time.Duration, ok func(statusRound) bool) (statusRound, bool) {
	deadline := time.Now().Add(timeout)
	seen := 0
	for time.Now().Before(deadline) {
		rounds := m.snapshot()
		for _, r := range rounds[seen:] {
			if !r.began.Before(since) && ok(r) {
				return r, true
			}
		}
		seen = len(rounds)
		select {
		case <-m.wake:
		case <-time.After(monitorPeriod):
		}
	}
	return statusRound{}, false
}

// doubleServing describes every round in which two or more nodes said
// they serve the queue.
func doubleServing(rounds []statusRound, origin time.Time) []string {
	var out []string
	for _, r := range rounds {
		if s := r.servingNodes(); len(s) > 1 {
			var who []string
			for _, id := range s {
				q := r.views[id].q
				who = append(who, fmt.Sprintf("n%d (epoch %d, commit %d)", id, q.ReplicaEpoch, q.Commit))
			}
			out = append(out, fmt.Sprintf("%v after the cut: %v", r.began.Sub(origin).Round(time.Millisecond), who))
		}
	}
	return out
}

// newOwnerServing returns the first round from since in which a node
// says it serves the queue at an epoch above epoch, and that node. The
// node cut may be it, once healed and elected again.
func newOwnerServing(rounds []statusRound, since time.Time, epoch uint64) (statusRound, int, bool) {
	for _, r := range rounds {
		if r.began.Before(since) {
			continue
		}
		for _, id := range r.servingNodes() {
			if r.views[id].q.ReplicaEpoch > epoch {
				return r, id, true
			}
		}
	}
	return statusRound{}, 0, false
}

// othersIdleUntil returns the start of the last round of the unbroken
// run of rounds from since (and before until) in which every node but
// old answered, listing the queue, and none said it serves it or is a
// candidate for it, at any epoch (mayConfirm). Each of
// them answered after that instant, so no publish confirmed to a client
// by then came from another node, unless one served and stopped again
// within a round, which takes a second fault. ok is false when the very
// first round breaks the run.
func othersIdleUntil(rounds []statusRound, since, until time.Time, old, nodes int) (time.Time, bool) {
	var last time.Time
	found := false
	for _, r := range rounds {
		if r.began.Before(since) {
			continue
		}
		if !r.began.Before(until) {
			break
		}
		others := 0
		for id, v := range r.views {
			if id == old {
				continue
			}
			// A node whose loop was too busy to answer in time reports
			// no queues: that says nothing about whether it serves.
			if v.mayConfirm() || !v.listed {
				return last, found
			}
			others++
		}
		if others != nodes-1 {
			return last, found
		}
		last, found = r.began, true
	}
	return last, found
}

// commitGrowth checks what node id, serving at epoch, reported as its
// confirmed index from from until until: the first such report is the
// baseline, and any later one above it is a confirmation made while cut
// off. It returns a description of the first such report, or "".
func commitGrowth(rounds []statusRound, id int, epoch uint64, from, until time.Time) (string, int) {
	var base uint64
	samples := 0
	for _, r := range rounds {
		// Only a round whose every answer came in before the heal
		// began saw the cut owner while it was still cut: one that
		// overlapped the heal may have seen acknowledgements the
		// network held through the cut and delivered once it ended.
		if r.began.Before(from) || !r.ended.Before(until) {
			continue
		}
		v, ok := r.views[id]
		if !ok || !v.listed || v.q.Role != "owner" || v.q.ReplicaEpoch != epoch {
			continue
		}
		samples++
		if samples == 1 {
			base = v.q.Commit
			continue
		}
		if v.q.Commit > base {
			return fmt.Sprintf("n%d's confirmed index rose from %d to %d at epoch %d, %v after the first sample past the in-flight bound",
				id, base, v.q.Commit, epoch, r.began.Sub(from).Round(time.Millisecond)), samples
		}
	}
	return "", samples
}
