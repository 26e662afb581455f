package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// peerHarness is a peer system's harness (JetStream's, in bench/),
// started once and asked for one drain or one failover at a time, so both
// systems run the same workload in turn on the same machine.
//
// The protocol is one line each way (bench/README.md): cairn-bench writes
// "drain <messages> <payload bytes> <async|sync>", and the harness
// publishes that many messages to a fresh stream, drains them with an
// acking subscriber and answers with one JSON object,
// {"handled_seconds": ..., "settled_seconds": ...}, or {"error": "..."};
// or it writes "failover <backlog messages> <payload bytes> <timeout
// seconds>", and the harness starts a fresh cluster, kills the leader of
// a stream holding the backlog, and answers
// {"first_publish_seconds": ..., "first_delivery_seconds": ...}, or
// {"error": "..."}; or it writes "publish <window seconds> <warmup
// seconds> <in flight> <payload bytes>", and the harness publishes to a
// fresh stream for the window with a consumer acking everything, and
// answers with the confirmation rate and latency (peerAnswer); or it
// writes "create <streams> <concurrency>", and the harness creates that
// many streams on a fresh cluster and answers with the rate and each
// create's latency.
type peerHarness struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines <-chan string // the harness's answers, closed when its output ends
	quit  chan struct{} // closed by close: answers are no longer wanted
	done  chan struct{} // closed once the process has exited
}

// errPeerTimeout says the harness did not answer in time. Its answer may
// still come, and would be read as the answer to the next request: the
// harness must be stopped and started afresh.
var errPeerTimeout = errors.New("peer harness did not answer in time")

// peerAnswer is the harness's answer to one request.
type peerAnswer struct {
	Handled       float64  `json:"handled_seconds"`
	Settled       float64  `json:"settled_seconds"`
	FirstPublish  *float64 `json:"first_publish_seconds"`
	FirstDelivery *float64 `json:"first_delivery_seconds"`
	Error         string   `json:"error"`

	// A publish window's answer.
	Rate      float64 `json:"confirmed_per_second"`
	P50       float64 `json:"latency_p50_seconds"`
	P99       float64 `json:"latency_p99_seconds"`
	Max       float64 `json:"latency_max_seconds"`
	Confirmed int     `json:"confirmed"`
	Failed    int     `json:"failed"`
	Lost      int     `json:"lost"`

	// A create run's answer.
	CreateRate float64 `json:"created_per_second"`
	CreateP50  float64 `json:"create_p50_seconds"`
	CreateP95  float64 `json:"create_p95_seconds"`
	CreateMax  float64 `json:"create_max_seconds"`
	Created    int     `json:"created"`
}

// startPeer starts the harness command line (split on spaces); its
// standard error goes to stderr.
func startPeer(ctx context.Context, command string, stderr io.Writer) (*peerHarness, error) {
	args := strings.Fields(command)
	if len(args) == 0 {
		return nil, errors.New("empty peer harness command")
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the peer harness %q: %w", command, err)
	}
	// The answers are read on a goroutine of their own, so that a
	// request can give up waiting for one. Once the harness is being
	// closed, what it still writes is read and dropped, so that it never
	// blocks on a full pipe, and the process is waited for only after
	// its output has ended, as exec requires.
	lines := make(chan string)
	p := &peerHarness{cmd: cmd, in: in, lines: lines, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer cmd.Wait()
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-p.quit:
			}
		}
	}()
	return p, nil
}

// request writes one request line and waits up to timeout (none if zero)
// for the answer.
func (p *peerHarness) request(ctx context.Context, line string, timeout time.Duration) (peerAnswer, error) {
	if _, err := fmt.Fprintln(p.in, line); err != nil {
		return peerAnswer{}, fmt.Errorf("peer harness: %w", err)
	}
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case text, ok := <-p.lines:
		if !ok {
			return peerAnswer{}, errors.New("peer harness ended without an answer")
		}
		return parsePeerAnswer(text)
	case <-expire:
		return peerAnswer{}, fmt.Errorf("%w (%v)", errPeerTimeout, timeout)
	case <-ctx.Done():
		return peerAnswer{}, ctx.Err()
	}
}

// parsePeerAnswer decodes one answer line; an error answer is returned
// as an error.
func parsePeerAnswer(text string) (peerAnswer, error) {
	var a peerAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return a, fmt.Errorf("peer harness answered %q: %w", text, err)
	}
	if a.Error != "" {
		return a, errors.New("peer: " + a.Error)
	}
	return a, nil
}

// drain asks the harness for one drain and waits for its answer.
func (p *peerHarness) drain(ctx context.Context, messages, size int, mode string) (drainResult, error) {
	a, err := p.request(ctx, fmt.Sprintf("drain %d %d %s", messages, size, mode), 0)
	if err != nil {
		return drainResult{}, err
	}
	return drainResult{handled: seconds(a.Handled), settled: seconds(a.Settled)}, nil
}

// close ends the harness: it stops its servers when its input closes. A
// harness still busy with a request gets SIGTERM after a second, which
// makes it give the request up and clean up; one that outlives that by
// 30 seconds is killed. close gives up waiting five seconds after the
// kill: a process the harness started and left behind could hold its
// output open, and the benchmark must go on regardless.
func (p *peerHarness) close() {
	close(p.quit)
	p.in.Close()
	for _, step := range []struct {
		wait time.Duration
		then func() error
	}{
		{time.Second, func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }},
		{30 * time.Second, p.cmd.Process.Kill},
		{5 * time.Second, nil},
	} {
		select {
		case <-p.done:
			return
		case <-time.After(step.wait):
		}
		if step.then != nil {
			step.then()
		}
	}
}

// seconds converts seconds, as the harnesses answer them, to a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
