package main

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live/status"
)

// replaceQueue is the queue the replacement test works on.
const replaceQueue = "replaced"

// TestProcessReplaceDeadReplica runs five cairn-node processes with
// replace_after = 2s and kills two of a queue's three original replicas,
// one after the other, for good:
//
//  1. SIGKILL the owner: a survivor takes over, and two seconds later a
//     node outside the replica set replaces the dead one and copies the
//     whole log over real TCP and disk;
//  2. SIGKILL a second original replica: the queue recovers from the last
//     original replica and the newcomer;
//  3. RPO = 0: a fresh subscriber receives every confirmed ID.
//
// Without the replacement, step 2 would leave one of the three original
// replicas, no seal quorum, and the queue unavailable.
func TestProcessReplaceDeadReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 5, "info", `replace_after = "2s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	confirmed := seedQueue(t, ctx, pc, replaceQueue, 500)

	first := pc.owner(ctx, replaceQueue)
	original := viewOf(t, ctx, first, replaceQueue)
	t.Logf("%d confirmed on replicas %v; SIGKILL the owner n%d for good", len(confirmed), original.Replicas, first.id)
	killForGood(t, first)
	alive := pc.others(first)
	owner, view, _ := pc.waitOwnerAbove(ctx, replaceQueue, original.Epoch, alive, serviceBound)
	replicas, newcomer := pc.waitReplaced(ctx, owner, first, original.Replicas, serviceBound)
	t.Logf("n%d took over at epoch %d; n%d replaced n%d: replicas %v", owner.id, view.Epoch, newcomer.id, first.id, replicas)
	pc.waitCaughtUp(ctx, newcomer, owner, replaceQueue, serviceBound)

	// Lose a second original replica: the current owner, an original one.
	second := owner
	epoch := viewOf(t, ctx, second, replaceQueue).Epoch
	t.Logf("SIGKILL n%d, a second original replica, for good", second.id)
	killForGood(t, second)
	var left []*procNode
	for _, nd := range alive {
		if nd != second {
			left = append(left, nd)
		}
	}
	third, view3, _ := pc.waitOwnerAbove(ctx, replaceQueue, epoch, left, serviceBound)
	t.Logf("n%d serves at epoch %d with two of the three original replicas dead", third.id, view3.Epoch)

	sub := subscribeCollector(t, ctx, pc.clientAddrs(), replaceQueue)
	defer sub.close()
	sub.waitAll(t, confirmed, 30*time.Second)
	t.Logf("RPO = 0: all %d confirmed messages delivered", len(confirmed))
}

// killForGood SIGKILLs nd and waits for it to exit.
func killForGood(t *testing.T, nd *procNode) {
	t.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-nd.exited
}

// waitReplaced polls owner until the queue's replica set no longer holds
// dead and holds a node outside the original set, and returns the set and
// that node.
func (pc *procCluster) waitReplaced(ctx context.Context, owner, dead *procNode, original []uint32, timeout time.Duration) ([]uint32, *procNode) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var q status.Queue
	for time.Now().Before(deadline) {
		var ok bool
		if q, ok = queueOf(ctx, owner, replaceQueue); ok && q.State == "active" && !slices.Contains(q.Replicas, uint32(dead.id)) {
			for _, id := range q.Replicas {
				if !slices.Contains(original, id) {
					return q.Replicas, pc.nodes[id-1]
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	pc.t.Fatalf("n%d was not replaced within %v: %+v", dead.id, timeout, q)
	return nil, nil
}

// waitCaughtUp waits until nd follows owner in queue with the owner's
// last index.
func (pc *procCluster) waitCaughtUp(ctx context.Context, nd, owner *procNode, queue string, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var f, o status.Queue
	for time.Now().Before(deadline) {
		var ok1, ok2 bool
		f, ok1 = queueOf(ctx, nd, queue)
		o, ok2 = queueOf(ctx, owner, queue)
		if ok1 && ok2 && f.Role == "follower" && o.Role == "owner" && f.LastIndex == o.LastIndex && f.LastIndex > 0 {
			pc.t.Logf("n%d holds the owner's %d records", nd.id, f.LastIndex)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	pc.t.Fatalf("n%d did not catch up with n%d within %v: %+v vs %+v", nd.id, owner.id, timeout, f, o)
}
