package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/cairnmq/cairn/client"
)

// payloadSize is the size of every message the benchmark publishes.
const payloadSize = 1024

// payload is the body of every message: its content does not matter.
var payload = func() []byte {
	b := make([]byte, payloadSize)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}()

// fastOptions are the options of the clients that watch the failover
// (the fresh subscriber, the probe and the warm publisher): short attempts
// and short backoffs, so that what is measured is mostly the cluster's
// recovery and not a client's wait between retries. Thirty attempts
// outlast a failover of several seconds, so that few publishes of the
// warm traffic end with an unknown outcome, which RPO cannot check.
func fastOptions() client.Options {
	return client.Options{Secret: []byte(benchSecret), DialTimeout: time.Second, RequestTimeout: time.Second,
		MaxAttempts: 30, RetryBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
}

// outcomes tallies the publishes of one producer.
type outcomes struct {
	mu        sync.Mutex
	confirmed []client.MessageID
	unknown   int // ended with an unknown outcome: may or may not be queued
	refused   int // certainly not queued
}

// add records one publish's outcome. Only a confirmed publish must be
// delivered; an unknown one may be, and is not checked.
func (o *outcomes) add(id client.MessageID, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		o.confirmed = append(o.confirmed, id)
	case errors.Is(err, client.ErrUnknownOutcome):
		o.unknown++
	default:
		o.refused++
	}
}

// counts returns the tallies without copying the confirmed IDs.
func (o *outcomes) counts() (confirmed, unknown, refused int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.confirmed), o.unknown, o.refused
}

// snapshot returns copies of the tallies.
func (o *outcomes) snapshot() (confirmed []client.MessageID, unknown, refused int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]client.MessageID(nil), o.confirmed...), o.unknown, o.refused
}

// publishBacklog publishes n messages with up to inFlight outstanding at
// once and waits for every outcome.
func publishBacklog(ctx context.Context, c *client.Client, queue string, n, inFlight int) *outcomes {
	var out outcomes
	var pending []*client.Publishing
	for range n {
		if len(pending) == inFlight {
			out.add(pending[0].Wait())
			pending = pending[1:]
		}
		pending = append(pending, c.PublishAsync(ctx, queue, payload))
	}
	for _, p := range pending {
		out.add(p.Wait())
	}
	return &out
}

// steadyPublisher publishes at a fixed rate on a client of its own until
// stopped, whatever the cluster is doing, and keeps every outcome.
type steadyPublisher struct {
	out    outcomes
	cancel context.CancelFunc
	wg     conc.WaitGroup
}

// startSteady starts publishing rate messages per second of body to
// queue, with at most inFlight publishes started and not yet settled
// (plus the one whose outcome is being collected): past that, publishing
// waits, so a stalled cluster cannot make the producer pile up requests
// without bound.
// With stamp, each message carries the time its publish started in its
// first eight bytes (see stampOf), so a stamped collector can time it end
// to end; body must then be at least that long.
func startSteady(ctx context.Context, c *client.Client, queue string, rate int, body []byte, inFlight int, stamp bool) *steadyPublisher {
	pctx, cancel := context.WithCancel(ctx)
	sp := &steadyPublisher{cancel: cancel}
	started := make(chan *client.Publishing, inFlight)
	sp.wg.Go(func() {
		defer close(started)
		sp.pace(pctx, c, queue, rate, body, stamp, started)
	})
	// Outcomes are collected in the order the publishes started; a slow
	// one holds up the tally, not the publishing. The publishes use the
	// parent context: stopping the producer must not turn publishes in
	// flight into unknown outcomes.
	sp.wg.Go(func() {
		for p := range started {
			sp.out.add(p.Wait())
		}
	})
	return sp
}

// pace starts publishes so that, at every tick, as many have started as
// the rate calls for since the start.
func (sp *steadyPublisher) pace(ctx context.Context, c *client.Client, queue string, rate int, body []byte, stamp bool, started chan<- *client.Publishing) {
	began := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int(now.Sub(began).Seconds() * float64(rate))
			// A send can block while the window of publishes in flight
			// is full; once stopped, the producer must not catch up on
			// the ticks it missed meanwhile.
			for ; sent < due && ctx.Err() == nil; sent++ {
				b := body
				if stamp {
					b = stamped(body, time.Now())
				}
				started <- c.PublishAsync(context.WithoutCancel(ctx), queue, b)
			}
		}
	}
}

// stampBytes is how much of a stamped body the stamp takes.
const stampBytes = 8

// stamped is a copy of body whose first stampBytes hold at, in Unix
// nanoseconds.
func stamped(body []byte, at time.Time) []byte {
	b := bytes.Clone(body)
	binary.LittleEndian.PutUint64(b, uint64(at.UnixNano()))
	return b
}

// stampOf reads the time a stamped body was published.
func stampOf(body []byte) (time.Time, bool) {
	if len(body) < stampBytes {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(body))), true
}

// stop ends publishing and waits for the outcome of every publish started.
func (sp *steadyPublisher) stop() *outcomes {
	sp.cancel()
	sp.wg.Wait()
	return &sp.out
}

// probe publishes one message, retrying until one is confirmed, and
// records when that happened.
type probe struct {
	done chan struct{}
	id   client.MessageID
	at   time.Time
	err  error // the last failure
}

// startProbe starts publishing from c.
func startProbe(ctx context.Context, c *client.Client, queue string) *probe {
	p := &probe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			id, err := c.Publish(ctx, queue, payload)
			if err == nil {
				p.id, p.at = id, time.Now()
				return
			}
			p.err = err
		}
	}()
	return p
}

// collector is a subscription that records when the first delivery came
// and which IDs were delivered, and acks everything.
type collector struct {
	mu sync.Mutex
	// got holds every ID delivered, and whether an ack of it succeeded.
	got       map[client.MessageID]bool
	dups      int // deliveries of an ID delivered before: at-least-once, not a failure
	acked     int // distinct IDs whose ack succeeded
	ackFailed int // acks that failed: the message will be delivered again
	at        time.Time
	err       error // why subscribing failed, if it did
	wake      chan struct{}
	// stamped says the messages carry their publish time (stamped), and
	// endToEnd holds, for each ID's first delivery, the time from the
	// start of its publish to the handler's call.
	stamped  bool
	endToEnd []time.Duration
	// fire says the collector acks with Ack, handing each ack to the
	// client without waiting for its outcome (as a JetStream consumer's
	// Ack does), rather than with AckSync on a goroutine per delivery;
	// acked and ackFailed then stay zero, and awaitSettled asks the
	// queue's owner instead.
	fire bool
}

// deliveryCounts is what a collector has seen so far.
type deliveryCounts struct {
	delivered  int // distinct IDs
	duplicates int
	acked      int
	ackFailed  int
}

// subscribe starts a collector on c and returns at once. Subscribing
// happens on a goroutine of its own: while the queue has no owner, the
// client keeps trying, and Subscribe may not return until the new owner
// serves, which must hold up neither the probe nor the status polls.
func subscribe(ctx context.Context, c *client.Client, queue string) *collector {
	return subscribeCollector(ctx, c, queue, &collector{got: make(map[client.MessageID]bool), wake: make(chan struct{}, 1)})
}

// subscribeStamped is subscribe for stamped messages: the collector also
// times each one end to end.
func subscribeStamped(ctx context.Context, c *client.Client, queue string) *collector {
	return subscribeCollector(ctx, c, queue, &collector{got: make(map[client.MessageID]bool), wake: make(chan struct{}, 1), stamped: true})
}

// subscribeFiring is subscribe with acks handed over by Ack, whose
// outcomes nobody waits for.
func subscribeFiring(ctx context.Context, c *client.Client, queue string) *collector {
	return subscribeCollector(ctx, c, queue, &collector{got: make(map[client.MessageID]bool), wake: make(chan struct{}, 1), fire: true})
}

func subscribeCollector(ctx context.Context, c *client.Client, queue string, col *collector) *collector {
	go func() {
		_, err := c.Subscribe(ctx, queue, col.handle, client.WithWindow(512), client.WithLease(10*time.Second))
		if err != nil {
			col.mu.Lock()
			col.err = err
			col.mu.Unlock()
		}
	}()
	return col
}

// handle records a delivery and acks it.
func (col *collector) handle(ctx context.Context, d *client.Delivery) {
	col.record(d.ID, d.Payload)
	select {
	case col.wake <- struct{}{}:
	default:
	}
	// Acks go out without holding up the next delivery. A lost ack only
	// means a redelivery, which the collector absorbs.
	if col.fire {
		if err := d.Ack(ctx); err != nil && ctx.Err() == nil {
			col.acked1(d.ID, err)
		}
		return
	}
	go func() {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		col.acked1(d.ID, d.AckSync(actx))
	}()
}

// record counts a delivery of id, and times a stamped body end to end
// at its ID's first delivery.
func (col *collector) record(id client.MessageID, body []byte) {
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.at.IsZero() {
		col.at = time.Now()
	}
	if _, again := col.got[id]; again {
		col.dups++
		return
	}
	col.got[id] = false
	if at, ok := stampOf(body); ok && col.stamped {
		col.endToEnd = append(col.endToEnd, time.Since(at))
	}
}

// acked1 records the outcome of one ack.
func (col *collector) acked1(id client.MessageID, err error) {
	col.mu.Lock()
	defer col.mu.Unlock()
	switch {
	case err != nil:
		col.ackFailed++
	case !col.got[id]:
		col.got[id] = true
		col.acked++
	}
}

// endToEndSince returns the end-to-end times recorded from the from-th
// on, and how many there are in all.
func (col *collector) endToEndSince(from int) ([]time.Duration, int) {
	col.mu.Lock()
	defer col.mu.Unlock()
	return slices.Clone(col.endToEnd[min(from, len(col.endToEnd)):]), len(col.endToEnd)
}

// counts returns what the collector has seen so far.
func (col *collector) counts() deliveryCounts {
	col.mu.Lock()
	defer col.mu.Unlock()
	return deliveryCounts{delivered: len(col.got), duplicates: col.dups, acked: col.acked, ackFailed: col.ackFailed}
}

// failed returns why subscribing failed, if it did.
func (col *collector) failed() error {
	col.mu.Lock()
	defer col.mu.Unlock()
	return col.err
}

// first returns when the first delivery arrived, if one has.
func (col *collector) first() (time.Time, bool) {
	col.mu.Lock()
	defer col.mu.Unlock()
	return col.at, !col.at.IsZero()
}

// missing counts the IDs of want not delivered yet.
func (col *collector) missing(want []client.MessageID) int {
	col.mu.Lock()
	defer col.mu.Unlock()
	n := 0
	for _, id := range want {
		if _, ok := col.got[id]; !ok {
			n++
		}
	}
	return n
}

// awaitAll waits until every ID of want was delivered or the deadline
// passes, and returns how many were not delivered.
func (col *collector) awaitAll(ctx context.Context, want []client.MessageID, deadline time.Time) int {
	for {
		n := col.missing(want)
		if n == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return n
		}
		select {
		case <-col.wake:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// awaitSettled waits, for a collector that fires its acks, until c has
// sent every ack handed to it and the queue's owner counts no message
// ready or leased, or the deadline passes.
func (col *collector) awaitSettled(ctx context.Context, c *client.Client, queue string, deadline time.Time) {
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if c.Flush(fctx) != nil {
		return
	}
	for {
		d, err := c.Depth(fctx, queue)
		if err == nil && d.Backlog() == 0 || fctx.Err() != nil {
			return
		}
		sleep(fctx, 20*time.Millisecond)
	}
}

// awaitAcks waits until every delivery's ack has come back, succeeded or
// failed, or the deadline passes.
func (col *collector) awaitAcks(ctx context.Context, deadline time.Time) {
	for {
		c := col.counts()
		if c.acked+c.ackFailed >= c.delivered || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		sleep(ctx, 20*time.Millisecond)
	}
}
