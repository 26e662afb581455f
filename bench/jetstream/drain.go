package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnmq/cairn/bench/protocol"
)

// inFlight is the most publishes awaiting their acknowledgement at once,
// the same pipeline depth as cairn-bench's publishers.
const inFlight = 256

// drainTimeout bounds one whole drain, publishing included, so that a
// stuck cluster gives an error answer instead of a driver waiting forever.
const drainTimeout = 10 * time.Minute

// publishAckTimeout bounds the wait for each publish's acknowledgement, so
// that one lost acknowledgement fails the drain with a clear error well
// before drainTimeout.
const publishAckTimeout = time.Minute

// settlePoll is how often the consumer's state is asked for while waiting
// for every acknowledgement to be settled.
const settlePoll = 5 * time.Millisecond

// consumerName is the durable consumer of every drain; each drain has its
// own stream, so the name never clashes.
const consumerName = "drain"

// drainResult is one drain's timings, both measured from just before the
// consumer started.
type drainResult struct {
	handled time.Duration // until the handler had seen every message
	settled time.Duration // until the server held no message unacknowledged
}

// peer runs drains and failovers, one at a time. The drains share one
// cluster, started at the first drain and kept until the harness ends;
// each failover runs on a cluster of its own.
type peer struct {
	bin     string // the nats-server binary
	version string // its version, for diagnostics
	dir     string // the harness's temporary directory
	keep    bool   // keep each failover's directory too
	stderr  io.Writer

	cl        *cluster   // the drains' cluster, once started
	nc        *nats.Conn // for stream and consumer management and publishing
	urls      string     // the drains' servers' client URLs, for each drain's consumer connection
	drains    int        // drains and publish windows started, which numbers each one's stream
	failovers int        // failovers started, which numbers each one's directory
	creates   int        // create runs started, which numbers each one's directory
}

// start starts the drains' cluster, unless it runs already, and waits
// until it accepts a replicated stream.
func (p *peer) start(ctx context.Context) error {
	if p.nc != nil {
		return nil
	}
	dir := filepath.Join(p.dir, "drain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if p.cl == nil {
		cl, err := startCluster(p.bin, dir)
		if err != nil {
			return err
		}
		p.cl = cl
	}
	nc, err := p.cl.waitReady(ctx, readyTimeout)
	if err != nil {
		// A cluster that did not form is stopped, so that the next drain
		// tries a fresh one.
		p.cl.stop(p.stderr)
		p.cl = nil
		return err
	}
	p.nc, p.urls = nc, strings.Join(p.cl.clientURLs(), ",")
	fmt.Fprintf(p.stderr, "%s: three %s processes ready on %s\n", prog, p.version, strings.Join(p.cl.clientURLs(), ", "))
	return nil
}

// stop stops the drains' cluster, if it was started.
func (p *peer) stop() {
	if p.nc != nil {
		p.nc.Close()
	}
	if p.cl != nil {
		p.cl.stop(p.stderr)
	}
}

// drain runs one drain: it publishes req.Messages messages to a fresh
// stream, then times one consumer acking them all, and deletes the stream.
func (p *peer) drain(ctx context.Context, req protocol.Drain) (drainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	p.drains++
	stream := fmt.Sprintf("DRAIN%d", p.drains)
	subject := fmt.Sprintf("drain.%d", p.drains)

	js, err := jetstream.New(p.nc)
	if err != nil {
		return drainResult{}, err
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     stream,
		Subjects: []string{subject},
		Replicas: clusterSize,
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		return drainResult{}, fmt.Errorf("creating stream %s: %w", stream, err)
	}
	defer p.deleteStream(js, stream)

	if err := publish(ctx, p.nc, subject, req.Messages, req.Size); err != nil {
		return drainResult{}, err
	}
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   consumerName,
		AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		return drainResult{}, fmt.Errorf("creating the consumer: %w", err)
	}
	return p.consume(ctx, stream, req)
}

// consume times a consumer on a fresh connection draining the stream, as
// cairn-bench times a freshly dialled subscriber, so that neither side's
// consumer shares a connection with the publisher.
func (p *peer) consume(ctx context.Context, stream string, req protocol.Drain) (drainResult, error) {
	nc, err := nats.Connect(p.urls, nats.Name(prog+" consumer"))
	if err != nil {
		return drainResult{}, fmt.Errorf("connecting the consumer: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return drainResult{}, err
	}
	c, err := js.Consumer(ctx, stream, consumerName)
	if err != nil {
		return drainResult{}, fmt.Errorf("looking up the consumer: %w", err)
	}
	h := &drainHandler{ctx: ctx, sync: req.Sync, seen: make([]bool, req.Messages+1), all: make(chan struct{})}

	start := time.Now()
	cc, err := c.Consume(h.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		// Errors here (a missed heartbeat, a leader change) are ones the
		// library recovers from; they are worth seeing, not fatal.
		fmt.Fprintf(p.stderr, "%s: consuming %s: %v\n", prog, stream, err)
	}))
	if err != nil {
		return drainResult{}, fmt.Errorf("starting to consume: %w", err)
	}
	defer func() {
		cc.Stop()
		select {
		case <-cc.Closed():
		case <-time.After(10 * time.Second):
			fmt.Fprintf(p.stderr, "%s: consuming %s did not stop within 10s\n", prog, stream)
		}
	}()
	select {
	case <-h.all:
	case <-ctx.Done():
		return drainResult{}, fmt.Errorf("%d of %d messages handled: %w", h.count(), req.Messages, ctx.Err())
	}
	res := drainResult{handled: time.Since(start)}
	if err := awaitSettled(ctx, c); err != nil {
		return res, err
	}
	res.settled = time.Since(start)
	if n, err := h.failures(); n > 0 {
		return res, fmt.Errorf("%d of %d acks failed; the first: %w", n, req.Messages, err)
	}
	return res, nil
}

// awaitSettled polls the consumer until the server holds no message
// delivered but unacknowledged and none still to deliver.
func awaitSettled(ctx context.Context, c jetstream.Consumer) error {
	for {
		info, err := c.Info(ctx)
		if err == nil && info.NumAckPending == 0 && info.NumPending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d unacknowledged, %d undelivered", info.NumAckPending, info.NumPending)
			}
			return fmt.Errorf("waiting for every ack to settle: %w (%v)", ctx.Err(), err)
		case <-time.After(settlePoll):
		}
	}
}

// drainHandler is the consumer's handler: it acks each message before it
// returns, as an application that has finished with it would, and notes
// when it has seen every message of the stream.
type drainHandler struct {
	ctx  context.Context // bounds each DoubleAck by the drain's deadline
	sync bool

	mu       sync.Mutex
	seen     []bool // by stream sequence: the stream is fresh, so 1 to messages
	distinct int
	failed   int
	firstErr error
	all      chan struct{} // closed once every sequence has been seen
}

// handle acks msg and counts it by its stream sequence, so that a
// redelivery is not counted twice.
func (h *drainHandler) handle(msg jetstream.Msg) {
	var err error
	if h.sync {
		err = msg.DoubleAck(h.ctx)
	} else {
		err = msg.Ack()
	}
	meta, merr := msg.Metadata()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.fail(err)
	}
	if merr != nil {
		h.fail(fmt.Errorf("reading a message's metadata: %w", merr))
		return
	}
	seq := meta.Sequence.Stream
	if seq < 1 || seq >= uint64(len(h.seen)) {
		h.fail(fmt.Errorf("stream sequence %d outside the %d messages published", seq, len(h.seen)-1))
		return
	}
	if !h.seen[seq] {
		h.seen[seq] = true
		h.distinct++
		if h.distinct == len(h.seen)-1 {
			close(h.all)
		}
	}
}

// fail counts a failure and keeps the first; h.mu must be held.
func (h *drainHandler) fail(err error) {
	h.failed++
	if h.firstErr == nil {
		h.firstErr = err
	}
}

// count returns the number of distinct messages handled so far.
func (h *drainHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.distinct
}

// failures returns the number of failed acks and the first failure.
func (h *drainHandler) failures() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed, h.firstErr
}

// publisher counts the acknowledgements of pipelined publishes and keeps
// at most inFlight of them outstanding.
type publisher struct {
	slots  chan struct{} // one token per publish awaiting its acknowledgement
	acked  atomic.Int64
	failed atomic.Int64

	mu       sync.Mutex
	firstErr error
}

// release frees the slot of a publish that has been answered. It never
// blocks, as it runs on the library's acknowledgement goroutine; a second
// answer to one publish, which the library should never give, finds no
// extra token to take and is ignored.
func (pub *publisher) release() {
	select {
	case <-pub.slots:
	default:
	}
}

// onAck is called by the library for every acknowledged publish.
func (pub *publisher) onAck(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) {
	pub.acked.Add(1)
	pub.release()
}

// onError is called by the library for every publish that failed after it
// was sent: an error reply, a timeout or a lost connection.
func (pub *publisher) onError(_ jetstream.JetStream, _ *nats.Msg, err error) {
	pub.fail(err)
	pub.release()
}

// fail counts a failed publish and keeps the first error.
func (pub *publisher) fail(err error) {
	pub.failed.Add(1)
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if pub.firstErr == nil {
		pub.firstErr = err
	}
}

// publish sends n messages of size bytes to subject with at most inFlight
// awaiting acknowledgement, and returns once every one is answered. Every
// publish must be acknowledged: a single failure fails the drain, whose
// figures would otherwise be for fewer messages than asked.
func publish(ctx context.Context, nc *nats.Conn, subject string, n, size int) error {
	pub := &publisher{slots: make(chan struct{}, inFlight)}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncAckHandler(pub.onAck),
		jetstream.WithPublishAsyncErrHandler(pub.onError),
		jetstream.WithPublishAsyncTimeout(publishAckTimeout),
		// The library's own cap matches ours, so it never stalls a
		// publish that our slots have already let through.
		jetstream.WithPublishAsyncMaxPending(inFlight))
	if err != nil {
		return err
	}
	defer js.CleanupPublisher()
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	sent := 0
	for sent < n && pub.failed.Load() == 0 {
		select {
		case pub.slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("publishing: %d of %d sent: %w", sent, n, ctx.Err())
		}
		if _, err := js.PublishAsync(subject, payload); err != nil {
			pub.fail(err)
			pub.release()
			break
		}
		sent++
	}
	// Filling every slot means every publish sent has been answered.
	for range inFlight {
		select {
		case pub.slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("publishing: %d of %d sent, %d acknowledged: %w", sent, n, pub.acked.Load(), ctx.Err())
		}
	}
	if failed := pub.failed.Load(); failed > 0 {
		pub.mu.Lock()
		defer pub.mu.Unlock()
		return fmt.Errorf("publishing: %d of %d sent, %d acknowledged, %d failed; the first: %w", sent, n, pub.acked.Load(), failed, pub.firstErr)
	}
	if acked := pub.acked.Load(); acked != int64(n) {
		return fmt.Errorf("publishing: %d of %d acknowledged", acked, n)
	}
	return nil
}
