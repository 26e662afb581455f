package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// peerSetupAllowance is how long, beyond its failover timeout, a peer
// trial may take to answer: it starts a fresh cluster, waits for it to
// form, publishes the backlog and stops the cluster again. Past that the
// trial counts as failed and the harness is started afresh.
const peerSetupAllowance = 90 * time.Second

// peerSide runs the peer's failover trials, one harness process at a
// time: a harness that did not answer in time is replaced, since its late
// answer would otherwise be read as the next trial's.
type peerSide struct {
	command string
	timeout time.Duration
	stderr  io.Writer
	h       *peerHarness
}

// peerTrial is what one peer trial measured, from the kill of the
// stream's leader.
type peerTrial struct {
	publish  time.Duration // the first new confirmed publish
	delivery time.Duration // the first delivery to a fresh consumer
	failure  string
}

// startPeerSide starts the harness, so that a bad command fails the
// benchmark before any trial runs.
func startPeerSide(ctx context.Context, cfg failoverConfig, stderr io.Writer) (*peerSide, error) {
	ps := &peerSide{command: cfg.peer, timeout: cfg.peerTimeout, stderr: stderr}
	var err error
	ps.h, err = startPeer(ctx, ps.command, stderr)
	return ps, err
}

// trial runs one peer failover with a backlog of backlog messages.
func (ps *peerSide) trial(ctx context.Context, backlog int) peerTrial {
	if ps.h == nil {
		h, err := startPeer(ctx, ps.command, ps.stderr)
		if err != nil {
			return peerTrial{failure: err.Error()}
		}
		ps.h = h
	}
	wait := ps.timeout + peerSetupAllowance + time.Duration(backlog)*time.Millisecond
	line := fmt.Sprintf("failover %d %d %g", backlog, payloadSize, ps.timeout.Seconds())
	a, err := ps.h.request(ctx, line, wait)
	if err != nil && a.Error == "" {
		// Not an answer but a timeout, a garbled line or a harness gone:
		// out of step with it, so the next trial starts a new one.
		ps.h.close()
		ps.h = nil
	}
	return peerTrialOf(a, err, ps.timeout)
}

// peerTrialOf turns the harness's answer into a trial. An answer without
// both instants, or with one past the timeout, is a failed trial.
func peerTrialOf(a peerAnswer, err error, timeout time.Duration) peerTrial {
	switch {
	case err != nil:
		return peerTrial{failure: err.Error()}
	case a.FirstPublish == nil || a.FirstDelivery == nil:
		return peerTrial{failure: "the peer's answer lacks first_publish_seconds or first_delivery_seconds"}
	}
	pt := peerTrial{publish: seconds(*a.FirstPublish), delivery: seconds(*a.FirstDelivery)}
	if pt.publish > timeout || pt.delivery > timeout {
		pt.failure = fmt.Sprintf("not recovered within %v", timeout)
	}
	return pt
}

// close stops the harness.
func (ps *peerSide) close() {
	if ps.h != nil {
		ps.h.close()
	}
}

// summary describes one peer trial in a line.
func (pt peerTrial) summary() string {
	if pt.failure != "" {
		return "FAILED: " + pt.failure
	}
	return fmt.Sprintf("publish %s delivery %s", ms(pt.publish), ms(pt.delivery))
}

// peerReport prints the peer's distributions and their ratios to
// cairn's, at the median and at p95, over the trials each side completed.
func peerReport(w io.Writer, results []trialResult, peers []peerTrial) {
	var pub, del []time.Duration
	failed := 0
	for _, pt := range peers {
		if pt.failure != "" {
			failed++
			continue
		}
		pub, del = append(pub, pt.publish), append(del, pt.delivery)
	}
	fmt.Fprintf(w, "\npeer, from the SIGKILL of its stream's leader to%24s %10s %10s %10s %7s\n", "", "median", "p95", "max", "trials")
	rows := []struct {
		label   string
		instant int
		peer    []time.Duration
	}{
		{"first new confirmed publish", instFirstPublish, pub},
		{"first delivery to a fresh subscriber (the peer's: a fresh consumer)", instFirstDelivery, del},
	}
	for _, r := range rows {
		d := latency.Summarize(r.peer)
		if d.N == 0 {
			fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", r.label, "-", "-", "-", 0)
			continue
		}
		fmt.Fprintf(w, "%-72s %10s %10s %10s %7d\n", r.label, ms(d.Median), ms(d.P95), ms(d.Max), d.N)
	}
	fmt.Fprintf(w, "peer failures: %d of %d trials\n", failed, len(peers))
	for i, pt := range peers {
		if pt.failure != "" {
			fmt.Fprintf(w, "  peer trial %d: %s\n", i+1, pt.summary())
		}
	}
	fmt.Fprintf(w, "peer / cairn%60s %10s %10s\n", "", "median", "p95")
	for _, r := range rows {
		c, p := instantSummary(results, r.instant), latency.Summarize(r.peer)
		if c.N == 0 || p.N == 0 {
			fmt.Fprintf(w, "%-72s %10s %10s\n", r.label, "-", "-")
			continue
		}
		fmt.Fprintf(w, "%-72s %10.2f %10.2f\n", r.label, ratio(p.Median, c.Median), ratio(p.P95, c.P95))
	}
}
