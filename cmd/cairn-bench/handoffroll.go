package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// rollHandoffBound is the nodes' shutdown handoff bound (their default,
// 10s), and rollExitMargin how much longer than that a SIGTERM'd node may
// take to drain and exit.
const (
	rollHandoffBound = 10 * time.Second
	rollExitMargin   = 5 * time.Second
)

// roll restarts every node of the cluster in turn, as an operator
// upgrading it would: SIGTERM (so the node hands the queue over if it
// owns it), a clean exit within the handoff bound, a restart with the
// same configuration, and a wait until the node follows the queue again,
// caught up, before the next. The queue's owner goes first whenever it
// has not been restarted yet, so that as many stops as can be are
// handoffs. The gap and the publish latency cover the whole roll and the
// settle time after it.
func (hr *handoffRun) roll(ctx context.Context) (trialOutcome, error) {
	o := trialOutcome{}
	start := time.Now()
	for left := hr.cl.members; len(left) > 0; {
		m := hr.nextToRoll(ctx, left)
		owned, err := hr.restartGracefully(ctx, m)
		if owned {
			o.handoffs++
		}
		if err != nil {
			return o, err
		}
		left = slices.DeleteFunc(slices.Clone(left), func(x *member) bool { return x == m })
	}
	o.recovery = time.Since(start)
	if err := sleep(ctx, hr.cfg.settle); err != nil {
		return o, err
	}
	o.gap = hr.pub.longestGap(start, time.Now())
	o.latency = hr.pub.maxLatency(start, time.Now())
	return o, nil
}

// nextToRoll picks the next member of left to restart: the queue's owner
// if it is one of them, else the first.
func (hr *handoffRun) nextToRoll(ctx context.Context, left []*member) *member {
	for _, m := range left {
		if _, q, ok := m.view(ctx, benchQueue); ok && q.Role == "owner" {
			return m
		}
	}
	return left[0]
}

// restartGracefully stops m with SIGTERM, checks that it exited 0 in
// time having handed off every queue it owned (its log says so), starts
// it again and waits until it follows the queue, caught up. owned says
// whether m owned the queue when the SIGTERM was sent.
func (hr *handoffRun) restartGracefully(ctx context.Context, m *member) (owned bool, err error) {
	if _, q, ok := m.view(ctx, benchQueue); ok && q.Role == "owner" {
		owned = true
	}
	fi, err := os.Stat(m.log)
	if err != nil {
		return owned, err
	}
	how, clean := m.terminate(rollHandoffBound + rollExitMargin)
	if !clean {
		return owned, fmt.Errorf("n%d: %s (see %s)", m.id, how, m.log)
	}
	if line := handoffLogLine(m.log, fi.Size()); !strings.Contains(line, "remaining=0") {
		return owned, fmt.Errorf("n%d (owner: %v) exited without handing off every queue it owned: %q", m.id, owned, line)
	}
	if err := m.start(hr.bin); err != nil {
		return owned, fmt.Errorf("restarting n%d: %w", m.id, err)
	}
	return owned, hr.awaitCaughtUp(ctx, m)
}

// handoffLogLine returns the line a node logged, past offset in its log,
// about its shutdown handoff: all handed off, or ended early. It is
// empty when the node logged neither, as with the handoff off.
func handoffLogLine(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if strings.Contains(line, "handed off owned queues") || strings.Contains(line, "shutdown handoff ended early") {
			return line
		}
	}
	return ""
}

// awaitCaughtUp waits until m follows the queue at its owner's epoch
// with at least the log the owner reported just before.
func (hr *handoffRun) awaitCaughtUp(ctx context.Context, m *member) error {
	deadline := time.Now().Add(hr.cfg.timeout)
	for {
		owner, epoch, err := hr.owner(ctx)
		if err != nil {
			return err
		}
		_, oq, _ := owner.view(ctx, benchQueue)
		if _, q, ok := m.view(ctx, benchQueue); ok && q.Role == "follower" && q.ReplicaEpoch == epoch &&
			q.Epoch == epoch && q.LastIndex >= oq.LastIndex {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restarted n%d does not follow the queue, caught up, after %v (see %s)", m.id, hr.cfg.timeout, m.log)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
