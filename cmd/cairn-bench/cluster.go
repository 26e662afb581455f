package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/loopback"
)

// benchSecret authenticates the benchmark's clients to its clusters, and
// benchPeerSecret the nodes to each other. The clusters listen on
// loopback only and live for one trial.
const (
	benchSecret     = "cairn-bench-failover-secret"
	benchPeerSecret = "cairn-bench-failover-peer-secret"
)

// member is one cairn-node process of a benchmark cluster.
type member struct {
	id         int
	clientAddr string
	httpAddr   string
	dataDir    string
	config     string
	log        string
	cmd        *exec.Cmd
	exited     chan struct{} // closed once the process has exited
}

// cluster is a cluster of cairn-node processes on loopback, with its
// data, configuration and logs in one directory.
type cluster struct {
	dir     string
	members []*member
}

// startCluster writes the configurations of an n-node cluster under dir
// and starts one process per node, logging at logLevel. The failover
// benchmark asks for debug, so that every node event (suspicions,
// activations) reaches the logs with its wall-clock time; the soak asks
// for info, as a production node runs, so that logging at a debug line per
// message does not weigh on what it measures. extra is appended to every
// node's configuration (settings such as checkpoint_records).
func startCluster(bin, dir string, n int, logLevel, extra string) (*cluster, error) {
	addrs, err := loopback.Addrs(3 * n)
	if err != nil {
		return nil, err
	}
	var peers strings.Builder
	for i := range n {
		fmt.Fprintf(&peers, "[[peers]]\nid = %d\naddr = %q\nclient_addr = %q\nhttp_addr = %q\n\n",
			i+1, addrs[3*i], addrs[3*i+1], addrs[3*i+2])
	}
	cl := &cluster{dir: dir}
	for i := range n {
		m := &member{id: i + 1, clientAddr: addrs[3*i+1], httpAddr: addrs[3*i+2],
			dataDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), // data_dir is relative to the configuration
			config:  filepath.Join(dir, fmt.Sprintf("n%d.toml", i+1)),
			log:     filepath.Join(dir, fmt.Sprintf("n%d.log", i+1))}
		text := fmt.Sprintf("id = %d\ndata_dir = \"n%d\"\npeer_secret = %q\nclient_secret = %q\nlog_level = %q\n%s\n%s",
			m.id, m.id, benchPeerSecret, benchSecret, logLevel, extra, peers.String())
		if err := os.WriteFile(m.config, []byte(text), 0o644); err != nil {
			cl.stop()
			return nil, err
		}
		cl.members = append(cl.members, m)
		if err := m.start(bin); err != nil {
			cl.stop()
			return nil, err
		}
	}
	return cl, nil
}

// start launches m's process, its output going to m's log.
func (m *member) start(bin string) error {
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	m.cmd = exec.Command(bin, "--config", m.config)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	m.exited = make(chan struct{})
	go func() {
		m.cmd.Wait()
		logf.Close()
		close(m.exited)
	}()
	return nil
}

// kill sends SIGKILL to m and waits until it has exited.
func (m *member) kill() {
	if m.cmd == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// running reports whether m's process is up.
func (m *member) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// terminate stops m the way an operator does, with SIGTERM, and waits up
// to timeout for it to drain and exit; past that it kills it. It says how
// the process ended, and whether that was the clean exit a SIGTERM must
// give (an exit status of 0 in time).
func (m *member) terminate(timeout time.Duration) (string, bool) {
	if !m.running() {
		if m.cmd == nil {
			return "never started", false
		}
		return fmt.Sprintf("had already exited before the SIGTERM (%v)", m.cmd.ProcessState), false
	}
	began := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.exited:
	case <-t.C:
		m.kill()
		return fmt.Sprintf("still running %v after the SIGTERM, killed", timeout), false
	}
	took := time.Since(began).Round(time.Millisecond)
	return fmt.Sprintf("%v %v after the SIGTERM", m.cmd.ProcessState, took), m.cmd.ProcessState.Success()
}

// stop kills every process of the cluster.
func (cl *cluster) stop() {
	for _, m := range cl.members {
		m.kill()
	}
}

// clientAddrs lists the nodes' client addresses.
func (cl *cluster) clientAddrs() []string {
	var out []string
	for _, m := range cl.members {
		out = append(out, m.clientAddr)
	}
	return out
}

// others lists the members other than m.
func (cl *cluster) others(m *member) []*member {
	var out []*member
	for _, o := range cl.members {
		if o != m {
			out = append(out, o)
		}
	}
	return out
}

// waitHealthy waits until every node answers /healthz with 200.
func (cl *cluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, m := range cl.members {
		for !m.healthy(ctx) {
			select {
			case <-m.exited:
				return fmt.Errorf("n%d exited while starting (see %s)", m.id, m.log)
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("n%d not healthy after %v (see %s)", m.id, timeout, m.log)
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// healthy reports whether m answers /healthz with 200.
func (m *member) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.httpAddr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// view fetches m's status and its view of queue. ok is false if m did
// not answer or does not list the queue.
func (m *member) view(ctx context.Context, queue string) (node *status.Node, q status.Queue, ok bool) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	node, err := status.FetchAuth(sctx, m.httpAddr, status.Auth{Secret: []byte(benchSecret)})
	if err != nil {
		return nil, q, false
	}
	for _, q := range node.Queues {
		if q.Name == queue {
			return node, q, true
		}
	}
	return node, q, false
}

// errNoOwner says no node served the queue in time.
var errNoOwner = errors.New("no node serves the queue")

// servingOwner polls among every interval until one of them reports
// serving queue (role owner, active) at an epoch above the given one, and
// returns it, its status and when the poll saw it.
func servingOwner(ctx context.Context, among []*member, queue string, above uint64, interval time.Duration) (*member, *status.Node, status.Queue, time.Time, error) {
	for {
		for _, m := range among {
			node, q, ok := m.view(ctx, queue)
			if ok && q.Role == "owner" && q.Active && q.Epoch > above {
				return m, node, q, time.Now(), nil
			}
		}
		if err := sleep(ctx, interval); err != nil {
			return nil, nil, status.Queue{}, time.Time{}, fmt.Errorf("%w at an epoch above %d: %v", errNoOwner, above, err)
		}
	}
}

// sleep waits for d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nodeBinary returns the cairn-node binary to run: path if given, or one
// built now from this module into dir.
func nodeBinary(ctx context.Context, path, dir string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("--node-bin: %w", err)
		}
		return path, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no --node-bin given and no go command to build cairn-node with")
	}
	out := filepath.Join(dir, "cairn-node")
	build := exec.CommandContext(ctx, goTool, "build", "-o", out, "github.com/cairnmq/cairn/cmd/cairn-node")
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cairn-node (run inside the cairn module, or pass --node-bin): %v\n%s", err, msg)
	}
	return out, nil
}
