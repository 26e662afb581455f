package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// startHTTPNode serves a one-node cluster that names its HTTP address,
// as a deployment does, and returns the connection flags that reach it.
func startHTTPNode(t *testing.T) []string {
	t.Helper()
	clientAddr, httpAddr := closedAddr(t), closedAddr(t)
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1, ClientAddr: clientAddr, HTTPAddr: httpAddr}},
		DataDir: t.TempDir(), ClientListen: clientAddr, PeerListen: "127.0.0.1:0", HTTPListen: httpAddr,
		ClientSecret: []byte(testSecret), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return []string{"--addrs", rt.ClientAddr(), "--secret", testSecret, "--timeout", "20s"}
}

// queue stats reads the queues as the dashboard builds them: the owner's
// backlog, and rates from two readings --interval apart, here while a
// publisher runs; --json prints the same figures for tools.
func TestQueueStatsReadsTheCluster(t *testing.T) {
	conn := startHTTPNode(t)
	createQueue(t, conn, "stats")
	createQueue(t, conn, "other")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(testSecret)}, conn[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 5 {
		if _, err := c.Publish(ctx, "stats", []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for pubCtx.Err() == nil {
			c.Publish(pubCtx, "stats", []byte("during"))
		}
	})
	code, out := cli(t, "", append([]string{"queue", "stats", "stats", "--json", "--interval", "500ms"}, conn...)...)
	stopPub()
	wg.Wait()
	if code != exitOK {
		t.Fatalf("queue stats --json: status %d\n%s", code, out)
	}
	var doc queueStatsDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("queue stats --json printed no JSON: %v\n%s", err, out)
	}
	if len(doc.Queues) != 1 || doc.Queues[0].Name != "stats" {
		t.Fatalf("queues %+v, want only the one named", doc.Queues)
	}
	q := doc.Queues[0]
	if !q.Serving || q.Owner != 1 || q.Depth == nil || q.Depth.Ready < 5 || q.Rates == nil || q.Rates.Publish <= 0 {
		t.Errorf("queue %+v (depth %+v, rates %+v): want served by n1, at least 5 ready, a positive publish rate", q, q.Depth, q.Rates)
	}
	if doc.IntervalSeconds != 0.5 || len(doc.Nodes) != 1 || doc.Nodes[0].State != "serving" {
		t.Errorf("interval %v, nodes %+v: want 0.5s and n1 serving", doc.IntervalSeconds, doc.Nodes)
	}

	code, out = cli(t, "", append([]string{"queue", "stats", "--interval", "0"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "stats") || !strings.Contains(out, "other") ||
		!strings.Contains(out, "rates need two readings") {
		t.Errorf("queue stats --interval 0: status %d, want both queues and a note on rates\n%s", code, out)
	}
	if code, out := cli(t, "", append([]string{"queue", "stats", "--interval", "-1s"}, conn...)...); code != exitUsage {
		t.Errorf("a negative interval: status %d, want %d\n%s", code, exitUsage, out)
	}
}

// With a node down and a replica fenced, every row of the table keeps
// one word per column, and what went wrong is noted under the table.
func TestQueueStatsTableStaysIntact(t *testing.T) {
	lag := func(n uint64) *uint64 { return &n }
	downErr := `Get "http://127.0.0.1:7202/status": dial tcp 127.0.0.1:7202: connect: connection refused`
	doc := &queueStatsDoc{
		IntervalSeconds: 1,
		Nodes: []status.ClusterNode{
			{ID: 1, State: "serving"},
			{ID: 2, State: "down", Error: downErr},
			{ID: 3, State: "serving"},
		},
		Queues: []status.ClusterQueue{
			{Name: "orders", State: "active", Owner: 1, Epoch: 3, Serving: true, RetainedBytes: 3 << 20,
				Depth: &status.Depth{Ready: 7, Leased: 2, Consumers: 1}, Rates: &status.Rates{Publish: 12.5, Deliver: 3, Ack: 2},
				CheckpointAgeSeconds: 75,
				Replicas: []status.ReplicaLag{{Node: 1, Lag: lag(0)}, {Node: 2, Role: "unknown"},
					{Node: 3, Lag: lag(4), Fenced: "checksum mismatch at index 9"}}},
			{Name: "stuck", State: "active", Owner: 2, Epoch: 1,
				Replicas: []status.ReplicaLag{{Node: 2, Role: "unknown"}, {Node: 1}, {Node: 3}}},
		},
	}
	var b bytes.Buffer
	printStats(&b, doc)
	out := b.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := strings.Fields(lines[0])
	columns := len(header) - 2 // CHECKPOINT AGE and REPLICA LAG are two words each
	for _, l := range lines[1:3] {
		if got := len(strings.Fields(l)); got != columns {
			t.Errorf("row %q has %d cells, want %d", l, got, columns)
		}
	}
	want := [][]string{
		{"orders", "active", "n1", "3", "7", "2", "0", "1", "12.5", "3.0", "2.0", "3.0MiB", "1m15s", "n1:0,n2:?,n3:4"},
		{"stuck", "unserved", "n2", "1", "-", "-", "-", "-", "-", "-", "-", "0B", "-", "n2:?,n1:?,n3:?"},
	}
	for i, w := range want {
		if got := strings.Fields(lines[1+i]); !slices.Equal(got, w) {
			t.Errorf("row %d is %q, want %q", i, got, w)
		}
	}
	notes := strings.Join(lines[3:], "\n")
	if !strings.Contains(notes, "n2 is down: "+downErr) || !strings.Contains(notes, "orders: the replica on n3 is fenced: checksum mismatch") {
		t.Errorf("the notes under the table miss the down node or the fenced replica:\n%s", out)
	}
	if strings.Count(out, downErr) != 1 {
		t.Errorf("the error appears other than once, in its note:\n%s", out)
	}
}
