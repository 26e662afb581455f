package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cairnmq/cairn/client"
)

// staleSends is how many publishes a stop trial sends to the stopped
// owner. A few suffice: each waits in the stopped process's socket, and
// any that came back confirmed would be a stale owner obeyed.
const staleSends = 20

// staleAnswerWait bounds the wait, after SIGCONT, for the resumed node to
// answer the publishes sent to it while it was stopped.
const staleAnswerWait = 10 * time.Second

// placementTries bounds the queues a trial creates looking for one whose
// owner leads the metadata group. Placement spreads queues over the nodes
// by name, so each new name lands on the leader with a chance of one in
// the cluster's size: forty misses in a row on five nodes happen about
// once in ten thousand trials.
const placementTries = 40

// placeQueue creates the trial's queue and returns its name and how many
// queues it created. With victim owner+leader it creates queues under new
// names until one's owner leads the metadata group; the others stay,
// empty and idle, and their owners are never the victim.
func (te *trialEnv) placeQueue(ctx context.Context, cl *cluster, setup *client.Client) (string, int, error) {
	for i := range placementTries {
		name := benchQueue
		if i > 0 {
			name = fmt.Sprintf("%s-%d", benchQueue, i+1)
		}
		if err := createQueueNamed(ctx, setup, name, 30*time.Second); err != nil {
			return "", i + 1, err
		}
		if te.cfg.victim != victimOwnerLeader {
			return name, i + 1, nil
		}
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		owner, node, _, _, err := servingOwner(octx, cl.members, name, 0, 10*time.Millisecond)
		cancel()
		if err != nil {
			return "", i + 1, err
		}
		if node.MetaLeader == uint32(owner.id) {
			return name, i + 1, nil
		}
	}
	return "", placementTries, fmt.Errorf("none of %d queues had an owner leading the metadata group", placementTries)
}

// pause sends SIGSTOP to m and waits until every thread of it has
// stopped: kill(2) returns before they all have, and a publish the owner
// confirmed in between would be confirmed legitimately, by an owner that
// was still running.
func (m *member) pause() error {
	if !m.running() {
		return fmt.Errorf("n%d is not running", m.id)
	}
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	return waitStopped(m.cmd.Process.Pid, 5*time.Second)
}

// resume sends SIGCONT to m.
func (m *member) resume() {
	if m.running() {
		m.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// waitStopped waits until every thread of process pid is stopped, as
// Linux's /proc reports it. Without /proc it waits long enough for any
// scheduler to have stopped it.
func waitStopped(pid int, timeout time.Duration) error {
	tasks := fmt.Sprintf("/proc/%d/task", pid)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		entries, err := os.ReadDir(tasks)
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			return nil
		}
		stopped := len(entries) > 0
		for _, e := range entries {
			b, err := os.ReadFile(tasks + "/" + e.Name() + "/stat")
			if err == nil && !taskStopped(string(b)) {
				stopped = false
			}
		}
		if stopped {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("process %d did not stop within %v of SIGSTOP", pid, timeout)
}

// taskStopped reports whether a /proc task stat line shows a stopped
// task. The state follows the command name, which is in parentheses and
// may itself hold spaces or parentheses, so the last ") " is the one.
func taskStopped(stat string) bool {
	i := strings.LastIndex(stat, ") ")
	if i < 0 {
		return false
	}
	state := stat[i+2:]
	return strings.HasPrefix(state, "T") || strings.HasPrefix(state, "t")
}

// staleCheck is a client of the owner alone, dialled before the stop,
// that sends it publishes while it is stopped. It makes one attempt per
// publish, with a timeout longer than the trial, so that what it sends
// waits in the stopped process's socket and the resumed process alone
// answers it: no retry can carry a publish to the new owner, where it
// would rightly be confirmed.
type staleCheck struct {
	c      *client.Client
	queue  string
	ctx    context.Context // bounds the stale publishes' waits
	cancel context.CancelFunc
	before *outcomes // one publish confirmed by the owner before the stop
	sent   []*client.Publishing
}

// staleOutcome is how the publishes sent to a stopped owner ended.
type staleOutcome struct {
	sent       int
	confirmed  int // confirmed by the stale owner: a broken promise
	refused    int // failed, or ended with an unknown outcome
	unanswered int // no answer within staleAnswerWait of the SIGCONT
}

// startStaleCheck dials owner alone and publishes one message through it,
// so that the client knows the owner before it is stopped.
func startStaleCheck(ctx context.Context, owner *member, queue string, timeout time.Duration) (*staleCheck, error) {
	long := 2*timeout + time.Minute
	c, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret), MaxAttempts: 1,
		RequestTimeout: long, RetryFor: long}, owner.clientAddr)
	if err != nil {
		return nil, fmt.Errorf("dialling the owner n%d alone: %w", owner.id, err)
	}
	sc := &staleCheck{c: c, queue: queue, before: &outcomes{}}
	sc.ctx, sc.cancel = context.WithTimeout(ctx, long)
	for range 5 {
		id, err := c.Publish(ctx, queue, payload)
		if err == nil {
			sc.before.add(id, nil)
			return sc, nil
		}
	}
	sc.close()
	return nil, fmt.Errorf("publishing through the owner n%d before the stop: every attempt failed", owner.id)
}

// send starts the publishes to the stopped owner.
func (sc *staleCheck) send() {
	for range staleSends {
		sc.sent = append(sc.sent, sc.c.PublishAsync(sc.ctx, sc.queue, payload))
	}
}

// finish resumes the stopped owner and collects what it answered to the
// publishes sent while it was stopped.
func (sc *staleCheck) finish(ctx context.Context, owner *member) staleOutcome {
	owner.resume()
	out := staleOutcome{sent: len(sc.sent)}
	results := make(chan error, len(sc.sent))
	for _, p := range sc.sent {
		go func() {
			_, err := p.Wait()
			results <- err
		}()
	}
	timer := time.NewTimer(staleAnswerWait)
	defer timer.Stop()
	for range sc.sent {
		select {
		case err := <-results:
			if err == nil {
				out.confirmed++
			} else {
				out.refused++
			}
		case <-timer.C:
			out.unanswered = out.sent - out.confirmed - out.refused
			return out
		case <-ctx.Done():
			out.unanswered = out.sent - out.confirmed - out.refused
			return out
		}
	}
	return out
}

// close ends the publishes still waiting and closes the client.
func (sc *staleCheck) close() {
	sc.cancel()
	sc.c.Close()
}

// summary describes the stale publishes in a few words.
func (so staleOutcome) summary() string {
	if so.sent == 0 {
		return ""
	}
	return fmt.Sprintf("%d sent to the stopped owner: %d confirmed, %d refused, %d unanswered",
		so.sent, so.confirmed, so.refused, so.unanswered)
}
