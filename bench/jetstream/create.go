package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnmq/cairn/bench/protocol"
)

// createTimeout bounds one stream's create. JetStream answers a create
// once the stream's group has a leader; a create that takes longer than
// this fails the run with a clear error instead of stalling it.
const createTimeout = time.Minute

// create makes req.Streams three-replica file streams on a fresh cluster,
// req.Concurrency creators at once, each waiting for its create before it
// starts the next (as cairn-bench queues' creators do), and stops the
// cluster before it returns.
func (p *peer) create(ctx context.Context, req protocol.Create) (protocol.CreateAnswer, error) {
	p.creates++
	dir := filepath.Join(p.dir, fmt.Sprintf("create-%d", p.creates))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return protocol.CreateAnswer{}, err
	}
	if !p.keep {
		defer os.RemoveAll(dir)
	}
	cl, err := startCluster(p.bin, dir)
	if err != nil {
		return protocol.CreateAnswer{}, err
	}
	defer cl.stop(p.stderr)
	nc, err := cl.waitReady(ctx, readyTimeout)
	if err != nil {
		return protocol.CreateAnswer{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return protocol.CreateAnswer{}, err
	}
	latencies, elapsed, err := createStreams(ctx, js, req)
	if err != nil {
		return protocol.CreateAnswer{}, err
	}
	slices.Sort(latencies)
	ans := protocol.CreateAnswer{
		Rate:    float64(len(latencies)) / elapsed.Seconds(),
		P50:     nearestRank(latencies, 50).Seconds(),
		P95:     nearestRank(latencies, 95).Seconds(),
		Max:     latencies[len(latencies)-1].Seconds(),
		Created: len(latencies),
	}
	fmt.Fprintf(p.stderr, "%s: create %d: %d streams in %v, %.1f/s\n", prog, p.creates, len(latencies), elapsed.Round(time.Millisecond), ans.Rate)
	return ans, nil
}

// createStreams runs the creators and returns each create's latency and
// the time the whole run took. The first failed create stops every
// creator and is the run's error.
func createStreams(ctx context.Context, js jetstream.JetStream, req protocol.Create) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		next      int
		latencies []time.Duration
		firstErr  error
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= req.Streams || firstErr != nil {
			return 0, false
		}
		next++
		return next, true
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range req.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ok := take(); ok; i, ok = take() {
				began := time.Now()
				cctx, ccancel := context.WithTimeout(ctx, createTimeout)
				_, err := js.CreateStream(cctx, jetstream.StreamConfig{
					Name:     fmt.Sprintf("Q%06d", i),
					Subjects: []string{fmt.Sprintf("q.%06d", i)},
					Replicas: clusterSize,
					Storage:  jetstream.FileStorage,
				})
				ccancel()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("creating stream Q%06d: %w", i, err)
					cancel()
				}
				latencies = append(latencies, time.Since(began))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return latencies, time.Since(start), firstErr
}
