package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// A node on real files checkpoints a queue, drops the segments the
// certified cut covers, reports it on /status and /metrics, and after a
// restart serves every message it held, from the checkpoint plus the
// retained suffix.
func TestCheckpointCompactsAndSurvivesRestart(t *testing.T) {
	cfg := singleConfig(t)
	cfg.Node.CheckpointRecords, cfg.Node.SegmentSize = 20, 4<<10
	tn := start(t, cfg)
	c := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 60*time.Second)
	if err := c.CreateQueue(ctx, "orders", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	const total = 300
	payload := bytes.Repeat([]byte("x"), 200)
	for i := range total {
		if _, err := c.Publish(ctx, "orders", fmt.Appendf(bytes.Clone(payload), "%d", i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	var q status.Queue
	// Compaction follows the certificates, each a build behind the last
	// publish: wait until the log keeps less than was published.
	waitFor(t, 20*time.Second, "a certified checkpoint and a compacted log", func() bool {
		for _, v := range tn.Status().Queues {
			if v.Name == "orders" {
				q = v
			}
		}
		return q.CertifiedIndex > 0 && q.FirstIndex > 1 && q.RetainedBytes < int64(total*len(payload))
	})
	if q.CheckpointAgeSeconds <= 0 || q.CheckpointAgeSeconds > 60 {
		t.Errorf("checkpoint age %v s, want a small positive age", q.CheckpointAgeSeconds)
	}
	metrics := scrape(t, tn.HTTPAddr())
	for _, series := range []string{`cairn_queue_retained_bytes{queue="orders"}`, `cairn_queue_certified_index{queue="orders"}`,
		`cairn_queue_checkpoint_age_seconds{queue="orders"}`} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	c.Close()
	tn.stop(t)

	tn = start(t, cfg)
	c = dial(t, tn.ClientAddr())
	var mu sync.Mutex
	seen := make(map[client.MessageID]bool)
	sub, err := c.Subscribe(ctx, "orders", func(ctx context.Context, d *client.Delivery) {
		mu.Lock()
		seen[d.ID] = true
		mu.Unlock()
		d.Ack(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	waitFor(t, 30*time.Second, "every message delivered after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == total
	})
}

// scrape reads /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
