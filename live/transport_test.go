package live

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// openClientSession dials addr and completes the client handshake.
func openClientSession(t *testing.T, addr string, secret []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := (session.Initiator{Role: session.RoleClient, Secret: secret}).Handshake(br, nc); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	nc.SetDeadline(time.Time{})
	return nc, br
}

// header builds a frame header announcing a body of n bytes.
func header(kind wire.Kind, n uint32) []byte {
	h := make([]byte, wire.HeaderSize)
	h[0] = wire.Version
	binary.LittleEndian.PutUint16(h[1:3], uint16(kind))
	binary.LittleEndian.PutUint32(h[3:7], n)
	return h
}

// badInputs are ways to misbehave on the client port. Each must cost the
// sender its connection, with a log line naming the reason, and nothing
// else.
var badInputs = []struct {
	name   string
	reason string // a fragment of the logged reason
	act    func(t *testing.T, addr string) net.Conn
}{
	{"no proof of the secret", "session-handshake failed", func(t *testing.T, addr string) net.Conn {
		nc, _ := net.Dial("tcp", addr)
		_, err := (session.Initiator{Role: session.RoleClient}).Handshake(bufio.NewReader(nc), nc)
		var refused *session.RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("handshake without the secret: %v, want a refusal", err)
		}
		return nc
	}},
	{"wrong secret", "session-handshake failed", func(t *testing.T, addr string) net.Conn {
		nc, _ := net.Dial("tcp", addr)
		_, err := (session.Initiator{Role: session.RoleClient, Secret: []byte("not the secret")}).Handshake(bufio.NewReader(nc), nc)
		if !errors.Is(err, session.ErrBadProof) {
			t.Errorf("handshake with the wrong secret: %v, want ErrBadProof", err)
		}
		nc.Close() // the client gives up; the node must notice and drop it
		return nc
	}},
	{"garbage before the handshake", "session-handshake failed", func(t *testing.T, addr string) net.Conn {
		nc, _ := net.Dial("tcp", addr)
		nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		return nc
	}},
	{"oversized handshake frame", "session-handshake failed", func(t *testing.T, addr string) net.Conn {
		nc, _ := net.Dial("tcp", addr)
		nc.Write(header(0xFE01, session.MaxHandshakeBody+1))
		return nc
	}},
	{"peer on the client port", "session-handshake failed", func(t *testing.T, addr string) net.Conn {
		nc, _ := net.Dial("tcp", addr)
		(session.Initiator{Role: session.RolePeer, Self: 1, Secret: testSecret}).Handshake(bufio.NewReader(nc), nc)
		return nc
	}},
	{"oversized frame header", "oversized-frame", func(t *testing.T, addr string) net.Conn {
		nc, _ := openClientSession(t, addr, testSecret)
		nc.Write(header(wire.KindPublish, wire.MaxBodySize))
		return nc
	}},
	{"truncated frame", "truncated-frame", func(t *testing.T, addr string) net.Conn {
		nc, _ := openClientSession(t, addr, testSecret)
		frame := wire.Encode(nil, &wire.Publish{ReqID: 1, Queue: "q", Payload: []byte("half of me")})
		nc.Write(frame[:len(frame)-5])
		nc.(*net.TCPConn).CloseWrite()
		return nc
	}},
	{"corrupt frame", "malformed", func(t *testing.T, addr string) net.Conn {
		nc, _ := openClientSession(t, addr, testSecret)
		frame := wire.Encode(nil, &wire.Publish{ReqID: 1, Queue: "q", Payload: []byte("flip")})
		frame[len(frame)-1] ^= 1
		nc.Write(frame)
		return nc
	}},
	{"a reply sent by a client", "protocol-violation", func(t *testing.T, addr string) net.Conn {
		nc, _ := openClientSession(t, addr, testSecret)
		nc.Write(wire.Encode(nil, &wire.Reply{ReqID: 1}))
		return nc
	}},
}

// TestBadInputClosesOnlyThatConnection sends each kind of bad input on a
// fresh connection and checks that the node closes it with a logged
// reason while a well-behaved client keeps being served.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	cfg := singleConfig(t)
	cfg.HandshakeTimeout = 2 * time.Second
	tn := start(t, cfg)
	waitFor(t, 10*time.Second, "a metadata leader", func() bool { return tn.Status().LeaderTerm > 0 })
	good := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 30*time.Second)
	if err := good.CreateQueue(ctx, "q", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	for _, bad := range badInputs {
		t.Run(bad.name, func(t *testing.T) {
			nc := bad.act(t, tn.ClientAddr())
			defer nc.Close()
			local := nc.LocalAddr().String()
			nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := io.Copy(io.Discard, nc)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the node kept the connection open")
			}
			waitFor(t, 2*time.Second, "the reason in the log", func() bool {
				return tn.logsMention("remote="+local, bad.reason)
			})
			if _, err := good.Publish(ctx, "q", []byte("still here")); err != nil {
				t.Fatalf("the well-behaved client was not served: %v", err)
			}
		})
	}
}

// TestWrongSecretIsRefused checks that a client with the wrong secret
// cannot connect, and that both sides call it a secret mismatch: neither
// can tell which of the two secrets is the wrong one.
func TestWrongSecretIsRefused(t *testing.T) {
	tn := start(t, singleConfig(t))
	ctx := ctxFor(t, 5*time.Second)
	_, err := client.Dial(ctx, client.Options{Secret: []byte("wrong")}, tn.ClientAddr())
	if !errors.Is(err, session.ErrBadProof) || !strings.Contains(err.Error(), "secret mismatch") {
		t.Fatalf("dial with the wrong secret: %v, want ErrBadProof saying secret mismatch", err)
	}
	// Without proving anything first, the node is the one to notice.
	nc, _ := net.Dial("tcp", tn.ClientAddr())
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = (session.Initiator{Role: session.RoleClient}).Handshake(bufio.NewReader(nc), nc)
	waitFor(t, 5*time.Second, "the node's log line", func() bool { return tn.logsMention("refusing connection", "secret mismatch") })
	if !strings.Contains(err.Error(), "secret mismatch") || strings.Contains(tn.logs.String(), "failed to prove") {
		t.Fatalf("the initiator heard %v; the node logged:\n%s", err, tn.logs.String())
	}
}

// TestReplyOverflowIsCountedNeverBlocks floods a client that never reads:
// the node's goroutine must not stall, every dropped reply is counted,
// and the client's connection is closed, so its leases do not wait out
// deliveries it will never see.
func TestReplyOverflowIsCountedNeverBlocks(t *testing.T) {
	cfg := singleConfig(t)
	cfg.SendQueue = 8
	tn := start(t, cfg)
	openClientSession(t, tn.ClientAddr(), testSecret) // and never read from it
	waitFor(t, 5*time.Second, "the connection to register", func() bool { return tn.Status().Clients == 1 })
	conn := node.ConnID(tn.nextConn.Load())
	const replies = 2000
	took := make(chan time.Duration, 1)
	payload := make([]byte, 64<<10)
	tn.post(func() {
		start := time.Now()
		for range replies {
			tn.env.Reply(conn, &wire.Delivery{Queue: "q", Payload: payload})
		}
		took <- time.Since(start)
	})
	select {
	case d := <-took:
		t.Logf("%d replies of 64 KiB queued in %v", replies, d)
	case <-time.After(10 * time.Second):
		t.Fatal("Env.Reply blocked the node's goroutine")
	}
	dropped := counterValue(tn.m.dropped.WithLabelValues(sideClient, "overflow"))
	if dropped < replies/2 {
		t.Fatalf("%v replies counted as dropped, want most of %d", dropped, replies)
	}
	waitFor(t, 5*time.Second, "the flooded client to be disconnected", func() bool { return tn.Status().Clients == 0 })
	if got := counterValue(tn.m.closed.WithLabelValues(sideClient, "send-queue-full")); got != 1 {
		t.Fatalf("%v client connections closed for a full send queue, want 1", got)
	}
	other := dial(t, tn.ClientAddr())
	if err := other.CreateQueue(ctxFor(t, 10*time.Second), "still-serving", client.PolicyMajority); err != nil {
		t.Fatalf("the node stopped serving others: %v", err)
	}
}

// TestEnqueueDropsWhenFull checks the bounded queue without a network:
// with no writer draining it, everything beyond its capacity is dropped.
func TestEnqueueDropsWhenFull(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	m := newMetrics()
	fc := newFrameConn(a, bufio.NewReader(a), sidePeer, wire.MaxBodySize, 4, discardLogger(), m)
	for range 10 {
		fc.enqueue([]byte{1})
	}
	if got := counterValue(m.dropped.WithLabelValues(sidePeer, "overflow")); got != 6 {
		t.Fatalf("dropped %v, want 6", got)
	}
	if fc.queued() != 4 {
		t.Fatalf("queued %d, want 4", fc.queued())
	}
}

// TestDataDirectoryIsLocked checks that a second runtime cannot use a
// data directory that is in use.
func TestDataDirectoryIsLocked(t *testing.T) {
	cfg := singleConfig(t)
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.release()
	_, err = New(cfg)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second New on the same directory: %v, want an in-use error", err)
	}
}

// TestDataDirectoryProblemsAreNamed checks that a data directory the
// process cannot use for a reason other than another process holding it
// is not reported as in use.
func TestDataDirectoryProblemsAreNamed(t *testing.T) {
	t.Run("unwritable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root may write anywhere")
		}
		cfg := singleConfig(t)
		if err := os.Chmod(cfg.DataDir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(cfg.DataDir, 0o700)
		_, err := New(cfg)
		if err == nil || strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "not writable") {
			t.Fatalf("New on a read-only data directory: %v, want it called not writable", err)
		}
	})
	t.Run("lock file blocked", func(t *testing.T) {
		cfg := singleConfig(t)
		if err := os.Mkdir(filepath.Join(cfg.DataDir, "LOCK"), 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := New(cfg)
		if err == nil || strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "cannot open the lock file") {
			t.Fatalf("New with a directory where the lock file goes: %v, want the open failure named", err)
		}
	})
}

// TestDrainStopsPromptly checks that cancelling Run drains and returns
// nil well within the drain timeout when nothing is in flight, and that
// the ports are closed afterwards.
func TestDrainStopsPromptly(t *testing.T) {
	cfg := singleConfig(t)
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	c := dial(t, rt.ClientAddr())
	_ = c
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(cfg.DrainTimeout + 5*time.Second):
		t.Fatal("Run did not return")
	}
	t.Logf("drained in %v", time.Since(began))
	if nc, err := net.Dial("tcp", rt.ClientAddr()); err == nil {
		nc.Close()
		t.Fatal("the client port still accepts connections")
	}
}

// runExiting starts a single node whose Exit reports its status on the
// returned channel instead of leaving the test, and returns it with the
// channel Run's result arrives on.
func runExiting(t *testing.T) (rt *Runtime, codes chan int, done chan error) {
	t.Helper()
	cfg := singleConfig(t)
	codes = make(chan int, 4)
	cfg.Exit = func(code int) { codes <- code }
	cfg.Logger = discardLogger()
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- rt.Run(context.Background()) }()
	return rt, codes, done
}

// TestPanicStopsTheProcess checks that a panic on any runtime goroutine
// exits with status 2 and stops serving.
func TestPanicStopsTheProcess(t *testing.T) {
	rt, codes, done := runExiting(t)
	rt.post(func() { panic("boom") })
	select {
	case code := <-codes:
		if code != 2 {
			t.Fatalf("exit status %d, want 2", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a panic on the node's goroutine did not exit")
	}
	select {
	case err := <-done:
		if !errors.Is(err, errHalted) {
			t.Fatalf("Run: %v, want errHalted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the panic")
	}
}

// TestHaltExitsNonZero checks Env.Halt: status 1, and the node's
// goroutine stops.
func TestHaltExitsNonZero(t *testing.T) {
	rt, codes, done := runExiting(t)
	rt.post(func() { rt.env.Halt("test says so") })
	if code := <-codes; code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	if err := <-done; !errors.Is(err, errHalted) || !strings.Contains(err.Error(), "test says so") {
		t.Fatalf("Run: %v", err)
	}
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
