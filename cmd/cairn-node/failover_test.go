package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
)

// failoverQueue is the queue the failover test works on.
const failoverQueue = "failover"

// serviceBound is how long after a kill (or a pause) the cluster may take
// to serve the queue again before the test calls it broken. It is
// generous on purpose: the test is about correctness, not speed.
const serviceBound = 15 * time.Second

// TestProcessFailoverKillOwner kills a queue's owner for good and checks
// the failover end to end on real processes:
//
//  1. three nodes, a majority queue, 1,000 confirmed publishes;
//  2. SIGKILL the owner without restarting it, and measure (from the
//     kill) detection, activation, the first delivery to a fresh
//     subscriber and the first new confirmed publish;
//  3. RPO = 0: the fresh subscriber receives every confirmed ID;
//  4. restart the killed node: it must rejoin as a follower at the new
//     epoch and catch up with the owner's log;
//  5. freeze the new owner with SIGSTOP until another node takes over,
//     then SIGCONT it: the resumed node must be fenced (it never serves at
//     the newest epoch and confirms nothing sent to it), it must converge
//     as a follower, and no publish confirmed meanwhile may be lost.
//
// Step 4 comes before step 5 on purpose: with one node dead and one
// frozen, a single node would be left, which is no majority, and no
// failover could happen.
func TestProcessFailoverKillOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "debug", "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	confirmed := seedQueue(t, ctx, pc, failoverQueue, 1000)
	if len(confirmed) < 900 {
		t.Fatalf("only %d of 1000 publishes confirmed on a healthy cluster", len(confirmed))
	}

	dead, owner, epoch := killOwnerAndMeasure(t, ctx, pc, confirmed)
	restartAsFollower(t, ctx, pc, dead, owner)
	pauseOwnerAndCheckFencing(t, ctx, pc, owner, epoch)
}

// killOwnerAndMeasure SIGKILLs the queue's owner, measures the failover
// and checks that a fresh subscriber receives every confirmed ID. It
// returns the killed node, the owner that replaced it and its epoch.
func killOwnerAndMeasure(t *testing.T, ctx context.Context, pc *procCluster, confirmed []client.MessageID) (dead, owner *procNode, epoch uint64) {
	old := pc.owner(ctx, failoverQueue)
	oldView := viewOf(t, ctx, old, failoverQueue)
	survivors := pc.others(old)
	t.Logf("%d publishes confirmed; SIGKILL the owner n%d (epoch %d); it stays dead", len(confirmed), old.id, oldView.Epoch)

	kill := time.Now()
	if err := old.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-old.exited

	// The fresh subscriber and the probe publisher start at the kill, as
	// a client that arrives during the outage would.
	sub := subscribeCollector(t, ctx, pc.clientAddrs(), failoverQueue)
	probe := startProbe(ctx, pc.clientAddrs(), failoverQueue)
	newOwner, view, seen := pc.waitOwnerAbove(ctx, failoverQueue, oldView.Epoch, survivors, serviceBound)
	probeID, published := probe.wait(t, kill.Add(serviceBound))
	if probe.failures > 0 {
		t.Errorf("a publish sent during the failover failed %d times before one succeeded (last: %v); within the client's retry deadline it should only wait", probe.failures, probe.err)
	}
	delivered := sub.waitFirst(t, kill.Add(serviceBound))

	suspect := firstLogged(t, survivors, event.DetectSuspect, kill, event.KeyNode, strconv.Itoa(old.id))
	active := firstLogged(t, survivors, event.QueueActive, kill, event.KeyQueue, failoverQueue)
	t.Logf("failover after SIGKILL of n%d: detection %v (first detect.suspect logged by a survivor), "+
		"activation %v (queue.active logged), owner in /status %v (n%d at epoch %d, polled every 10ms), "+
		"first delivery to a fresh subscriber %v, first new confirmed publish %v",
		old.id, since(kill, suspect), since(kill, active), since(kill, seen), newOwner.id, view.Epoch,
		since(kill, delivered), since(kill, published))
	if active.Before(suspect) {
		t.Errorf("activation (%v) came before any survivor suspected n%d (%v)", since(kill, active), old.id, since(kill, suspect))
	}

	sub.waitAll(t, append(confirmed, probeID), 30*time.Second)
	sub.close()
	t.Logf("RPO = 0: all %d confirmed messages (and the probe) delivered after the failover", len(confirmed))
	return old, newOwner, view.Epoch
}

// restartAsFollower restarts nd and waits until it follows owner at the
// owner's epoch with the owner's log.
func restartAsFollower(t *testing.T, ctx context.Context, pc *procCluster, nd, owner *procNode) {
	began := time.Now()
	pc.start(nd)
	pc.waitHealthy(nd, serviceBound)
	pc.waitConverged(ctx, nd, owner, serviceBound)
	t.Logf("n%d restarted and converged as a follower of n%d in %v", nd.id, owner.id, time.Since(began).Round(time.Millisecond))
}

// pauseOwnerAndCheckFencing freezes frozen, the queue's owner at epoch,
// until another node takes the queue over, resumes it, and checks that
// it is fenced.
func pauseOwnerAndCheckFencing(t *testing.T, ctx context.Context, pc *procCluster, frozen *procNode, epoch uint64) {
	if v := viewOf(t, ctx, frozen, failoverQueue); v.Role != "owner" || v.Epoch != epoch {
		t.Fatalf("n%d should own the queue at epoch %d: %+v", frozen.id, epoch, v)
	}
	// direct learns that frozen owns the queue, then gets one attempt per
	// publish with a timeout longer than the pause: what it sends during
	// the pause waits in frozen's socket, and frozen alone answers it.
	direct, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret), MaxAttempts: 1,
		RequestTimeout: 40 * time.Second}, frozen.clientAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	first := publishVia(t, ctx, direct, frozen)
	bg := startBackground(ctx, pc.clientAddrs(), failoverQueue)

	stopped := time.Now()
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// kill(2) returns before every thread of the target has stopped; a
	// publish that arrived in between could be confirmed, legitimately,
	// by an owner that was still running.
	waitStopped(t, frozen)
	var sent []*client.Publishing
	for i := range 20 {
		sent = append(sent, direct.PublishAsync(ctx, failoverQueue, fmt.Appendf(nil, "to the frozen owner %d", i)))
	}
	next, view, seen := pc.waitOwnerAbove(ctx, failoverQueue, epoch, pc.others(frozen), serviceBound)
	bg.waitConfirmedAfter(t, seen, serviceBound)
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	t.Logf("SIGSTOP n%d (epoch %d): n%d owns the queue at epoch %d after %v; SIGCONT after %v",
		frozen.id, epoch, next.id, view.Epoch, seen.Sub(stopped).Round(time.Millisecond), resumed.Sub(stopped).Round(time.Millisecond))

	pc.checkFenced(ctx, frozen, view.Epoch, serviceBound)
	var confirmed []client.MessageID
	var firstErr error
	for _, p := range sent {
		id, err := p.Wait()
		switch {
		case err == nil:
			t.Errorf("the fenced node n%d confirmed publish %s sent to it during the pause", frozen.id, id)
			confirmed = append(confirmed, id)
		case firstErr == nil:
			firstErr = err
		}
	}
	t.Logf("%d publishes sent to n%d during the pause: %d confirmed; the first refusal: %v", len(sent), frozen.id, len(confirmed), firstErr)
	pc.waitConverged(ctx, frozen, next, serviceBound)
	confirmed = append(append(confirmed, first), bg.stop(t)...)
	sub := subscribeCollector(t, ctx, pc.clientAddrs(), failoverQueue)
	defer sub.close()
	sub.waitAll(t, confirmed, 30*time.Second)
	t.Logf("n%d is fenced and converged; all %d publishes confirmed around the pause delivered", frozen.id, len(confirmed))
}

// since is the time from kill to at, to the millisecond. Logged times
// are wall-clock milliseconds, so kill is truncated to match.
func since(kill, at time.Time) time.Duration {
	return at.Sub(kill.Truncate(time.Millisecond)).Round(time.Millisecond)
}

// waitStopped waits until every thread of nd's process is stopped, as
// Linux's /proc reports it. Without /proc it waits long enough for any
// scheduler to have stopped it.
func waitStopped(t *testing.T, nd *procNode) {
	t.Helper()
	tasks := fmt.Sprintf("/proc/%d/task", nd.cmd.Process.Pid)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		entries, err := os.ReadDir(tasks)
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			return
		}
		stopped := len(entries) > 0
		for _, e := range entries {
			b, err := os.ReadFile(tasks + "/" + e.Name() + "/stat")
			// The state follows the command name, which is in
			// parentheses and may itself contain spaces.
			_, rest, _ := strings.Cut(string(b), ") ")
			if err == nil && !strings.HasPrefix(rest, "T") && !strings.HasPrefix(rest, "t") {
				stopped = false
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("n%d did not stop within 5s of SIGSTOP", nd.id)
}

// others lists the cluster's nodes other than nd.
func (pc *procCluster) others(nd *procNode) []*procNode {
	var out []*procNode
	for _, o := range pc.nodes {
		if o != nd {
			out = append(out, o)
		}
	}
	return out
}

// queueOf returns nd's view of queue, if nd answers and lists it.
func queueOf(ctx context.Context, nd *procNode, queue string) (status.Queue, bool) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := status.FetchAuth(sctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
	if err != nil {
		return status.Queue{}, false
	}
	for _, q := range s.Queues {
		if q.Name == queue {
			return q, true
		}
	}
	return status.Queue{}, false
}

// viewOf is queueOf for a node that must answer.
func viewOf(t *testing.T, ctx context.Context, nd *procNode, queue string) status.Queue {
	t.Helper()
	q, ok := queueOf(ctx, nd, queue)
	if !ok {
		t.Fatalf("n%d does not report queue %s", nd.id, queue)
	}
	return q
}

// waitOwnerAbove polls among every 10ms until one of them reports owning
// queue, active, at an epoch above the given one. It returns that node,
// its view and when the poll saw it.
func (pc *procCluster) waitOwnerAbove(ctx context.Context, queue string, above uint64, among []*procNode, timeout time.Duration) (*procNode, status.Queue, time.Time) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, nd := range among {
			if q, ok := queueOf(ctx, nd, queue); ok && q.Role == "owner" && q.Active && q.Epoch > above {
				return nd, q, time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	pc.t.Fatalf("no node of %v owned %s at an epoch above %d within %v", ids(among), queue, above, timeout)
	return nil, status.Queue{}, time.Time{}
}

// waitConverged waits until nd follows owner at owner's epoch and holds
// the same last index.
func (pc *procCluster) waitConverged(ctx context.Context, nd, owner *procNode, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var f, o status.Queue
	for time.Now().Before(deadline) {
		var ok1, ok2 bool
		f, ok1 = queueOf(ctx, nd, failoverQueue)
		o, ok2 = queueOf(ctx, owner, failoverQueue)
		if ok1 && ok2 && f.Role == "follower" && o.Role == "owner" && f.ReplicaEpoch == o.Epoch &&
			f.Epoch == o.Epoch && f.LastIndex == o.LastIndex {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pc.t.Fatalf("n%d did not converge with the owner n%d within %v: n%d %+v, n%d %+v",
		nd.id, owner.id, timeout, nd.id, f, owner.id, o)
}

// checkFenced polls a resumed old owner until it no longer claims the
// queue. At no point may it report serving at the newest epoch or above.
func (pc *procCluster) checkFenced(ctx context.Context, nd *procNode, newest uint64, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var q status.Queue
	for time.Now().Before(deadline) {
		var ok bool
		if q, ok = queueOf(ctx, nd, failoverQueue); !ok {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if q.Role == "owner" && q.ReplicaEpoch >= newest {
			pc.t.Fatalf("the resumed node n%d serves at epoch %d, not below the newest %d: %+v", nd.id, q.ReplicaEpoch, newest, q)
		}
		if q.Role == "stale" || q.Role == "follower" {
			pc.t.Logf("the resumed node n%d reports role %q (replica epoch %d, metadata epoch %d)", nd.id, q.Role, q.ReplicaEpoch, q.Epoch)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	pc.t.Fatalf("the resumed node n%d still claims the queue after %v: %+v", nd.id, timeout, q)
}

func ids(nodes []*procNode) []string {
	var out []string
	for _, nd := range nodes {
		out = append(out, fmt.Sprintf("n%d", nd.id))
	}
	return out
}
