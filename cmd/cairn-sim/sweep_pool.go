package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc"
)

// runPool runs every seed of r on up to workers worker processes started
// from exe, and calls report with each seed's report in seed order. The
// order matters: output and the JSON summary must not depend on which
// worker finished first.
func runPool(exe string, r seedRange, workers int, report func(seedReport)) {
	n := r.count()
	done := make(chan seedReport, workers)
	var next atomic.Int64
	take := func() (uint64, bool) {
		i := next.Add(1) - 1
		return r.first + uint64(i), i < int64(n)
	}
	var wg conc.WaitGroup
	for range min(workers, n) {
		wg.Go(func() { serveSeeds(exe, take, done) })
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	pending := make(map[uint64]seedReport)
	want := r.first
	for rep := range done {
		pending[rep.Seed] = rep
		for {
			p, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			report(p)
			want++
		}
	}
}

// serveSeeds keeps one worker process busy until no seeds are left. A
// worker that dies or answers nonsense is replaced by a fresh one, and
// the seed it held is reported as a simulator crash with the worker's
// last words, so one bad seed costs one seed.
func serveSeeds(exe string, take func() (uint64, bool), done chan<- seedReport) {
	var w *workerProc
	defer func() {
		if w != nil {
			w.close()
		}
	}()
	for {
		seed, ok := take()
		if !ok {
			return
		}
		if w == nil {
			var err error
			if w, err = startWorker(exe); err != nil {
				done <- seedReport{Seed: seed, Crash: "could not start a worker process: " + err.Error()}
				continue
			}
		}
		rep, err := w.run(seed)
		if err != nil {
			rep = seedReport{Seed: seed, Crash: fmt.Sprintf("the worker process running this seed failed: %v\nits stderr ended with:\n%s", err, w.kill())}
			w = nil
		}
		done <- rep
	}
}

// workerProc is one running worker process.
type workerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tailBuffer
}

// workerEnv is the environment workers start with; nil inherits this
// process's (sweep --cover sets GOCOVERDIR in it).
var workerEnv []string

func startWorker(exe string) (*workerProc, error) {
	cmd := exec.Command(exe, workerCommand, fmt.Sprintf("--nodes=%d", shapeNodes))
	cmd.Env = workerEnv
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &workerProc{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &tailBuffer{max: 4 << 10}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return w, nil
}

// run hands the worker one seed and reads its report.
func (w *workerProc) run(seed uint64) (seedReport, error) {
	if _, err := fmt.Fprintf(w.stdin, "%d\n", seed); err != nil {
		return seedReport{}, err
	}
	line, err := w.stdout.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("it exited without a report")
		}
		return seedReport{}, err
	}
	var rep seedReport
	if err := json.Unmarshal(line, &rep); err != nil {
		return seedReport{}, fmt.Errorf("unreadable report: %w", err)
	}
	if rep.Seed != seed {
		return seedReport{}, fmt.Errorf("asked for seed %d, got a report for seed %d", seed, rep.Seed)
	}
	return rep, nil
}

// close ends a healthy worker: its input ends, so it exits.
func (w *workerProc) close() {
	w.stdin.Close()
	w.cmd.Wait()
}

// kill ends a failed worker and returns the end of its stderr, with its
// exit status, for the crash report.
func (w *workerProc) kill() string {
	w.stdin.Close()
	w.cmd.Process.Kill()
	err := w.cmd.Wait()
	return fmt.Sprintf("%s(exit: %v)", w.stderr.String(), err)
}

// tailBuffer keeps the last max bytes written to it. exec copies a
// worker's stderr into it from its own goroutine, hence the lock.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
