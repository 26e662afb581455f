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
	"time"
)

// peerHarness is a peer system's harness (JetStream's, in bench/),
// started once and asked for one drain at a time, so both systems run
// the same workload in turn on the same machine.
//
// The protocol is one line each way: cairn-bench writes
// "drain <messages> <payload bytes> <async|sync>", and the harness
// publishes that many messages to a fresh stream, drains them with an
// acking subscriber and answers with one JSON object,
// {"handled_seconds": ..., "settled_seconds": ...}, or {"error": "..."}.
type peerHarness struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// peerAnswer is the harness's answer to one drain.
type peerAnswer struct {
	Handled float64 `json:"handled_seconds"`
	Settled float64 `json:"settled_seconds"`
	Error   string  `json:"error"`
}

// startPeer starts the harness command line (split on spaces); its
// standard error goes to stderr.
func startPeer(ctx context.Context, command string, stderr io.Writer) (*peerHarness, error) {
	args := strings.Fields(command)
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
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &peerHarness{cmd: cmd, in: in, out: sc}, nil
}

// drain asks the harness for one drain and waits for its answer.
func (p *peerHarness) drain(ctx context.Context, messages, size int, mode string) (drainResult, error) {
	if _, err := fmt.Fprintf(p.in, "drain %d %d %s\n", messages, size, mode); err != nil {
		return drainResult{}, fmt.Errorf("peer harness: %w", err)
	}
	if !p.out.Scan() {
		return drainResult{}, fmt.Errorf("peer harness ended without an answer: %v", p.out.Err())
	}
	var a peerAnswer
	if err := json.Unmarshal(p.out.Bytes(), &a); err != nil {
		return drainResult{}, fmt.Errorf("peer harness answered %q: %w", p.out.Text(), err)
	}
	if a.Error != "" {
		return drainResult{}, errors.New("peer: " + a.Error)
	}
	return drainResult{handled: seconds(a.Handled), settled: seconds(a.Settled)}, nil
}

// close ends the harness: it stops its servers when its input closes.
func (p *peerHarness) close() {
	p.in.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
