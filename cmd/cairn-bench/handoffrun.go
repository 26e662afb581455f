package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cairnmq/cairn/client"
)

// handoffRun is the handoff benchmark's cluster with its traffic: the
// admin client that moves the owner, the steady publisher and the
// acking subscriber, each on a client of its own.
type handoffRun struct {
	cfg   handoffConfig
	bin   string
	cl    *cluster
	admin *client.Client
	pubC  *client.Client
	subC  *client.Client
	pub   *timedPublisher
	col   *collector
	// baseline is the longest gap between confirmations in a second of
	// traffic before the first trial: the noise floor of the gaps.
	baseline time.Duration
}

// trialOutcome is what one move or kill measured.
type trialOutcome struct {
	from, to int           // the owner before and after
	gap      time.Duration // the longest gap between confirmations spanning it
	call     time.Duration // the MoveOwner call, for a move
	recovery time.Duration // from the start until the new owner served; a roll's length
	latency  time.Duration // a roll's longest publish latency
	handoffs int           // a roll's stops of the queue's owner
}

// phaseResult is what a phase of trials of one kind measured.
type phaseResult struct {
	name     string // "move" or "kill", as the summary line names it
	label    string // what the report calls it; empty: phaseNames
	trials   int
	outcomes []trialOutcome
	failures []string // why trials did not complete
	// Publishes that ended in the phase, and deliveries seen in it.
	confirmed, failed, unknown int
	duplicates                 int
	lost                       int // confirmed in the phase or before, never delivered
}

// startHandoffRun creates the queue and starts the traffic, then lets
// it run a second to measure the baseline gap.
func startHandoffRun(ctx context.Context, cfg handoffConfig, bin string, cl *cluster) (*handoffRun, error) {
	hr := &handoffRun{cfg: cfg, bin: bin, cl: cl}
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return nil, err
	}
	var err error
	if hr.admin, err = client.Dial(ctx, client.Options{Secret: []byte(benchAdminSecret), Admin: true}, cl.clientAddrs()...); err != nil {
		return nil, err
	}
	if err := createQueue(ctx, hr.admin, 20*time.Second); err != nil {
		hr.close()
		return nil, err
	}
	options := client.Options{Secret: []byte(benchSecret)}
	if hr.pubC, err = client.Dial(ctx, options, cl.clientAddrs()...); err == nil {
		hr.subC, err = client.Dial(ctx, options, cl.clientAddrs()...)
	}
	if err != nil {
		hr.close()
		return nil, err
	}
	hr.col = subscribe(ctx, hr.subC, benchQueue)
	hr.pub = startTimed(ctx, hr.pubC, benchQueue, cfg.rate, cfg.inFlight)
	sleep(ctx, time.Second)
	began := time.Now()
	sleep(ctx, time.Second)
	hr.baseline = hr.pub.longestGap(began, time.Now())
	return hr, nil
}

// close stops the traffic and closes the clients.
func (hr *handoffRun) close() {
	if hr.pub != nil {
		hr.pub.stop()
	}
	for _, c := range []*client.Client{hr.admin, hr.pubC, hr.subC} {
		if c != nil {
			c.Close()
		}
	}
}

// phase runs n trials of one kind, then waits for every publish
// confirmed so far to be delivered, and returns what they measured.
func (hr *handoffRun) phase(ctx context.Context, name string, n int, trial func(context.Context) (trialOutcome, error), stderr io.Writer) phaseResult {
	res := phaseResult{name: name, trials: n}
	c0, f0, u0 := hr.pub.counts()
	d0 := hr.col.counts().duplicates
	for i := range n {
		if ctx.Err() != nil {
			res.failures = append(res.failures, "interrupted")
			break
		}
		o, err := trial(ctx)
		line := fmt.Sprintf("%s %d/%d: n%d -> n%d: gap %s, new owner serving after %s", name, i+1, n, o.from, o.to, ms(o.gap), ms(o.recovery))
		if o.call > 0 {
			line += ", MoveOwner " + ms(o.call)
		}
		if name == "roll" {
			line = fmt.Sprintf("roll %d/%d: %d restarts (%d of the owner) in %s: gap %s, max publish latency %s",
				i+1, n, len(hr.cl.members), o.handoffs, ms(o.recovery), ms(o.gap), ms(o.latency))
		}
		if err != nil {
			res.failures = append(res.failures, err.Error())
			line = fmt.Sprintf("%s %d/%d: FAILED: %v", name, i+1, n, err)
		} else {
			res.outcomes = append(res.outcomes, o)
		}
		fmt.Fprintln(stderr, line)
	}
	want := hr.pub.confirmedIDs()
	res.lost = hr.col.awaitAll(ctx, want, time.Now().Add(30*time.Second))
	c1, f1, u1 := hr.pub.counts()
	res.confirmed, res.failed, res.unknown = c1-c0, f1-f0, u1-u0
	res.duplicates = hr.col.counts().duplicates - d0
	return res
}

// owner returns the node serving the queue now, and its epoch.
func (hr *handoffRun) owner(ctx context.Context) (*member, uint64, error) {
	octx, cancel := context.WithTimeout(ctx, hr.cfg.timeout)
	defer cancel()
	m, _, q, _, err := servingOwner(octx, hr.cl.members, benchQueue, 0, 10*time.Millisecond)
	return m, q.Epoch, err
}

// move hands the queue to the next replica in turn with MoveOwner.
func (hr *handoffRun) move(ctx context.Context) (trialOutcome, error) {
	from, epoch, err := hr.owner(ctx)
	if err != nil {
		return trialOutcome{}, err
	}
	o := trialOutcome{from: from.id, to: from.id%len(hr.cl.members) + 1}
	start := time.Now()
	mctx, cancel := context.WithTimeout(ctx, hr.cfg.timeout)
	err = hr.admin.MoveOwner(mctx, benchQueue, uint32(o.to), 0)
	cancel()
	o.call = time.Since(start)
	if err != nil {
		return o, fmt.Errorf("MoveOwner to n%d: %w", o.to, err)
	}
	return o, hr.awaitNext(ctx, &o, hr.cl.members, epoch, start)
}

// kill fails the owner (SIGKILL, or SIGSTOP), waits for another to
// serve, then restarts (or resumes) the failed node and waits until it
// follows again.
func (hr *handoffRun) kill(ctx context.Context) (trialOutcome, error) {
	victim, epoch, err := hr.owner(ctx)
	if err != nil {
		return trialOutcome{}, err
	}
	o := trialOutcome{from: victim.id}
	start := time.Now()
	if hr.cfg.fault == faultStop {
		err = victim.pause()
	} else {
		victim.kill()
	}
	if err == nil {
		err = hr.awaitNext(ctx, &o, hr.cl.others(victim), epoch, start)
	}
	if rerr := hr.revive(ctx, victim); err == nil {
		err = rerr
	}
	return o, err
}

// awaitNext waits until one of among serves the queue above epoch and
// confirmations resumed, lets the traffic settle, and measures the gap
// since start.
func (hr *handoffRun) awaitNext(ctx context.Context, o *trialOutcome, among []*member, epoch uint64, start time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, start.Add(hr.cfg.timeout))
	defer cancel()
	next, _, _, seen, err := servingOwner(wctx, among, benchQueue, epoch, 10*time.Millisecond)
	if err != nil {
		return err
	}
	o.recovery = seen.Sub(start)
	if o.to != 0 && next.id != o.to {
		return fmt.Errorf("n%d serves the queue, not n%d", next.id, o.to)
	}
	o.to = next.id
	if !hr.pub.awaitConfirmAfter(wctx, seen) {
		return fmt.Errorf("no publish confirmed within %v of the trial's start", hr.cfg.timeout)
	}
	sleep(ctx, hr.cfg.settle)
	o.gap = hr.pub.longestGap(start, time.Now())
	return nil
}

// revive starts a killed node again, or resumes a stopped one, and
// waits until it follows the queue, so that the next failover leaves a
// majority of caught-up replicas.
func (hr *handoffRun) revive(ctx context.Context, m *member) error {
	if m.running() {
		m.resume()
	} else if err := m.start(hr.bin); err != nil {
		return fmt.Errorf("restarting n%d: %w", m.id, err)
	}
	deadline := time.Now().Add(hr.cfg.timeout)
	for {
		if _, q, ok := m.view(ctx, benchQueue); ok && q.Role == "follower" {
			return sleep(ctx, hr.cfg.settle)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("revived n%d does not follow the queue after %v (see %s)", m.id, hr.cfg.timeout, m.log)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
