//go:build linux

package main

import (
	"fmt"
	"time"
)

// drainBound bounds the wait, after healing, for every confirmed message
// to be delivered: a message leased at the cut waits out its lease
// (consumerLease) before a new owner delivers it again.
const drainBound = 30 * time.Second

// finish ends a scenario run after its last heal: it waits until a
// publish started after the heal is confirmed, stops the publisher,
// waits until every confirmed message was delivered (RPO 0) and the
// replicas converged, stops the rest, then checks what the run observed
// and returns it.
func (sr *scenarioRun) finish() *partitionRun {
	t := sr.t
	t.Helper()
	healed := time.Now()
	for !sr.pub.confirmedAfter(healed) {
		if time.Since(healed) > serviceBound {
			t.Errorf("no publish started after the last heal was confirmed within %v", serviceBound)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	stopped := time.Now()
	pubs := sr.pub.stop()
	pr := &partitionRun{nodes: len(sr.pc.nodes), episodes: sr.episodes, stopped: stopped, pubs: pubs}
	if len(sr.episodes) > 0 {
		pr.cut = sr.episodes[0].at
	}
	confirmed := pr.confirmed()
	if missing := sr.con.waitAll(confirmed, drainBound); len(missing) > 0 {
		t.Errorf("RPO violated: %d of %d confirmed messages never delivered within %v of the drain, e.g. %v (subscribing: %v)",
			len(missing), len(confirmed), drainBound, missing[:min(5, len(missing))], sr.con.subscribeError())
	}
	sr.waitConverged()
	pr.deliveries, pr.settled = sr.con.stop()
	pr.rounds = sr.mon.stop()
	sr.check(pr)
	return pr
}

// check asserts what every scenario must hold and logs the timings.
func (sr *scenarioRun) check(pr *partitionRun) {
	t := sr.t
	if double := doubleServing(pr.rounds, pr.cut); len(double) > 0 {
		t.Errorf("two nodes said they served %s in %d of %d status rounds, first %s, last %s",
			sr.queue, len(double), len(pr.rounds), double[0], double[len(double)-1])
	}
	for _, msg := range pr.staleConfirmations() {
		t.Errorf("a cut-off owner confirmed: %s", msg)
	}
	redelivered, bad := pr.duplicateReport()
	for _, msg := range bad {
		t.Errorf("duplicate beyond a redelivery: %s", msg)
	}
	unknown := 0
	for _, p := range pr.pubs {
		if p.err != nil {
			unknown++
		}
	}
	pt := pr.times()
	t.Logf("%d publishes, %d confirmed, %d not (refused or unknown outcome); %d deliveries, %d of them redeliveries; %d status rounds",
		len(pr.pubs), pt.confirmedTotal, unknown, len(pr.deliveries), redelivered, len(pr.rounds))
	t.Logf("from the cut: %s", pt.describe())
}

// The timing goals of the partition issue, printed and not asserted
// until the node and client changes they measure are in: the first
// confirmed publish within the cluster's failover time plus 100ms, and
// no gap between confirmations longer than 1.5s (set for flapping).
const (
	confirmOverFailoverGoal = 100 * time.Millisecond
	longestGapGoal          = 1500 * time.Millisecond
)

// describe renders the timings, with the goals they are held to.
func (pt partitionTimes) describe() string {
	opt := func(ok bool, d time.Duration) string {
		if !ok {
			return "none"
		}
		return d.Round(time.Millisecond).String()
	}
	s := fmt.Sprintf("failover (another node serving in /status) %s, first confirmed publish %s, first fresh delivery %s, longest gap between confirmations %s",
		opt(pt.hasFailover, pt.failover), opt(pt.hasConfirm, pt.firstConfirm), opt(pt.hasDelivery, pt.firstDelivery), opt(true, pt.longestGap))
	verdict := func(met bool) string {
		if met {
			return "met"
		}
		return "missed"
	}
	if pt.hasFailover && pt.hasConfirm {
		s += fmt.Sprintf("; goal first confirm <= failover + %v: %s", confirmOverFailoverGoal, verdict(pt.confirmGoalMet()))
	}
	return s + fmt.Sprintf("; goal longest gap <= %v: %s", longestGapGoal, verdict(pt.longestGap <= longestGapGoal))
}

// confirmGoalMet reports whether the first confirmed publish came within
// the failover time plus confirmOverFailoverGoal.
func (pt partitionTimes) confirmGoalMet() bool {
	return pt.hasFailover && pt.hasConfirm && pt.firstConfirm <= pt.failover+confirmOverFailoverGoal
}

// waitConverged waits until the queue's replicas agree: one node serves
// it with every record confirmed, and every other replica follows it at
// its epoch with the same last index.
func (sr *scenarioRun) waitConverged() {
	t := sr.t
	t.Helper()
	var last statusRound
	r, ok := sr.mon.waitFor(time.Now(), serviceBound, func(r statusRound) bool {
		last = r
		return converged(r) == ""
	})
	if !ok {
		t.Errorf("the replicas did not converge within %v: %s", serviceBound, converged(last))
		return
	}
	owner := r.servingNodes()[0]
	q := r.views[owner].q
	t.Logf("converged: n%d serves at epoch %d, every replica of %v at last index %d", owner, q.ReplicaEpoch, q.Replicas, q.LastIndex)
}

// converged says why the replicas in r do not agree, or "" if they do.
func converged(r statusRound) string {
	serving := r.servingNodes()
	if len(serving) != 1 {
		return fmt.Sprintf("nodes serving: %v", serving)
	}
	o := r.views[serving[0]].q
	if o.Commit != o.LastIndex {
		return fmt.Sprintf("the owner n%d has confirmed %d of %d", serving[0], o.Commit, o.LastIndex)
	}
	for _, id := range o.Replicas {
		if int(id) == serving[0] {
			continue
		}
		v, ok := r.views[int(id)]
		switch {
		case !ok || !v.listed:
			return fmt.Sprintf("replica n%d did not answer", id)
		case v.q.Role != "follower" || v.q.ReplicaEpoch != o.ReplicaEpoch || v.q.LastIndex != o.LastIndex:
			return fmt.Sprintf("replica n%d is %s at epoch %d with last index %d; the owner n%d at epoch %d has %d",
				id, v.q.Role, v.q.ReplicaEpoch, v.q.LastIndex, serving[0], o.ReplicaEpoch, o.LastIndex)
		}
	}
	return ""
}
