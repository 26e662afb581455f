package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/loopback"
	"github.com/cairnmq/cairn/node"
)

// The test clusters' secrets, one per role.
var (
	testSecret      = []byte("test-client-secret")
	testPeerSecret  = []byte("test-peer-secret")
	testAdminSecret = []byte("test-admin-secret")
)

// syncBuffer is a goroutine-safe log sink the tests can search.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testNode is a runtime serving in the background of a test.
type testNode struct {
	*Runtime
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// freeAddrs reserves n loopback addresses outside the ephemeral port
// range, so the members can name each other before any node starts.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs, err := loopback.Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// clusterConfigs returns configurations for an n-node cluster on
// loopback, each with its own data directory.
func clusterConfigs(t *testing.T, n int) []Config {
	addrs := freeAddrs(t, 2*n)
	var members []Member
	for i := range n {
		members = append(members, Member{ID: node.NodeID(i + 1), PeerAddr: addrs[2*i], ClientAddr: addrs[2*i+1]})
	}
	var cfgs []Config
	for i := range n {
		cfgs = append(cfgs, Config{
			Node: node.Config{ID: node.NodeID(i + 1), Replicas: n}, Members: members,
			DataDir: t.TempDir(), ClientListen: members[i].ClientAddr, PeerListen: members[i].PeerAddr,
			HTTPListen: "127.0.0.1:0", ClientSecret: testSecret, PeerSecret: testPeerSecret, AdminSecret: testAdminSecret,
			Exit: func(code int) { t.Errorf("node %d exited with status %d", i+1, code) },
		})
	}
	return cfgs
}

// singleConfig is a one-node cluster whose ports the kernel picks.
func singleConfig(t *testing.T) Config {
	return Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []Member{{ID: 1}},
		DataDir: t.TempDir(), ClientListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		ClientSecret: testSecret, PeerSecret: testPeerSecret, AdminSecret: testAdminSecret,
		Exit: func(code int) { t.Errorf("node exited with status %d", code) },
	}
}

// start runs a node until the test ends, logging into a buffer.
func start(t *testing.T, cfg Config) *testNode {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testNode{Runtime: rt, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { tn.done <- rt.Run(ctx) }()
	t.Cleanup(func() { tn.stop(t) })
	if len(cfg.Members) == 1 {
		// A one-node cluster serves once it has elected itself; on a
		// loaded machine that can outlast a client's retry budget.
		waitFor(t, 10*time.Second, "the node to lead its metadata", func() bool { return rt.Status().MetaLeader != 0 })
	}
	return tn
}

// stop drains the node and waits for Run to return; stopping a stopped
// node does nothing.
func (tn *testNode) stop(t *testing.T) {
	tn.cancel()
	select {
	case err, ok := <-tn.done:
		if ok && err != nil {
			t.Errorf("Run: %v", err)
		}
		if ok {
			close(tn.done) // a second stop (the cleanup) finds it closed
		}
	case <-time.After(10 * time.Second):
		t.Errorf("node did not stop within 10s")
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dial connects a client to the given client addresses.
func dial(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Secret: testSecret, RequestTimeout: 2 * time.Second}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxFor returns a context bounded for one test step.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// logsMention reports whether the node logged a line containing every
// fragment.
func (tn *testNode) logsMention(fragments ...string) bool {
	for _, line := range strings.Split(tn.logs.String(), "\n") {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(line, f)
		}
		if all {
			return true
		}
	}
	return false
}

func (tn *testNode) String() string { return fmt.Sprintf("node at %s", tn.ClientAddr()) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
