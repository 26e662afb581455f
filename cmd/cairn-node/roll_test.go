package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// The rolling restart test's settings. rollHandoff is the shutdown
// handoff every node is configured with; rollExitMargin is how much
// longer than that a stopped node may take to exit.
const (
	rollQueue          = "roll"
	rollHandoff        = 10 * time.Second
	rollHandoffSetting = `shutdown_handoff = "10s"`
	rollExitMargin     = 5 * time.Second
	rollPublishEvery   = 3 * time.Millisecond
)

// TestProcessRollingRestart restarts every node of a three-node cluster
// in turn, as an operator upgrading it would, while a publisher sends a
// steady pipelined stream to a majority queue and a consumer acks
// everything. Each node is stopped with SIGTERM, so it hands the queues
// it owns to another replica before it exits; the test checks that it
// did (its log says it handed off everything), that it exited 0 within
// the handoff bound, and that no publish failed or ended with an unknown
// outcome and every confirmed message was delivered. It logs the longest
// publish latency and the longest gap between confirmations.
func TestProcessRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", rollHandoffSetting)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := dialCluster(t, ctx, pc.clientAddrs())
	defer c.Close()
	createWhenReady(t, ctx, c, rollQueue, client.PolicyMajority)
	pc.waitSettled(ctx, nil, serviceBound)

	cons := startRollConsumer(t, ctx, pc.clientAddrs(), rollQueue)
	defer cons.close()
	pub := startRollPublisher(ctx, pc.clientAddrs(), rollQueue, rollPublishEvery)
	time.Sleep(time.Second)

	rollStart := time.Now()
	for left := pc.nodes; len(left) > 0; {
		nd := pc.nextToRoll(ctx, left)
		pc.restartGracefully(ctx, nd)
		left = slices.DeleteFunc(slices.Clone(left), func(o *procNode) bool { return o == nd })
	}
	rollEnd := time.Now()
	time.Sleep(time.Second)
	res := pub.stop()

	dups := cons.waitAll(t, res.confirmed, 30*time.Second)
	gap, gapAt := res.longestGap(rollStart, rollEnd)
	t.Logf("rolling restart of 3 nodes took %v; %d publishes: %d confirmed, %d failed, %d unknown outcome; "+
		"max publish latency %v; longest gap between confirmations during the roll %v (at +%v); "+
		"all %d confirmed delivered, %d delivered more than once",
		rollEnd.Sub(rollStart).Round(time.Millisecond), res.sent, len(res.confirmed), res.failed, res.unknown,
		res.maxLatency.Round(time.Millisecond), gap.Round(time.Millisecond), gapAt.Sub(rollStart).Round(time.Millisecond),
		len(res.confirmed), dups)
	if res.failed > 0 || res.unknown > 0 {
		t.Errorf("%d publishes failed and %d ended with an unknown outcome during a rolling restart (first error: %v)",
			res.failed, res.unknown, res.firstErr)
	}
}

// nextToRoll picks the next node of left to restart: the queue's owner
// if it is one of them, so that as many restarts as can be are handoffs,
// else the first.
func (pc *procCluster) nextToRoll(ctx context.Context, left []*procNode) *procNode {
	for _, nd := range left {
		if q, ok := queueOf(ctx, nd, rollQueue); ok && q.Role == "owner" {
			return nd
		}
	}
	return left[0]
}

// restartGracefully stops nd with SIGTERM, checks that it handed off
// what it owned and exited 0 within the handoff bound, starts it again
// and waits until the cluster has settled with nd back as a caught-up
// follower.
func (pc *procCluster) restartGracefully(ctx context.Context, nd *procNode) {
	t := pc.t
	t.Helper()
	owned := false
	if q, ok := queueOf(ctx, nd, rollQueue); ok && q.Role == "owner" {
		owned = true
	}
	logFrom := fileSize(t, nd.log)
	began := time.Now()
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nd.exited:
	case <-time.After(rollHandoff + rollExitMargin):
		t.Fatalf("n%d still running %v after SIGTERM", nd.id, rollHandoff+rollExitMargin)
	}
	if nd.err != nil {
		t.Fatalf("n%d exited after SIGTERM with %v", nd.id, nd.err)
	}
	stopped := time.Since(began)
	line := handoffLine(t, nd, logFrom)
	if line == "" || !strings.Contains(line, "remaining=0") {
		t.Errorf("n%d (owner of %s: %v) exited without handing off every queue it owned; its handoff log line: %q",
			nd.id, rollQueue, owned, line)
	}
	pc.start(nd)
	pc.waitHealthy(nd, serviceBound)
	pc.waitSettled(ctx, nd, serviceBound)
	t.Logf("n%d (owner: %v) stopped in %v, back as a caught-up follower after %v in all; %s",
		nd.id, owned, stopped.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), strings.TrimSpace(line))
}

// fileSize is how long the file at path is now.
func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// handoffLine returns the "handed off owned queues" line nd logged after
// offset in its log, or the line saying the handoff ended early, or ""
// when it logged neither (the handoff is off).
func handoffLine(t *testing.T, nd *procNode, offset int64) string {
	b, err := os.ReadFile(nd.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if strings.Contains(line, "handed off owned queues") || strings.Contains(line, "shutdown handoff ended early") {
			return line
		}
	}
	return ""
}

// waitSettled waits until every node is up and connected to every
// other, the queue's owner serves it, and every other node follows the
// owner's epoch with at least the log the owner had just before. If
// back is not nil, it must be one of those followers.
func (pc *procCluster) waitSettled(ctx context.Context, back *procNode, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	why := ""
	for time.Now().Before(deadline) {
		if why = pc.unsettled(ctx, back); why == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pc.t.Fatalf("the cluster did not settle within %v: %s", timeout, why)
}

// unsettled says why the cluster has not settled, or "" when it has.
// The followers are asked after the owner, so that a caught-up follower
// holds at least the log the owner reported.
func (pc *procCluster) unsettled(ctx context.Context, back *procNode) string {
	var owner *status.Queue
	for _, nd := range pc.nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		s, err := status.FetchAuth(sctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
		cancel()
		if err != nil {
			return fmt.Sprintf("n%d does not answer: %v", nd.id, err)
		}
		for _, p := range s.Peers {
			if !p.Connected {
				return fmt.Sprintf("n%d is not connected to n%d", nd.id, p.ID)
			}
		}
		if q, ok := findQueue(*s, rollQueue); ok && q.Role == "owner" && q.Active {
			owner = &q
		}
	}
	if owner == nil {
		return "no node serves " + rollQueue
	}
	for _, nd := range pc.nodes {
		q, ok := queueOf(ctx, nd, rollQueue)
		switch {
		case !ok:
			return fmt.Sprintf("n%d does not list %s", nd.id, rollQueue)
		case q.Role == "owner":
			if q.Epoch != owner.Epoch {
				return fmt.Sprintf("n%d owns %s at epoch %d, not %d", nd.id, rollQueue, q.Epoch, owner.Epoch)
			}
		case q.Role != "follower" || q.ReplicaEpoch != owner.Epoch || q.Epoch != owner.Epoch:
			return fmt.Sprintf("n%d is not a follower at the owner's epoch %d: %+v", nd.id, owner.Epoch, q)
		case q.LastIndex < owner.LastIndex:
			return fmt.Sprintf("n%d has not caught up with the owner: index %d of %d", nd.id, q.LastIndex, owner.LastIndex)
		}
	}
	if back != nil {
		if q, _ := queueOf(ctx, back, rollQueue); q.Role != "follower" {
			return fmt.Sprintf("n%d is back as %q, not a follower", back.id, q.Role)
		}
	}
	return ""
}

// findQueue returns queue as s lists it.
func findQueue(s status.Node, queue string) (status.Queue, bool) {
	for _, q := range s.Queues {
		if q.Name == queue {
			return q, true
		}
	}
	return status.Queue{}, false
}
