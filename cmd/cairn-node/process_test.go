package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/loopback"
)

// The process clusters' secrets, one per role. processSecret is the
// client secret, what the tests' clients hold.
const (
	processSecret      = "process-test-client-secret"
	processPeerSecret  = "process-test-peer-secret"
	processAdminSecret = "process-test-admin-secret"
)

// procNode is one cairn-node process of a test cluster.
type procNode struct {
	id         int
	config     string
	clientAddr string
	httpAddr   string
	log        string
	netns      string // the network namespace it runs in; empty: the test's own
	cmd        *exec.Cmd
	exited     chan struct{} // closed once the process has exited
	err        error         // how it exited, once exited is closed
}

// procAddrs are where one node of a test cluster listens: for peers, for
// clients and for HTTP. netns, when set, is the network namespace the
// node runs in, where these addresses exist.
type procAddrs struct {
	peer, client, http string
	netns              string
}

// loopbackAddrs reserves the addresses of an n-node cluster on loopback.
func loopbackAddrs(t *testing.T, n int) []procAddrs {
	addrs := freeAddrs(t, 3*n)
	out := make([]procAddrs, n)
	for i := range out {
		out[i] = procAddrs{peer: addrs[3*i], client: addrs[3*i+1], http: addrs[3*i+2]}
	}
	return out
}

// procCluster is a cluster of real cairn-node processes on loopback.
type procCluster struct {
	t     *testing.T
	bin   string
	nodes []*procNode
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

// buildBinaries compiles the commands under test into dir.
func buildBinaries(t *testing.T, dir string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binaries with")
	}
	for _, pkg := range []string{".", "../cairn"} {
		name := filepath.Base(pkg)
		if pkg == "." {
			name = "cairn-node"
		}
		out, err := exec.Command(goTool, "build", "-buildvcs=false", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
}

// newProcCluster writes configurations for n nodes logging at level
// (debug logs every node event, which the failover test reads) and starts
// them.
func newProcCluster(t *testing.T, bin string, n int, level string) *procCluster {
	return newProcClusterWith(t, bin, n, level, "")
}

// newProcClusterWith is newProcCluster with extra top-level configuration
// lines in every node's file.
func newProcClusterWith(t *testing.T, bin string, n int, level, extra string) *procCluster {
	return newProcClusterAt(t, bin, loopbackAddrs(t, n), level, extra)
}

// newProcClusterAt is newProcClusterWith for nodes at the given
// addresses, one node for each.
func newProcClusterAt(t *testing.T, bin string, addrs []procAddrs, level, extra string) *procCluster {
	root := t.TempDir()
	var peers strings.Builder
	for i, a := range addrs {
		fmt.Fprintf(&peers, "[[peers]]\nid = %d\naddr = %q\nclient_addr = %q\nhttp_addr = %q\n\n",
			i+1, a.peer, a.client, a.http)
	}
	pc := &procCluster{t: t, bin: bin}
	for i, a := range addrs {
		nd := &procNode{id: i + 1, clientAddr: a.client, httpAddr: a.http, netns: a.netns,
			config: filepath.Join(root, fmt.Sprintf("n%d.toml", i+1)), log: filepath.Join(root, fmt.Sprintf("n%d.log", i+1))}
		text := fmt.Sprintf("id = %d\ndata_dir = \"n%d\"\npeer_secret = %q\nclient_secret = %q\nadmin_secret = %q\nlog_level = %q\n%s\n%s",
			i+1, i+1, processPeerSecret, processSecret, processAdminSecret, level, extra, peers.String())
		if err := os.WriteFile(nd.config, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		pc.nodes = append(pc.nodes, nd)
		pc.start(nd)
	}
	t.Cleanup(pc.killAll)
	return pc
}

// start launches nd's process with any extra flags, appending to its log.
func (pc *procCluster) start(nd *procNode, flags ...string) {
	logf, err := os.OpenFile(nd.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		pc.t.Fatal(err)
	}
	args := append([]string{filepath.Join(pc.bin, "cairn-node"), "--config", nd.config}, flags...)
	if nd.netns != "" {
		args = append([]string{"ip", "netns", "exec", nd.netns}, args...)
	}
	nd.cmd = exec.Command(args[0], args[1:]...)
	nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
	if nd.netns != "" {
		// ip execs the node in its place, so the node is this child
		// itself; it must not outlive a test binary that dies without
		// its cleanups (a timeout's panic), or its namespace would stay.
		nd.cmd.SysProcAttr = diesWithTest()
	}
	if err := nd.cmd.Start(); err != nil {
		pc.t.Fatal(err)
	}
	exited := make(chan struct{})
	nd.exited = exited
	go func() {
		nd.err = nd.cmd.Wait()
		logf.Close()
		close(exited)
	}()
}

// killAll kills every process still running and, if the test failed,
// shows the end of each node's log.
func (pc *procCluster) killAll() {
	for _, nd := range pc.nodes {
		select {
		case <-nd.exited:
		default:
			nd.cmd.Process.Kill()
			<-nd.exited
		}
		if pc.t.Failed() {
			b, _ := os.ReadFile(nd.log)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			pc.t.Logf("--- n%d log (last lines) ---\n%s", nd.id, strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	}
}

// waitHealthy waits until nd answers /healthz with 200.
func (pc *procCluster) waitHealthy(nd *procNode, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + nd.httpAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	pc.t.Fatalf("n%d not healthy after %v", nd.id, timeout)
}

// startHealthy builds the binaries, starts n nodes with extra top-level
// configuration lines in each node's file, and waits until every node
// answers /healthz.
func startHealthy(t *testing.T, n int, level, extra string) *procCluster {
	t.Helper()
	bin := t.TempDir()
	buildBinaries(t, bin)
	pc := newProcClusterWith(t, bin, n, level, extra)
	for _, nd := range pc.nodes {
		pc.waitHealthy(nd, serviceBound)
	}
	return pc
}

// seedQueue creates a majority queue through a client of its own and
// publishes count messages to it, returning the IDs confirmed.
func seedQueue(t *testing.T, ctx context.Context, pc *procCluster, queue string, count int) []client.MessageID {
	t.Helper()
	c := dialCluster(t, ctx, pc.clientAddrs())
	defer c.Close()
	createWhenReady(t, ctx, c, queue, client.PolicyMajority)
	return publishMany(t, ctx, c, queue, count)
}

// owner finds the node whose /status says it owns queue.
func (pc *procCluster) owner(ctx context.Context, queue string) *procNode {
	for _, nd := range pc.nodes {
		s, err := status.FetchAuth(ctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
		if err != nil {
			continue
		}
		for _, q := range s.Queues {
			if q.Name == queue && q.Role == "owner" {
				return nd
			}
		}
	}
	pc.t.Fatalf("no node reports owning %s", queue)
	return nil
}

func (pc *procCluster) clientAddrs() []string {
	var out []string
	for _, nd := range pc.nodes {
		out = append(out, nd.clientAddr)
	}
	return out
}

// TestProcessKillOwnerLosesNothingConfirmed runs three cairn-node
// processes, publishes 1,000 messages, SIGKILLs the queue's owner and
// restarts it, and checks that every confirmed message is delivered (RPO
// = 0) and that publishing works again. It also checks that a second
// process cannot take a data directory in use, and that SIGTERM drains
// and exits 0.
func TestProcessKillOwnerLosesNothingConfirmed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", "")
	bin := pc.bin
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	confirmed := seedQueue(t, ctx, pc, "e2e", 1000)
	if len(confirmed) < 900 {
		t.Fatalf("only %d of 1000 publishes confirmed on a healthy cluster", len(confirmed))
	}

	owner := pc.owner(ctx, "e2e")
	t.Logf("%d publishes confirmed; killing the owner, n%d", len(confirmed), owner.id)
	owner.cmd.Process.Signal(syscall.SIGKILL)
	<-owner.exited
	pc.start(owner)
	pc.waitHealthy(owner, 15*time.Second)

	c2 := dialCluster(t, ctx, pc.clientAddrs())
	defer c2.Close()
	receiveAll(t, ctx, c2, "e2e", confirmed)
	if again := publishMany(t, ctx, c2, "e2e", 10); len(again) != 10 {
		t.Fatalf("after the restart only %d of 10 publishes were confirmed", len(again))
	}
	checkCLI(t, ctx, bin, pc.clientAddrs())
	checkLockedDataDir(t, pc, bin)
	checkSIGTERM(t, pc.nodes[(owner.id)%3])
}

func dialCluster(t *testing.T, ctx context.Context, addrs []string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, client.Options{Secret: []byte(processSecret)}, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// publishMany publishes n messages with many in flight and returns the
// IDs of those confirmed. A definite failure fails the test; an unknown
// outcome is allowed (and logged) but not counted as confirmed.
func publishMany(t *testing.T, ctx context.Context, c *client.Client, queue string, n int) []client.MessageID {
	t.Helper()
	var pending []*client.Publishing
	for i := range n {
		pending = append(pending, c.PublishAsync(ctx, queue, fmt.Appendf(nil, "message %d", i)))
	}
	var ids []client.MessageID
	unknown := 0
	for _, p := range pending {
		id, err := p.Wait()
		switch {
		case err == nil:
			ids = append(ids, id)
		case errors.Is(err, client.ErrUnknownOutcome):
			unknown++
		default:
			t.Fatalf("publish %s failed: %v", id, err)
		}
	}
	if unknown > 0 {
		t.Logf("%d of %d publishes ended with an unknown outcome", unknown, n)
	}
	return ids
}

// receiveAll subscribes and acks until every ID in want was delivered.
func receiveAll(t *testing.T, ctx context.Context, c *client.Client, queue string, want []client.MessageID) {
	t.Helper()
	got := make(chan client.MessageID, 4096)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	_, err := c.Subscribe(sctx, queue, func(ctx context.Context, d *client.Delivery) {
		d.Ack(ctx)
		got <- d.ID
	}, client.WithWindow(256))
	if err != nil {
		t.Fatal(err)
	}
	missing := make(map[client.MessageID]bool, len(want))
	for _, id := range want {
		missing[id] = true
	}
	deadline := time.After(30 * time.Second)
	for len(missing) > 0 {
		select {
		case id := <-got:
			delete(missing, id)
		case <-deadline:
			var some []string
			for id := range missing {
				some = append(some, id.String())
			}
			slices.Sort(some)
			t.Fatalf("%d confirmed messages never delivered, e.g. %v", len(missing), some[:min(5, len(some))])
		}
	}
}

// checkCLI runs the cairn CLI against the cluster.
func checkCLI(t *testing.T, ctx context.Context, bin string, addrs []string) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "cairn"), "queue", "list",
		"--addrs", strings.Join(addrs, ","), "--secret", processSecret)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("e2e")) || !bytes.Contains(out, []byte("active")) {
		t.Fatalf("cairn queue list: %v\n%s", err, out)
	}
}

// checkLockedDataDir starts a second process on a node's configuration
// (and so its data directory): it must refuse, naming the reason.
func checkLockedDataDir(t *testing.T, pc *procCluster, bin string) {
	out, err := exec.Command(filepath.Join(bin, "cairn-node"), "--config", pc.nodes[0].config).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("in use by another process")) {
		t.Fatalf("a second process on a data directory in use: %v\n%s", err, out)
	}
}

// checkSIGTERM stops nd with SIGTERM: it must drain and exit 0 promptly.
func checkSIGTERM(t *testing.T, nd *procNode) {
	began := time.Now()
	nd.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-nd.exited:
		if nd.err != nil {
			t.Fatalf("n%d after SIGTERM: %v", nd.id, nd.err)
		}
		t.Logf("n%d drained and exited 0 in %v", nd.id, time.Since(began).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("n%d still running 10s after SIGTERM", nd.id)
	}
}
