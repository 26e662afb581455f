package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devBasePortFree picks a base port for a dev cluster of n nodes whose
// ports (base+i, base+100+i, base+200+i) are all free right now. They lie
// below 32768, where Linux starts handing out ephemeral ports: the
// connections other tests open at the same time cannot take one between
// this check and the cluster's bind.
func devBasePortFree(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(12000)
		free := true
		for i := 1; i <= n && free; i++ {
			for _, port := range []int{base + i, base + 100 + i, base + 200 + i} {
				ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return base
		}
	}
	t.Fatal("found no free range of ports for a dev cluster")
	return 0
}

// startGroup starts cmd as the leader of a new process group, which the
// test kills whole when it ends: whatever the command leaves behind,
// an orphaned node included, stays in that group. It returns the lines
// the command and its children write to stdout. Both output streams are
// plain files, so that waiting for cmd never waits for a child that
// still holds them, and the stdout pipe stays open for as long as any
// of them runs.
func startGroup(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if t.Failed() {
			out, _ := os.ReadFile(stderr.Name())
			t.Logf("stderr:\n%s", out)
		}
		stderr.Close()
	})
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// waitLine reads lines until one starts with prefix.
func waitLine(t *testing.T, lines <-chan string, prefix string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the output ended without a line starting %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-deadline:
			t.Fatalf("no line starting %q within %v", prefix, timeout)
		}
	}
}

// listening reports whether something accepts connections on port.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// `make cluster` stopped by a SIGTERM to make alone (not to its process
// group) stops the cluster before make exits. It used to `go run` the
// cluster: go exited on the signal and the cluster ran on, orphaned.
func TestMakeClusterStopsWithMake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn-node and runs a dev cluster; skipped in -short")
	}
	makeTool, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make command")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on the PATH for make to build cairn-node with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Reading the Makefile makes the test cache key on it, so a changed
	// target is tested again.
	if mk, err := os.ReadFile(filepath.Join(root, "Makefile")); err != nil || !strings.Contains(string(mk), "\ncluster:") {
		t.Fatalf("no cluster target in the Makefile (%v)", err)
	}
	base := devBasePortFree(t, 3)
	cmd := exec.Command(makeTool, "-s", "-C", root, "cluster", "CLUSTER_FLAGS=--base-port "+strconv.Itoa(base))
	lines := startGroup(t, cmd)
	waitLine(t, lines, "ready:", 3*time.Minute)
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("make did not exit within 30s of a SIGTERM")
	}
	// Make waits for its child, so by now the cluster must be gone.
	for i := 1; i <= 3; i++ {
		if listening(base + i) {
			t.Fatalf("make exited, but node n%d still serves on port %d", i, base+i)
		}
	}
}

// A dev cluster whose parent dies (here by SIGKILL, which the parent
// cannot pass on) notices and stops, rather than running on with nobody
// left to stop it.
func TestDevClusterStopsWhenItsParentDies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn-node and runs a dev cluster; skipped in -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build cairn-node with")
	}
	bin := filepath.Join(t.TempDir(), "cairn-node")
	if out, err := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building cairn-node: %v\n%s", err, out)
	}
	base := devBasePortFree(t, 1)
	// The shell starts the cluster in the background and waits for it:
	// the cluster's parent is the shell, which the test then kills.
	cmd := exec.Command("sh", "-c", `"$0" dev --nodes 1 --base-port "$1" & wait`, bin, strconv.Itoa(base))
	lines := startGroup(t, cmd)
	waitLine(t, lines, "ready:", time.Minute)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitLine(t, lines, "cluster stopped", 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for listening(base + 1) {
		if time.Now().After(deadline) {
			t.Fatalf("the dev cluster still serves on port %d after its parent died", base+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
