package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lostDiskQueue is the queue the lost-disk test works on.
const lostDiskQueue = "lostdisk"

// TestProcessLostDisk runs three cairn-node processes and loses a
// follower's data directory:
//
//  1. started on a copy of another node's data directory, the follower
//     refuses to start and says whose directory it is;
//  2. started over an empty directory with --rejoin (the documented
//     procedure), it rejoins the metadata without panicking or voting
//     early and catches its replica up by replication;
//  3. the owner is then SIGKILLed for good: the queue fails over, and a
//     fresh subscriber receives every confirmed message (RPO = 0).
func TestProcessLostDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", `cluster = "lostdisk-test"`)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	confirmed := seedQueue(t, ctx, pc, lostDiskQueue, 300)

	owner := pc.owner(ctx, lostDiskQueue)
	lost := pc.others(owner)[0]
	killForGood(t, lost)
	refuseForeignDirectory(t, pc, lost, owner)

	dir := dataDirOf(lost)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("n%d lost its data directory; restarting it with --rejoin", lost.id)
	pc.start(lost, "--rejoin")
	pc.waitHealthy(lost, serviceBound)
	pc.waitCaughtUp(ctx, lost, owner, lostDiskQueue, serviceBound)

	epoch := viewOf(t, ctx, owner, lostDiskQueue).Epoch
	t.Logf("SIGKILL the owner n%d for good", owner.id)
	killForGood(t, owner)
	next, view, _ := pc.waitOwnerAbove(ctx, lostDiskQueue, epoch, pc.others(owner), serviceBound)
	t.Logf("n%d serves at epoch %d", next.id, view.Epoch)
	sub := subscribeCollector(t, ctx, pc.clientAddrs(), lostDiskQueue)
	defer sub.close()
	sub.waitAll(t, confirmed, 30*time.Second)
	t.Logf("RPO = 0: all %d confirmed messages delivered", len(confirmed))
}

// dataDirOf is nd's data directory, as its configuration names it.
func dataDirOf(nd *procNode) string {
	return filepath.Join(filepath.Dir(nd.config), fmt.Sprintf("n%d", nd.id))
}

// refuseForeignDirectory starts nd on a copy of other's data directory
// and requires it to exit at once, naming the directory's node.
func refuseForeignDirectory(t *testing.T, pc *procCluster, nd, other *procNode) {
	t.Helper()
	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dataDirOf(other), copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copying n%d's data directory: %v\n%s", other.id, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(pc.bin, "cairn-node"), "--config", nd.config, "--data-dir", copyDir).CombinedOutput()
	want := fmt.Sprintf("belongs to node %d of cluster", other.id)
	if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), fmt.Sprintf("but this is node %d", nd.id)) {
		t.Fatalf("n%d on n%d's data directory: %v, output:\n%s\nwant an exit naming it (%s)", nd.id, other.id, err, out, want)
	}
	t.Logf("n%d refused n%d's data directory", nd.id, other.id)
}
