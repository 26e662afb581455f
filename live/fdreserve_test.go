//go:build unix

package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// fdChildEnv marks the child process of TestFloodLeavesDescriptorsForDisk.
const fdChildEnv = "CAIRN_LIVE_FD_CHILD"

// The child runs with a small descriptor limit, of which fdReserveTest
// are kept for its files.
const (
	fdLimitTest   = 256
	fdReserveTest = 96
)

// TestFloodLeavesDescriptorsForDisk runs a node in a child process whose
// descriptor limit is 256, floods its three ports with 900 connections
// that never authenticate, and meanwhile has a client create queues and
// publish, which opens files and syncs them. The node must refuse what
// exceeds its socket budget and go on writing: before the budget, the
// flood took every descriptor and the node halted on its next file.
func TestFloodLeavesDescriptorsForDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	ch := startChild(t)
	clientAddr, httpAddr, peerAddr := readChildAddrs(t, ch.stdout)
	ctx := ctxFor(t, 60*time.Second)
	c, err := client.Dial(ctx, client.Options{Secret: testSecret, RequestTimeout: 5 * time.Second}, clientAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, addr := range []string{httpAddr, clientAddr, peerAddr} {
		openSilent(t, addr, 300)
	}
	for i := range 6 {
		q := fmt.Sprintf("q%d", i)
		if err := c.CreateQueue(ctx, q, client.PolicyMajority); err != nil {
			t.Fatalf("create %s during the flood: %v", q, err)
		}
		for j := range 20 {
			if _, err := c.Publish(ctx, q, fmt.Appendf(nil, "m%d", j)); err != nil {
				t.Fatalf("publish to %s during the flood: %v", q, err)
			}
		}
	}
	select {
	case <-ch.done:
		t.Fatalf("the node exited during the flood: %v", ch.err)
	default:
	}
	ch.stop()
	if !strings.Contains(ch.log.String(), "Limits.MaxConns") {
		t.Fatal("the flood never reached the socket budget, so the test proves nothing")
	}
}

// childNode is the child process of TestFloodLeavesDescriptorsForDisk.
type childNode struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	log    *syncBuffer
	done   chan struct{} // closed once it has exited
	err    error         // how it exited, once done is closed
}

// startChild starts the child and makes sure it stops when the test
// ends, showing its log if the test failed.
func startChild(t *testing.T) *childNode {
	t.Helper()
	ch := &childNode{log: &syncBuffer{}, done: make(chan struct{})}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^TestDescriptorLimitedNode$", "-test.v")
	ch.cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	ch.cmd.Stderr = ch.log
	ch.stdin, _ = ch.cmd.StdinPipe()
	ch.stdout, _ = ch.cmd.StdoutPipe()
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	t.Cleanup(func() {
		ch.stop()
		if t.Failed() {
			t.Logf("child's log:\n%s", tail(ch.log.String(), 30))
		}
	})
	return ch
}

// stop closes the child's input, which ends it, and waits for it; it
// kills a child that does not stop in time.
func (ch *childNode) stop() {
	ch.stdin.Close()
	select {
	case <-ch.done:
	case <-time.After(20 * time.Second):
		ch.cmd.Process.Kill()
		<-ch.done
	}
}

// readChildAddrs reads the child's "addrs CLIENT HTTP PEER" line.
func readChildAddrs(t *testing.T, r io.Reader) (string, string, string) {
	t.Helper()
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "addrs" {
				found <- f[1:]
			}
		}
	}()
	select {
	case f := <-found:
		return f[0], f[1], f[2]
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not start a node")
	}
	return "", "", ""
}

// TestDescriptorLimitedNode is the child of
// TestFloodLeavesDescriptorsForDisk: a node under a descriptor limit of
// fdLimitTest, with pre-authentication bounds high enough that only the
// socket budget stands between a flood and its files. It serves until
// its standard input closes.
func TestDescriptorLimitedNode(t *testing.T) {
	if os.Getenv(fdChildEnv) == "" {
		t.Skip("the child of TestFloodLeavesDescriptorsForDisk")
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = fdLimitTest
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	cfg := singleConfig(t)
	cfg.Exit = os.Exit
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.HandshakeTimeout = time.Minute
	cfg.Limits = Limits{FDReserve: fdReserveTest, MaxPreAuthConns: 1000, MaxPreAuthPerSource: 1000, MaxHTTPConns: 1000,
		HTTPReadHeaderTimeout: time.Minute}
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	fmt.Printf("addrs %s %s %s\n", rt.ClientAddr(), rt.HTTPAddr(), rt.PeerAddr())
	stopped := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(2 * time.Minute):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
