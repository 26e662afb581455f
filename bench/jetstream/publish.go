package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnmq/cairn/bench/protocol"
)

// publishSettleTimeout bounds the wait, after a publish window, for the
// consumer to receive every acknowledged message.
const publishSettleTimeout = time.Minute

// publishTally collects the outcomes of one window's publishes as their
// acknowledgements arrive.
type publishTally struct {
	countFrom, end time.Time // acknowledgements in [countFrom, end] count toward the rate

	mu        sync.Mutex
	counted   int
	confirmed int
	failed    int
	firstErr  error
	latencies []time.Duration // of the publishes started from countFrom on
	sequences []uint64        // the stream sequence of every acknowledged publish
}

// record notes one publish's outcome.
func (t *publishTally) record(started, done time.Time, ack *jetstream.PubAck, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.confirmed++
	t.sequences = append(t.sequences, ack.Sequence)
	if !done.Before(t.countFrom) && !done.After(t.end) {
		t.counted++
	}
	if !started.Before(t.countFrom) {
		t.latencies = append(t.latencies, done.Sub(started))
	}
}

// publishWindow runs one publish window on the drains' cluster: a fresh
// stream, a consumer on its own connection acking every message (Ack, the
// library's default), and publishes kept req.InFlight outstanding for
// req.Window, each awaited on a goroutine of its own as cairn-bench awaits
// cairn's. It answers with the rate of acknowledgements completed after
// the warmup, the confirm latency of the publishes started after it, and
// how many acknowledged messages the consumer never received.
func (p *peer) publishWindow(ctx context.Context, req protocol.Publish) (protocol.PublishAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Window+drainTimeout)
	defer cancel()
	p.drains++
	stream, subject := fmt.Sprintf("PUBLISH%d", p.drains), fmt.Sprintf("publish.%d", p.drains)
	js, err := jetstream.New(p.nc, jetstream.WithPublishAsyncMaxPending(req.InFlight),
		jetstream.WithPublishAsyncTimeout(publishAckTimeout))
	if err != nil {
		return protocol.PublishAnswer{}, err
	}
	defer js.CleanupPublisher()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{subject}, Replicas: clusterSize, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return protocol.PublishAnswer{}, fmt.Errorf("creating stream %s: %w", stream, err)
	}
	defer p.deleteStream(js, stream)
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		return protocol.PublishAnswer{}, fmt.Errorf("creating the consumer: %w", err)
	}
	col, err := p.collect(ctx, stream)
	if err != nil {
		return protocol.PublishAnswer{}, err
	}
	defer col.stop()

	t := p.publishFor(ctx, js, subject, req)
	if ctx.Err() != nil {
		return protocol.PublishAnswer{}, fmt.Errorf("publishing: %w", ctx.Err())
	}
	ans := protocol.PublishAnswer{
		Rate:      float64(t.counted) / (req.Window - req.Warmup).Seconds(),
		Confirmed: t.confirmed, Failed: t.failed,
	}
	if t.failed > 0 {
		fmt.Fprintf(p.stderr, "%s: %d publishes of %s failed; the first: %v\n", prog, t.failed, stream, t.firstErr)
	}
	if len(t.latencies) > 0 {
		slices.Sort(t.latencies)
		ans.P50 = nearestRank(t.latencies, 50).Seconds()
		ans.P99 = nearestRank(t.latencies, 99).Seconds()
		ans.Max = t.latencies[len(t.latencies)-1].Seconds()
	}
	ans.Lost = col.awaitAll(ctx, t.sequences, publishSettleTimeout)
	return ans, nil
}

// publishFor starts publishes until the window ends, with at most
// req.InFlight outstanding, and returns once every one is answered.
func (p *peer) publishFor(ctx context.Context, js jetstream.JetStream, subject string, req protocol.Publish) *publishTally {
	payload := make([]byte, req.Size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	began := time.Now()
	t := &publishTally{countFrom: began.Add(req.Warmup), end: began.Add(req.Window)}
	slots := make(chan struct{}, req.InFlight)
	var wg sync.WaitGroup
	for ctx.Err() == nil && time.Now().Before(t.end) {
		slots <- struct{}{}
		started := time.Now()
		f, err := js.PublishAsync(subject, payload)
		if err != nil {
			t.record(started, time.Now(), nil, err)
			<-slots
			continue
		}
		wg.Go(func() {
			var ack *jetstream.PubAck
			var err error
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			case <-ctx.Done():
				err = ctx.Err()
			}
			done := time.Now()
			<-slots
			t.record(started, done, ack, err)
		})
	}
	wg.Wait()
	return t
}

// deleteStream deletes a drain's or a window's stream with a context of
// its own, as theirs may be what ended them: a stream left behind would
// weigh on the next ones.
func (p *peer) deleteStream(js jetstream.JetStream, stream string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, stream); err != nil {
		fmt.Fprintf(p.stderr, "%s: deleting stream %s: %v\n", prog, stream, err)
	}
}

// nearestRank is the p-th percentile of sorted durations by nearest rank.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// collector is a consumer on a connection of its own that acks every
// message and counts the distinct stream sequences it received.
type collector struct {
	nc *nats.Conn
	cc jetstream.ConsumeContext

	mu   sync.Mutex
	seen map[uint64]bool
}

// collect starts a collector on the stream's durable consumer.
func (p *peer) collect(ctx context.Context, stream string) (*collector, error) {
	nc, err := nats.Connect(p.urls, nats.Name(prog+" consumer"))
	if err != nil {
		return nil, fmt.Errorf("connecting the consumer: %w", err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		var c jetstream.Consumer
		if c, err = js.Consumer(ctx, stream, consumerName); err == nil {
			col := &collector{nc: nc, seen: map[uint64]bool{}}
			if col.cc, err = c.Consume(col.handle); err == nil {
				return col, nil
			}
		}
	}
	nc.Close()
	return nil, fmt.Errorf("starting the consumer: %w", err)
}

// handle acks a message and counts its stream sequence.
func (col *collector) handle(msg jetstream.Msg) {
	msg.Ack()
	meta, err := msg.Metadata()
	if err != nil {
		return
	}
	col.mu.Lock()
	col.seen[meta.Sequence.Stream] = true
	col.mu.Unlock()
}

// awaitAll waits until the collector has received every one of the
// stream sequences, or timeout has passed, and returns how many of them
// it has not received. Each look keeps only the sequences still missing,
// so the wait costs no more than one pass over them in all.
func (col *collector) awaitAll(ctx context.Context, sequences []uint64, timeout time.Duration) int {
	left := slices.Clone(sequences)
	deadline := time.Now().Add(timeout)
	for {
		left = col.stillMissing(left)
		if len(left) == 0 || ctx.Err() != nil || time.Now().After(deadline) {
			return len(left)
		}
		time.Sleep(settlePoll)
	}
}

// stillMissing returns, in place, the sequences the collector has not
// received.
func (col *collector) stillMissing(sequences []uint64) []uint64 {
	col.mu.Lock()
	defer col.mu.Unlock()
	return slices.DeleteFunc(sequences, func(seq uint64) bool { return col.seen[seq] })
}

// stop stops consuming and closes the collector's connection.
func (col *collector) stop() {
	col.cc.Stop()
	col.nc.Close()
}
