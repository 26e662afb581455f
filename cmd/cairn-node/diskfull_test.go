package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// TestProcessDiskFull runs three processes with a small data quota:
// publishing until a node's queues pass it gets a clear disk-full answer
// (the message not stored), no node exits, everything confirmed before is
// still delivered, and once the consumer has drained the queue and
// compaction has given the space back, publishes are taken again on
// their own.
func TestProcessDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", "max_data_bytes = 2000000\nsegment_bytes = 65536\ncheckpoint_records = 100\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := dialCluster(t, ctx, pc.clientAddrs())
	defer c.Close()
	createWhenReady(t, ctx, c, "full", client.PolicyMajority)

	payload := bytes.Repeat([]byte("d"), 1024)
	var confirmed []client.MessageID
	var full *client.StatusError
	for len(confirmed) < 20_000 && full == nil {
		id, err := c.Publish(ctx, "full", payload)
		var se *client.StatusError
		switch {
		case err == nil:
			confirmed = append(confirmed, id)
		case errors.As(err, &se) && se.Status == client.StatusDiskFull:
			full = se
		default:
			t.Fatalf("publish %d: %v", len(confirmed), err)
		}
	}
	if full == nil {
		t.Fatalf("%d publishes of 1 KiB under a 2 MB quota and none was refused", len(confirmed))
	}
	t.Logf("refused after %d confirmed publishes: %v", len(confirmed), full)
	if !strings.Contains(full.Error(), "disk-full") || !strings.Contains(full.Detail, "deliveries and acks go on") {
		t.Errorf("the refusal does not say what happened: %q", full.Error())
	}
	for _, nd := range pc.nodes {
		select {
		case <-nd.exited:
			t.Fatalf("n%d exited on a full disk: %v", nd.id, nd.err)
		default:
		}
	}

	receiveAll(t, ctx, c, "full", confirmed)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.Publish(ctx, "full", payload)
		if err == nil {
			break
		}
		var se *client.StatusError
		if !errors.As(err, &se) || se.Status != client.StatusDiskFull || time.Now().After(deadline) {
			t.Fatalf("after the queue was drained, a publish still fails: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
