package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairnmq/cairn/storage"
)

// lostWritesQueue is the queue the lost-writes test works on.
const lostWritesQueue = "lostwrites"

// TestProcessOwnerDiskLosesSyncedRecords is the attack probe that found
// the lying-disk loss, on real processes: three nodes, 100 confirmed
// messages on a majority queue, every node stopped, the owner's disk
// loses the last 20 records it had acknowledged as synced, every node
// restarted. The owner must prove what it holds against its followers
// before it serves again, so a fresh subscriber receives all 100. Before
// that rule, the owner came back at a new epoch with its shortened log,
// its epoch marker made both followers drop the 20 records, and they
// were gone.
func TestProcessOwnerDiskLosesSyncedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	const published, lost = 100, 20
	pc := startHealthy(t, 3, "info", "")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	confirmed := seedQueue(t, ctx, pc, lostWritesQueue, published)
	owner := pc.owner(ctx, lostWritesQueue)
	for _, f := range pc.others(owner) {
		pc.waitCaughtUp(ctx, f, owner, lostWritesQueue, serviceBound)
	}

	for _, nd := range pc.nodes {
		killForGood(t, nd)
	}
	logDirs, err := filepath.Glob(filepath.Join(dataDirOf(owner), "queues", lostWritesQueue+".*", "log"))
	if err != nil || len(logDirs) != 1 {
		t.Fatalf("n%d's log of %s: %v, %v", owner.id, lostWritesQueue, logDirs, err)
	}
	cut, from, err := storage.LoseLastFrames(vfs.Default, logDirs[0], lost)
	if err != nil || cut != lost {
		t.Fatalf("losing %d records on n%d: cut %d, %v", lost, owner.id, cut, err)
	}
	t.Logf("every node stopped; n%d's disk lost its last %d synced records (from index %d)", owner.id, cut, from)

	for _, nd := range pc.nodes {
		pc.start(nd)
	}
	for _, nd := range pc.nodes {
		pc.waitHealthy(nd, serviceBound)
	}
	sub := subscribeCollector(t, ctx, pc.clientAddrs(), lostWritesQueue)
	defer sub.close()
	sub.waitAll(t, confirmed, 30*time.Second)
	t.Logf("RPO = 0: all %d confirmed messages delivered after the owner's disk lied", len(confirmed))
}
