package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

var secret = []byte("client-test-secret")

// fakeNode is a scripted node: it completes the handshake and answers
// each request with whatever answer returns. A nil answer closes the
// connection without a reply.
type fakeNode struct {
	id     uint32
	ln     net.Listener
	answer func(m wire.Message) wire.Message

	mu    sync.Mutex
	seen  []wire.Message
	conns int
	// settleFrames counts the frames that carried settles (one Settle, or
	// a SettleBatch of several).
	settleFrames int
	// acceptDelay holds each connection before its handshake, as a slow
	// or distant node would.
	acceptDelay time.Duration
}

// fakeCluster starts n fake nodes that know about each other.
func fakeCluster(t *testing.T, n int, answer func(id uint32, m wire.Message) wire.Message) []*fakeNode {
	t.Helper()
	var nodes []*fakeNode
	var infos []session.NodeInfo
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		f := &fakeNode{id: uint32(i + 1), ln: ln}
		f.answer = func(m wire.Message) wire.Message { return answer(f.id, m) }
		nodes = append(nodes, f)
		infos = append(infos, session.NodeInfo{ID: f.id, ClientAddr: ln.Addr().String()})
	}
	for _, f := range nodes {
		go f.serve(infos)
	}
	return nodes
}

func (f *fakeNode) serve(infos []session.NodeInfo) {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.handle(nc, infos)
	}
}

func (f *fakeNode) handle(nc net.Conn, infos []session.NodeInfo) {
	defer nc.Close()
	f.mu.Lock()
	delay := f.acceptDelay
	f.mu.Unlock()
	time.Sleep(delay)
	br := bufio.NewReader(nc)
	if _, err := (session.Responder{Self: f.id, Keys: session.Keys{Client: secret}, Nodes: infos}).Handshake(br, nc); err != nil {
		return
	}
	f.mu.Lock()
	f.conns++
	f.mu.Unlock()
	for {
		frame, err := session.ReadFrame(br, wire.MaxBodySize)
		if err != nil {
			return
		}
		m, err := wire.Decode(frame)
		if err != nil {
			return
		}
		// A node takes a batch of settles as the settles it carries.
		reqs := []wire.Message{m}
		switch m.(type) {
		case *wire.Settle, *wire.SettleBatch:
			f.mu.Lock()
			f.settleFrames++
			f.mu.Unlock()
		}
		if b, ok := m.(*wire.SettleBatch); ok {
			reqs = reqs[:0]
			for _, s := range b.Settles() {
				reqs = append(reqs, s)
			}
		}
		for _, req := range reqs {
			f.mu.Lock()
			f.seen = append(f.seen, req)
			f.mu.Unlock()
			reply := f.answer(req)
			if reply == nil {
				return
			}
			nc.Write(wire.Encode(nil, reply))
		}
	}
}

func (f *fakeNode) addr() string { return f.ln.Addr().String() }

// dialTest dials addrs with the test options under a 10 s bound; the
// client is closed when the test ends.
func dialTest(t *testing.T, addrs ...string) (context.Context, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := Dial(ctx, testOptions(), addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}

func reqID(m wire.Message) uint64 {
	switch m := m.(type) {
	case *wire.Publish:
		return m.ReqID
	case *wire.CreateQueue:
		return m.ReqID
	case *wire.SetQueueOptions:
		return m.ReqID
	}
	return 0
}

func testOptions() Options {
	return Options{Secret: secret, RequestTimeout: 30 * time.Second, MaxAttempts: 3, RetryBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
}

// TestEOFMakesPendingRequestsAmbiguousAtOnce: a node that reads a
// publish and hangs up must not leave the caller waiting for the 30s
// request timeout; the outcome is unknown, never failed.
func TestEOFMakesPendingRequestsAmbiguousAtOnce(t *testing.T) {
	nodes := fakeCluster(t, 1, func(uint32, wire.Message) wire.Message { return nil })
	ctx, c := dialTest(t, nodes[0].addr())
	began := time.Now()
	_, err := c.Publish(ctx, "q", []byte("x"))
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("publish over a connection that closed: %v, want ErrUnknownOutcome", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("took %v: the disconnect did not end the wait", took)
	}
}

// TestRedirectFollowsNodeIDs: the node first dialed redirects to another
// node by ID; the client finds its address in the welcome and succeeds
// there.
func TestRedirectFollowsNodeIDs(t *testing.T) {
	nodes := fakeCluster(t, 3, func(id uint32, m wire.Message) wire.Message {
		if id != 3 {
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusNotOwner, Owner: 3}
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK, Index: 7}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if got := len(c.Nodes()); got != 3 {
		t.Fatalf("learned %d nodes, want 3", got)
	}
	if _, err := c.Publish(ctx, "q", []byte("x")); err != nil {
		t.Fatalf("publish: %v", err)
	}
	nodes[2].mu.Lock()
	defer nodes[2].mu.Unlock()
	if len(nodes[2].seen) == 0 {
		t.Fatal("the owner never saw the publish")
	}
}

// TestDialFallsBackToLaterAddresses: a dead first address is skipped.
func TestDialFallsBackToLaterAddresses(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	ctx, c := dialTest(t, deadAddr, nodes[0].addr())
	if err := c.CreateQueue(ctx, "q", PolicyAll); err != nil {
		t.Fatal(err)
	}
}

// TestCreateQueueCarriesItsWindow: WithDedupWindow reaches the node in
// the create request; without it the request carries none (the nodes'
// default).
func TestCreateQueueCarriesItsWindow(t *testing.T) {
	windows := make(chan time.Duration, 2)
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		if cq, ok := m.(*wire.CreateQueue); ok {
			windows <- cq.DedupWindow
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := c.CreateQueue(ctx, "q", PolicyAll, WithDedupWindow(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateQueue(ctx, "r", PolicyAll); err != nil {
		t.Fatal(err)
	}
	if a, b := <-windows, <-windows; a != 5*time.Minute || b != 0 {
		t.Fatalf("the create requests carried windows %v and %v, want 5m0s and 0s", a, b)
	}
	if MaxDeliveriesLimit != wire.MaxDeliveriesLimit {
		t.Fatalf("the client's delivery limit bound %d is not the nodes' %d", MaxDeliveriesLimit, wire.MaxDeliveriesLimit)
	}
	if MinDedupWindow != wire.MinDedupWindow || MaxDedupWindow != wire.MaxDedupWindow {
		t.Fatalf("the client's window bounds [%v, %v] are not the nodes' [%v, %v]", MinDedupWindow, MaxDedupWindow, wire.MinDedupWindow, wire.MaxDedupWindow)
	}
}

// TestDefiniteFailureIsTyped: a refusal that promises nothing happened is
// a StatusError, not an unknown outcome.
func TestDefiniteFailureIsTyped(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusNoQueue}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	_, err := c.Publish(ctx, "q", []byte("x"))
	var se *StatusError
	if !errors.As(err, &se) || se.Status != StatusNoQueue || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("publish: %v, want a StatusError with no-queue", err)
	}
}

// TestCloseEndsPendingOperations: Close must not leave callers waiting.
func TestCloseEndsPendingOperations(t *testing.T) {
	block := make(chan struct{})
	nodes := fakeCluster(t, 1, func(uint32, wire.Message) wire.Message {
		<-block
		return nil
	})
	defer close(block)
	ctx, c := dialTest(t, nodes[0].addr())
	p := c.PublishAsync(ctx, "q", []byte("x"))
	time.Sleep(50 * time.Millisecond)
	c.Close()
	if _, err := p.Wait(); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("publish in flight at Close: %v, want ErrClosed and ErrUnknownOutcome", err)
	}
	if _, err := c.Publish(ctx, "q", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after Close: %v, want ErrClosed", err)
	}
}

// TestLocalRefusalsSayWhy: a request the client refuses without sending
// it fails with a StatusError whose Detail says what was wrong and what is
// accepted, as a node's refusal would; no node saw it to explain.
func TestLocalRefusalsSayWhy(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	long := strings.Repeat("q", wire.MaxQueueNameLen+1)
	publish := func(queue string, payload []byte, opts ...PublishOption) func() error {
		return func() error { _, err := c.Publish(ctx, queue, payload, opts...); return err }
	}
	subscribe := func(opts ...SubscribeOption) func() error {
		return func() error {
			_, err := c.Subscribe(ctx, "q", func(context.Context, *Delivery) {}, opts...)
			return err
		}
	}
	for _, tc := range []struct {
		name   string
		do     func() error
		status Status
		detail string
	}{
		{"create with an empty name", func() error { return c.CreateQueue(ctx, "", PolicyAll) }, StatusBadRequest,
			"queue name is 0 bytes long: a name is 1 to 200 bytes"},
		{"create with an unknown policy", func() error { return c.CreateQueue(ctx, "q", 7) }, StatusBadRequest,
			"unknown confirmation policy 7: want PolicyMajority, PolicyAll or PolicyOwnerOnly"},
		{"create with a short window", func() error { return c.CreateQueue(ctx, "q", PolicyAll, WithDedupWindow(100*time.Millisecond)) },
			StatusBadRequest, "deduplication window 100ms is outside [1s, 24h0m0s]"},
		{"delete with a long name", func() error { return c.DeleteQueue(ctx, long) }, StatusBadRequest,
			"queue name is 201 bytes long: a name is 1 to 200 bytes"},
		{"publish with an empty name", publish("", []byte("x")), StatusBadRequest, "queue name is 0 bytes long"},
		{"publish too large", publish("q", make([]byte, wire.MaxPayloadSize+1)), StatusTooLarge,
			"payload of 1048577 bytes exceeds 1048576: a message carries at most 1048576 bytes"},
		{"publish with a negative delay", publish("q", []byte("x"), WithDelay(-time.Second)), StatusBadRequest,
			"delay -1s is negative: a message's delay is zero or more"},
		{"subscribe with a zero window", subscribe(WithWindow(0)), StatusBadRequest,
			"subscription window is 0: it must allow at least one unsettled delivery"},
		{"subscribe with a zero lease", subscribe(WithLease(0)), StatusBadRequest,
			"lease 0s is not positive: a delivery must stay leased for some time"},
		{"subscribe with a negative lease", subscribe(WithLease(-time.Second)), StatusBadRequest, "lease -1s is not positive"},
		{"set an unknown detection mode", func() error {
			return c.SetDetection(ctx, Detection{Mode: 3, Interval: time.Second})
		}, StatusBadRequest, "invalid detection policy (mode 3, interval 1s, grace 0s): want mode 1 (heartbeat) or 2 (eager)"},
		{"ack a delivery that names no node", func() error {
			d := &Delivery{Queue: "q", c: c, d: core.Delivery{Queue: "q", ID: wire.MessageID{Producer: 1, Seq: 2}, Lease: 1}}
			return d.Ack(ctx)
		}, StatusBadRequest, "delivery of p1.2 names no node (From is 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			var se *StatusError
			if !errors.As(err, &se) || se.Status != tc.status {
				t.Fatalf("got %v, want a StatusError with %s", err, tc.status)
			}
			if !strings.Contains(se.Detail, tc.detail) || !strings.Contains(se.Error(), tc.detail) {
				t.Fatalf("error %q with detail %q, want a detail containing %q", se.Error(), se.Detail, tc.detail)
			}
		})
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	if len(nodes[0].seen) != 0 {
		t.Fatalf("the node saw %d requests the client should have refused itself", len(nodes[0].seen))
	}
}

// TestABurstSentWhileDialingIsWrittenNotDropped: publishes redirected to
// a node the client has not dialed yet wait for the connection; a burst
// of them larger than the send queue goes out on the fresh connection,
// instead of dropping it (which once crashed the client, and would only
// have made it send the same burst again).
func TestABurstSentWhileDialingIsWrittenNotDropped(t *testing.T) {
	nodes := fakeCluster(t, 2, func(id uint32, m wire.Message) wire.Message {
		if id != 2 {
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusNotOwner, Owner: 2}
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK, Index: 1}
	})
	// The owner takes its time to accept, so that every redirect is in
	// before the connection is up.
	nodes[1].mu.Lock()
	nodes[1].acceptDelay = 300 * time.Millisecond
	nodes[1].mu.Unlock()
	opts := testOptions()
	opts.SendQueue = 4
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, opts, nodes[0].addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const burst = 200
	var published []*Publishing
	for range burst {
		published = append(published, c.PublishAsync(ctx, "q", []byte("x")))
	}
	for i, p := range published {
		if _, err := p.Wait(); err != nil {
			t.Fatalf("publish %d of the burst: %v", i, err)
		}
	}
	nodes[1].mu.Lock()
	defer nodes[1].mu.Unlock()
	if nodes[1].conns != 1 {
		t.Fatalf("the owner saw %d connections, want 1: the burst dropped one", nodes[1].conns)
	}
}
