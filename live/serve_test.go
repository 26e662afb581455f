package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// TestSingleNodeServesAClient publishes, consumes and acks through one
// node over TCP.
func TestSingleNodeServesAClient(t *testing.T) {
	tn := start(t, singleConfig(t))
	c := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 10*time.Second)
	if err := c.CreateQueue(ctx, "jobs", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	var sent []client.MessageID
	for i := range 20 {
		id, err := c.Publish(ctx, "jobs", fmt.Appendf(nil, "job %d", i))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		sent = append(sent, id)
	}
	got := make(chan client.MessageID, len(sent))
	_, err := c.Subscribe(ctx, "jobs", func(ctx context.Context, d *client.Delivery) {
		if err := d.Ack(ctx); err != nil {
			t.Errorf("ack %s: %v", d.ID, err)
		}
		got <- d.ID
	})
	if err != nil {
		t.Fatal(err)
	}
	var received []client.MessageID
	for range sent {
		select {
		case id := <-got:
			received = append(received, id)
		case <-ctx.Done():
			t.Fatalf("received %d of %d messages", len(received), len(sent))
		}
	}
	if !slices.Equal(received, sent) {
		t.Fatalf("received %v, want %v", received, sent)
	}
}

// TestClientErrorsAreTyped checks that a definite failure carries its
// status and is not reported as unknown.
func TestClientErrorsAreTyped(t *testing.T) {
	tn := start(t, singleConfig(t))
	c := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 10*time.Second)
	_, err := c.Publish(ctx, "missing", []byte("x"))
	var se *client.StatusError
	if !errors.As(err, &se) || se.Status != client.StatusNoQueue {
		t.Fatalf("publish to a missing queue: %v, want a StatusError with no-queue", err)
	}
	if errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("a definite failure reported as unknown: %v", err)
	}
	if err := c.CreateQueue(ctx, "q", client.PolicyAll); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateQueue(ctx, "q", client.PolicyAll); !errors.As(err, &se) || se.Status != client.StatusQueueExists {
		t.Fatalf("second create: %v, want queue-exists", err)
	}
}

// TestThreeNodesReplicate runs a cluster in one process: peers connect,
// publishes are confirmed through the owner wherever the client starts,
// and the status page shows the replicas.
func TestThreeNodesReplicate(t *testing.T) {
	var nodes []*testNode
	var addrs []string
	for _, cfg := range clusterConfigs(t, 3) {
		tn := start(t, cfg)
		nodes = append(nodes, tn)
		addrs = append(addrs, tn.ClientAddr())
	}
	for _, tn := range nodes {
		waitFor(t, 5*time.Second, "peers to connect", func() bool {
			s := tn.Status()
			return !slices.ContainsFunc(s.Peers, func(p status.Peer) bool { return !p.Connected })
		})
	}
	waitFor(t, 10*time.Second, "a metadata leader", func() bool {
		return slices.ContainsFunc(nodes, func(tn *testNode) bool { return tn.Status().LeaderTerm > 0 })
	})
	c := dial(t, addrs[2])
	ctx := ctxFor(t, 10*time.Second)
	for _, q := range []string{"a", "b", "c", "d"} {
		if err := c.CreateQueue(ctx, q, client.PolicyAll); err != nil {
			t.Fatalf("create %s: %v", q, err)
		}
		for i := range 5 {
			if _, err := c.Publish(ctx, q, []byte{byte(i)}); err != nil {
				t.Fatalf("publish to %s: %v", q, err)
			}
		}
	}
	// Under PolicyAll every replica holds every record durably.
	for _, tn := range nodes {
		defer func() {
			if t.Failed() {
				t.Logf("%+v", tn.Status())
			}
		}()
		waitFor(t, 5*time.Second, "replicas to report", func() bool {
			s := tn.Status()
			if len(s.Queues) != 4 {
				return false
			}
			for _, q := range s.Queues {
				if q.LastIndex < 5 || q.Epoch == 0 {
					return false
				}
			}
			return true
		})
	}
	s, err := status.FetchAuth(ctx, nodes[0].HTTPAddr(), status.Auth{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	owners := 0
	for _, q := range s.Queues {
		if q.Role == "owner" {
			owners++
		}
	}
	if s.ID != 1 || len(s.Queues) != 4 || s.MetaLeader == 0 || !strings.Contains(fmt.Sprint(s.Peers), "true") {
		t.Fatalf("unexpected status %+v", s)
	}
	t.Logf("node 1 owns %d of 4 queues", owners)
}

// /status shows each queue's deduplication window: the one it was
// created with, or the node's default, marked as such.
func TestStatusShowsEachQueuesDedupWindow(t *testing.T) {
	cfg := singleConfig(t)
	cfg.Node.DedupWindow = 3 * time.Minute
	tn := start(t, cfg)
	c := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 20*time.Second)
	if err := c.CreateQueue(ctx, "short", client.PolicyMajority, client.WithDedupWindow(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateQueue(ctx, "plain", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range tn.Status().Queues {
		got[q.Name] = fmt.Sprintf("%vs default=%t", q.DedupWindowSeconds, q.DedupDefault)
	}
	want := map[string]string{"short": "5s default=false", "plain": "180s default=true"}
	if !maps.Equal(got, want) {
		t.Fatalf("/status shows windows %v, want %v", got, want)
	}
}
