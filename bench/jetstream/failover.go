package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnmq/cairn/bench/protocol"
)

// The failover's stream, its one subject and its consumer. Each failover
// runs on a fresh cluster, so the names never clash.
const (
	failoverStream   = "FAILOVER"
	failoverSubject  = "failover"
	failoverConsumer = "failover"
)

// attemptTimeout bounds each attempt of the probe's publishes and of the
// consumer's requests after the kill. An attempt sent while the stream has
// no leader gets no answer, so a short bound is what lets the next attempt
// reach the new leader soon after it is elected.
const attemptTimeout = 250 * time.Millisecond

// retryPause is the pause after an attempt that failed at once (no
// responders, a refused connection), so that the probe does not spin. It
// is the shortest backoff of cairn-bench's own probe.
const retryPause = 20 * time.Millisecond

// failoverResult is one failover's instants, from the kill.
type failoverResult struct {
	publish  time.Duration // the first newly acknowledged publish
	delivery time.Duration // the first delivery to a consumer created after the kill
}

// failover runs one failover on a fresh cluster: it publishes the backlog
// to a three-replica stream, SIGKILLs the stream's leader, and measures
// from the kill the first acknowledged publish and the first delivery to
// a consumer created after the kill. It stops the cluster before it
// returns.
func (p *peer) failover(ctx context.Context, req protocol.Failover) (failoverResult, error) {
	p.failovers++
	dir := filepath.Join(p.dir, fmt.Sprintf("failover-%d", p.failovers))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return failoverResult{}, err
	}
	if !p.keep {
		defer os.RemoveAll(dir)
	}
	cl, err := startCluster(p.bin, dir)
	if err != nil {
		return failoverResult{}, err
	}
	defer cl.stop(p.stderr)
	nc, err := cl.waitReady(ctx, readyTimeout)
	if err != nil {
		return failoverResult{}, err
	}
	defer nc.Close()
	leader, err := prepareStream(ctx, nc, cl, req)
	if err != nil {
		return failoverResult{}, err
	}
	kill := time.Now()
	leader.kill()
	res, err := watchFailover(ctx, strings.Join(cl.clientURLs(), ","), kill, req)
	if err == nil {
		fmt.Fprintf(p.stderr, "%s: failover %d: killed %s, the stream's leader; first publish %v, first delivery %v\n",
			prog, p.failovers, leader.name, res.publish.Round(time.Millisecond), res.delivery.Round(time.Millisecond))
	}
	return res, err
}

// prepareStream creates the failover's stream, publishes the backlog to
// it, and returns the server that leads it once every replica is current,
// so that the kill finds the stream settled, as cairn-bench's kill finds
// its queue.
func prepareStream(ctx context.Context, nc *nats.Conn, cl *cluster, req protocol.Failover) (*server, error) {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     failoverStream,
		Subjects: []string{failoverSubject},
		Replicas: clusterSize,
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("creating stream %s: %w", failoverStream, err)
	}
	if req.Backlog > 0 {
		if err := publish(ctx, nc, failoverSubject, req.Backlog, req.Size); err != nil {
			return nil, err
		}
	}
	return settledLeader(ctx, s, cl)
}

// settledLeader waits, up to ten seconds, until the stream has a leader
// and every replica reports itself current, and returns the leader's
// server. A replica still catching up after that is no reason to give up:
// the kill then goes ahead.
func settledLeader(ctx context.Context, s jetstream.Stream, cl *cluster) (*server, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := s.Info(ctx)
		leader := ""
		if err == nil && info.Cluster != nil {
			leader = info.Cluster.Leader
		}
		if leader != "" && (allCurrent(info.Cluster) || time.Now().After(deadline)) {
			for _, srv := range cl.servers {
				if srv.name == leader {
					return srv, nil
				}
			}
			return nil, fmt.Errorf("the stream's leader %q is none of the cluster's servers", leader)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream %s has no leader after 10s (%v)", failoverStream, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// allCurrent reports whether every follower of the stream is current.
func allCurrent(ci *jetstream.ClusterInfo) bool {
	if len(ci.Replicas) != clusterSize-1 {
		return false
	}
	for _, r := range ci.Replicas {
		if !r.Current || r.Offline {
			return false
		}
	}
	return true
}

// kill sends SIGKILL to s and waits until it has exited.
func (s *server) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// watchFailover runs, from the kill, a probe publisher and a fresh
// consumer, each on a connection of its own made after the kill, as
// cairn-bench's fresh clients are, and returns when each first succeeded.
func watchFailover(ctx context.Context, urls string, kill time.Time, req protocol.Failover) (failoverResult, error) {
	ctx, cancel := context.WithDeadline(ctx, kill.Add(req.Timeout))
	defer cancel()
	type outcome struct {
		at  time.Time
		err error
	}
	pub, del := make(chan outcome, 1), make(chan outcome, 1)
	go func() {
		at, err := probePublish(ctx, urls, req.Size)
		pub <- outcome{at, err}
	}()
	go func() {
		at, err := firstDelivery(ctx, urls)
		del <- outcome{at, err}
	}()
	p, d := <-pub, <-del
	switch {
	case p.err != nil:
		return failoverResult{}, fmt.Errorf("no publish acknowledged within %v of the kill: %w", req.Timeout, p.err)
	case d.err != nil:
		return failoverResult{}, fmt.Errorf("no delivery to a fresh consumer within %v of the kill: %w", req.Timeout, d.err)
	}
	return failoverResult{publish: p.at.Sub(kill), delivery: d.at.Sub(kill)}, nil
}

// connect connects to the cluster, trying until ctx ends: right after the
// kill, the server picked first may be the dead one.
func connect(ctx context.Context, urls, name string) (*nats.Conn, error) {
	for {
		nc, err := nats.Connect(urls, nats.Name(prog+" "+name), nats.Timeout(attemptTimeout))
		if err == nil {
			return nc, nil
		}
		if werr := pause(ctx); werr != nil {
			return nil, fmt.Errorf("connecting: %w (last error: %v)", werr, err)
		}
	}
}

// connectJetStream connects (retrying, as connect does) and opens the
// JetStream API on the connection, which the caller closes.
func connectJetStream(ctx context.Context, urls, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := connect(ctx, urls, name)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// pause waits retryPause, or returns ctx's error if it ends first.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(retryPause):
		return nil
	}
}

// probePublish publishes, one attempt at a time, each bounded by
// attemptTimeout, until one is acknowledged, and returns when.
func probePublish(ctx context.Context, urls string, size int) (time.Time, error) {
	nc, js, err := connectJetStream(ctx, urls, "probe")
	if err != nil {
		return time.Time{}, err
	}
	defer nc.Close()
	payload := make([]byte, size)
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := js.Publish(actx, failoverSubject, payload, jetstream.WithRetryAttempts(0))
		cancel()
		if err == nil {
			return time.Now(), nil
		}
		if werr := pause(ctx); werr != nil {
			return time.Time{}, fmt.Errorf("%w (last error: %v)", werr, err)
		}
	}
}

// firstDelivery creates a durable consumer with explicit acks, retrying
// until the cluster accepts it, then pulls one message at a time until
// one arrives, acks it, and returns when it arrived.
func firstDelivery(ctx context.Context, urls string) (time.Time, error) {
	nc, js, err := connectJetStream(ctx, urls, "consumer")
	if err != nil {
		return time.Time{}, err
	}
	defer nc.Close()
	var c jetstream.Consumer
	for c == nil {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		c, err = js.CreateOrUpdateConsumer(actx, failoverStream, jetstream.ConsumerConfig{
			Durable:   failoverConsumer,
			AckPolicy: jetstream.AckExplicitPolicy,
		})
		cancel()
		if err != nil {
			if werr := pause(ctx); werr != nil {
				return time.Time{}, fmt.Errorf("creating the consumer: %w (last error: %v)", werr, err)
			}
		}
	}
	for {
		msg, err := c.Next(jetstream.FetchMaxWait(attemptTimeout))
		if err == nil {
			at := time.Now()
			msg.Ack()
			return at, nil
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		if !errors.Is(err, nats.ErrTimeout) {
			if werr := pause(ctx); werr != nil {
				return time.Time{}, fmt.Errorf("%w (last error: %v)", werr, err)
			}
		}
	}
}
