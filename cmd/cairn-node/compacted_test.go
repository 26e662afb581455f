package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// TestProcessFailoverAfterCompaction runs three processes that checkpoint
// every 100 records in 64 KiB segments, so every replica has dropped most
// of its log by the time the owner is SIGKILLed. (It first found a log
// whose active segment outgrew the segment size during a burst and never
// rolled once the burst ended, so compaction could drop none of it.) The recovery works from
// checkpoints and the retained suffix: every confirmed message is still
// delivered, and the killed node, restarted, catches up and compacts too.
func TestProcessFailoverAfterCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", "checkpoint_records = 100\nsegment_bytes = 65536\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := dialCluster(t, ctx, pc.clientAddrs())
	defer c.Close()
	createWhenReady(t, ctx, c, failoverQueue, client.PolicyMajority)
	payload := bytes.Repeat([]byte("c"), 1024)
	var pending []*client.Publishing
	for range 2000 {
		pending = append(pending, c.PublishAsync(ctx, failoverQueue, payload))
	}
	var ids []client.MessageID
	for _, p := range pending {
		if id, err := p.Wait(); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) < 1900 {
		t.Fatalf("only %d of 2000 publishes confirmed on a healthy cluster", len(ids))
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(serviceBound)
		for !cond() {
			if time.Now().After(deadline) {
				for _, nd := range pc.nodes {
					q, _ := queueOf(ctx, nd, failoverQueue)
					t.Logf("n%d: %s first %d last %d checkpoint %d certified %d retained %d", nd.id, q.Role, q.FirstIndex, q.LastIndex,
						q.CheckpointIndex, q.CertifiedIndex, q.RetainedBytes)
				}
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The burst outruns the checkpoints; once it stops they catch up,
	// and every replica drops nearly all of its log.
	waitFor("every replica to compact nearly all of its log", func() bool {
		for _, nd := range pc.nodes {
			if q, ok := queueOf(ctx, nd, failoverQueue); !ok || q.FirstIndex < 1000 || q.CertifiedIndex < 1900 {
				return false
			}
		}
		return true
	})
	old := pc.owner(ctx, failoverQueue)
	oldView := viewOf(t, ctx, old, failoverQueue)
	t.Logf("%d confirmed; every replica compacted (owner n%d retains %d bytes from index %d, certified %d); SIGKILL the owner",
		len(ids), old.id, oldView.RetainedBytes, oldView.FirstIndex, oldView.CertifiedIndex)
	old.cmd.Process.Kill()
	<-old.exited
	owner, _, _ := pc.waitOwnerAbove(ctx, failoverQueue, oldView.Epoch, pc.others(old), serviceBound)
	receiveAll(t, ctx, c, failoverQueue, ids)
	if again := publishMany(t, ctx, c, failoverQueue, 10); len(again) != 10 {
		t.Fatalf("after the failover only %d of 10 publishes were confirmed", len(again))
	}
	restartAsFollower(t, ctx, pc, old, owner)
}
