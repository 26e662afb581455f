package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	if err := copyLiveDir(dataDirOf(other), copyDir); err != nil {
		t.Fatalf("copying n%d's data directory: %v", other.id, err)
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

// copyLiveDir copies the directory tree src, which a running node is
// writing, to dst. A file that goes away between the listing and the copy
// (a state file's temporary, renamed meanwhile) is left out, as an
// operator's copy of a live directory would race it: cp -a failed the
// test on such a file once.
func copyLiveDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
}
