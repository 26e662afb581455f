package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/eventlog"
)

// benchQueue is the queue every trial creates first, and kills the owner
// of unless the trial needs an owner that also leads the metadata group
// and must create others (see placeQueue).
const benchQueue = "bench"

// The instants measured from the kill, in the order they are reported.
const (
	instDetection = iota
	instActivation
	instStatusOwner
	instFirstDelivery
	instFirstPublish
	numInstants
)

// instantNames describe the instants as the report prints them.
var instantNames = [numInstants]string{
	"detection (first detect.suspect, else .confirm, of the dead node logged)",
	"activation (first queue.active logged by a survivor)",
	"owner serving in /status (polled every 10ms)",
	"first delivery to a fresh subscriber",
	"first new confirmed publish",
}

// trialResult is what one trial measured and checked.
type trialResult struct {
	queue        string // the queue whose owner was failed
	queues       int    // queues the trial created, the last the one whose owner was failed
	killed, next int    // the killed (or stopped) owner and the node that replaced it
	ownerLed     bool   // the killed owner also led the metadata group
	at           [numInstants]time.Duration
	seen         [numInstants]bool
	confirmed    int // confirmed publishes the subscriber had to receive
	unknown      int // publishes with an unknown outcome (not checked)
	lost         int // confirmed publishes never delivered: RPO violations
	// stale is what the stopped owner answered to the publishes sent to
	// it while it was stopped (the stop fault only).
	stale staleOutcome
	// stages is the failover's breakdown as the survivors logged it.
	stages stageTimes
	// failure says why the trial did not complete (empty if it did). An
	// incomplete trial may still have checked RPO.
	failure string
	dir     string // the trial's directory, if kept
}

// trialEnv is what every trial shares.
type trialEnv struct {
	cfg failoverConfig
	bin string
	// infoLogs says the cluster logs at info. Suspicions are logged
	// there too, but not every event the stage breakdown reads, so a
	// missing detection instant is no failure.
	infoLogs bool
	// settleAcks makes a trial wait, after the RPO check, for the
	// subscriber's acks to come back, so that the next trial on the same
	// cluster starts from the backlog it publishes and not from
	// redeliveries of this one's.
	settleAcks bool
	// stages makes a trial read its stage breakdown from the survivors'
	// debug logs.
	stages bool
}

// runTrial runs one trial in a fresh cluster under a new directory and
// tears the cluster down. The directory is removed unless the trial
// should be kept by cfg.keep.
func (te *trialEnv) runTrial(ctx context.Context) trialResult {
	var res trialResult
	dir, err := os.MkdirTemp("", "cairn-bench-")
	if err != nil {
		res.failure = err.Error()
		return res
	}
	// A configuration that names no cluster size means three nodes.
	level := "debug"
	if te.infoLogs {
		level = "info"
	}
	cl, err := startCluster(te.bin, dir, max(te.cfg.nodes, 3), level, "")
	if err == nil {
		err = te.measure(ctx, cl, &res)
		cl.stop()
	}
	if err != nil {
		res.failure = err.Error()
	}
	failed := res.failure != "" || res.lost > 0 || res.stale.confirmed > 0
	if te.cfg.keep == "all" || failed && te.cfg.keep == "failed" {
		res.dir = dir
	} else {
		os.RemoveAll(dir)
	}
	return res
}

// measure prepares the queue and its backlog, kills the owner, and fills
// res with what followed.
func (te *trialEnv) measure(ctx context.Context, cl *cluster, res *trialResult) error {
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return err
	}
	setup, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, cl.clientAddrs()...)
	if err != nil {
		return err
	}
	defer setup.Close()
	if res.queue, res.queues, err = te.placeQueue(ctx, cl, setup); err != nil {
		return err
	}
	backlog := publishBacklog(ctx, setup, res.queue, te.cfg.backlog, 512)
	var warm *steadyPublisher
	if te.cfg.warm() {
		opts := fastOptions()
		if te.cfg.warmClient == "default" {
			opts = client.Options{Secret: []byte(benchSecret)}
		}
		wc, err := client.Dial(ctx, opts, cl.clientAddrs()...)
		if err != nil {
			return err
		}
		defer wc.Close()
		warm = startSteady(ctx, wc, res.queue, te.cfg.rate, payload, 1<<16, false)
		sleep(ctx, te.cfg.warmup)
	}
	return te.killAndWatch(ctx, cl, res, backlog, warm)
}

// createQueue creates the benchmark's queue, retrying while the metadata
// group elects its first leader.
func createQueue(ctx context.Context, c *client.Client, timeout time.Duration) error {
	return createQueueNamed(ctx, c, benchQueue, timeout)
}

// createQueueNamed creates a majority queue, retrying while the metadata
// group elects its first leader.
func createQueueNamed(ctx context.Context, c *client.Client, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.CreateQueue(ctx, name, client.PolicyMajority)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating the queue: %w", err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// killAndWatch fails the owner (a kill, or a stop), waits for the four
// client-visible signs of recovery, checks that every confirmed message
// is delivered, and reads detection, activation and the stages from the
// survivors' logs.
func (te *trialEnv) killAndWatch(ctx context.Context, cl *cluster, res *trialResult, backlog *outcomes, warm *steadyPublisher) error {
	if res.queue == "" {
		res.queue = benchQueue
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	owner, node, q, _, err := servingOwner(octx, cl.members, res.queue, 0, 10*time.Millisecond)
	cancel()
	if err != nil {
		return err
	}
	res.killed, res.ownerLed = owner.id, node.MetaLeader == node.ID
	var stale *staleCheck
	if te.cfg.stop() {
		if stale, err = startStaleCheck(ctx, owner, res.queue, te.cfg.timeout); err != nil {
			return err
		}
		defer stale.close()
		backlog = merge(backlog, stale.before)
	}
	kill := time.Now()
	if err := te.fail(owner, stale); err != nil {
		return err
	}
	watch, err := startWatch(ctx, cl, owner, res.queue, kill, te.cfg.timeout)
	if err != nil {
		return err
	}
	defer watch.close()
	next, _, _, seen, err := servingOwner(watch.ctx, cl.others(owner), res.queue, q.Epoch, 10*time.Millisecond)
	if err == nil {
		res.next = next.id
		res.set(instStatusOwner, seen.Sub(kill))
	}
	watch.wait(res, kill)
	if warm != nil {
		// Keep the traffic up a little past the recovery, so that the
		// new owner takes writes under load too.
		sleep(ctx, te.cfg.warmup)
		backlog = merge(backlog, warm.stop())
	}
	te.checkRPO(ctx, res, watch, backlog)
	te.readLogs(cl, owner, kill, res)
	if stale != nil {
		res.stale = stale.finish(ctx, owner)
	}
	te.noteMissing(res)
	return nil
}

// fail inflicts the configured fault on the owner: SIGKILL, or SIGSTOP
// followed by the publishes the stopped owner must not confirm.
func (te *trialEnv) fail(owner *member, stale *staleCheck) error {
	if !te.cfg.stop() {
		owner.kill()
		return nil
	}
	if err := owner.pause(); err != nil {
		return err
	}
	stale.send()
	return nil
}

// noteMissing fails a trial that completed its checks but did not see
// every instant in time. Without debug logs, detection is not logged and
// its absence is no failure.
func (te *trialEnv) noteMissing(res *trialResult) {
	if res.failure != "" {
		return
	}
	for i, ok := range res.seen {
		if !ok && !(i == instDetection && te.infoLogs) {
			res.failure = fmt.Sprintf("no %s within %v", instantNames[i], te.cfg.timeout)
			return
		}
	}
}

// set records instant i.
func (res *trialResult) set(i int, d time.Duration) {
	res.at[i], res.seen[i] = d, true
}

// checkRPO waits for the subscriber to receive every confirmed publish:
// the backlog's, the warm traffic's and the probe's.
func (te *trialEnv) checkRPO(ctx context.Context, res *trialResult, w *watch, o *outcomes) {
	want, unknown, refused := o.snapshot()
	if !w.probe.at.IsZero() {
		want = append(want, w.probe.id)
	}
	res.confirmed, res.unknown = len(want), unknown
	// Allow for draining the backlog: a subscriber takes thousands of
	// messages a second, so the allowance is on the generous side.
	deadline := time.Now().Add(te.cfg.timeout + time.Duration(len(want))*time.Millisecond)
	res.lost = w.col.awaitAll(ctx, want, deadline)
	if te.settleAcks {
		w.col.awaitAcks(ctx, time.Now().Add(10*time.Second))
	}
	if refused > 0 && res.failure == "" {
		res.failure = fmt.Sprintf("%d publishes refused outright", refused)
	}
}

// merge adds b's outcomes to a's.
func merge(a, b *outcomes) *outcomes {
	ac, au, ar := a.snapshot()
	bc, bu, br := b.snapshot()
	return &outcomes{confirmed: append(ac, bc...), unknown: au + bu, refused: ar + br}
}

// readLogs finds detection and activation in the survivors' logs, and
// with te.stages the failover's stage breakdown.
func (te *trialEnv) readLogs(cl *cluster, dead *member, kill time.Time, res *trialResult) {
	var logs []string
	for _, m := range cl.others(dead) {
		logs = append(logs, m.log)
	}
	events := []struct {
		instant int
		eventlog.Event
	}{
		{instDetection, eventlog.Event{Name: event.DetectSuspect, Key: event.KeyNode, Value: strconv.Itoa(dead.id)}},
		{instActivation, eventlog.Event{Name: event.QueueActive, Key: event.KeyQueue, Value: res.queue}},
	}
	for _, ev := range events {
		at, ok, err := eventlog.FirstLogged(logs, ev.Event, kill)
		if !ok && err == nil && ev.instant == instDetection {
			// The log's rate limit may have left the suspicion out (a
			// node suspected over and over while it restarted); its
			// confirmation is logged in the same tick or later.
			confirm := ev.Event
			confirm.Name = event.DetectConfirm
			at, ok, err = eventlog.FirstLogged(logs, confirm, kill)
		}
		if err != nil && res.failure == "" {
			res.failure = fmt.Sprintf("reading the logs: %v", err)
		}
		// Logged instants are wall-clock milliseconds; one later than the
		// timeout counts as not seen, like the polled ones.
		if d := at.Sub(kill.Truncate(time.Millisecond)); ok && d <= te.cfg.timeout {
			res.set(ev.instant, d)
		}
	}
	if !te.stages {
		return
	}
	st, err := readStages(logs, uint32(dead.id), res.queue, kill)
	if err != nil && res.failure == "" {
		res.failure = fmt.Sprintf("reading the logs: %v", err)
	}
	if res.seen[instFirstPublish] {
		st.set(markPublish, res.at[instFirstPublish])
	}
	res.stages = st
}

// watch is the set of fresh clients that arrive at the kill: a subscriber
// and a probe publisher, each on a client of its own.
type watch struct {
	ctx     context.Context // ends at the kill plus the timeout
	cancel  context.CancelFunc
	timeout time.Duration
	subC    *client.Client
	probeC  *client.Client
	col     *collector
	probe   *probe
}

// startWatch dials the fresh clients and starts them on queue. They give
// up timeout after the kill. They are given the failed node's address
// last: a client dials the addresses in turn, and a stopped node accepts
// the connection but never completes the handshake, so a client that
// tried it first would spend its dial timeout there before it even asked
// for anything, which says nothing about the cluster's recovery.
func startWatch(ctx context.Context, cl *cluster, dead *member, queue string, kill time.Time, timeout time.Duration) (*watch, error) {
	w := &watch{timeout: timeout}
	w.ctx, w.cancel = context.WithDeadline(ctx, kill.Add(timeout))
	var addrs []string
	for _, m := range cl.others(dead) {
		addrs = append(addrs, m.clientAddr)
	}
	addrs = append(addrs, dead.clientAddr)
	var err error
	if w.subC, err = client.Dial(ctx, fastOptions(), addrs...); err != nil {
		w.cancel()
		return nil, err
	}
	if w.probeC, err = client.Dial(ctx, fastOptions(), addrs...); err != nil {
		w.close()
		return nil, err
	}
	w.col = subscribe(ctx, w.subC, queue)
	w.probe = startProbe(w.ctx, w.probeC, queue)
	return w, nil
}

// wait waits, until the watch's deadline, for the first delivery and the
// first confirmed publish, and records them.
func (w *watch) wait(res *trialResult, kill time.Time) {
	// The probe gives up when the watch's context ends, so this waits
	// no longer than the timeout.
	<-w.probe.done
	if !w.probe.at.IsZero() {
		res.set(instFirstPublish, w.probe.at.Sub(kill))
	}
	for w.ctx.Err() == nil {
		if _, ok := w.col.first(); ok {
			break
		}
		sleep(w.ctx, 5*time.Millisecond)
	}
	if at, ok := w.col.first(); ok && at.Sub(kill) <= w.timeout {
		res.set(instFirstDelivery, at.Sub(kill))
	} else if err := w.col.failed(); err != nil && res.failure == "" {
		res.failure = fmt.Sprintf("subscribing: %v", err)
	}
}

// close closes the fresh clients.
func (w *watch) close() {
	w.cancel()
	if w.subC != nil {
		w.subC.Close()
	}
	if w.probeC != nil {
		w.probeC.Close()
	}
}
