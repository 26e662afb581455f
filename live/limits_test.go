package live

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// openSilent opens n connections to addr that never send a byte, closed
// when the test ends.
func openSilent(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		conns = append(conns, nc)
	}
	t.Cleanup(func() {
		for _, nc := range conns {
			nc.Close()
		}
	})
	return conns
}

// closedByNode counts the connections the node has closed within wait:
// a read returns (EOF or a reset) instead of timing out. The reads run
// at once, so one connection kept open does not use up the others' wait.
func closedByNode(conns []net.Conn, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	var closed atomic.Int64
	var wg sync.WaitGroup
	for _, nc := range conns {
		wg.Go(func() {
			nc.SetReadDeadline(deadline)
			if _, err := io.Copy(io.Discard, nc); !errors.Is(err, os.ErrDeadlineExceeded) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(closed.Load())
}

// memoryInUse is the heap and stack memory in use after a collection.
func memoryInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestPreAuthConnectionsCostLittleMemory holds 400 unauthenticated
// connections on the peer port (the per-source bound raised so that all
// are admitted) and checks what they cost the node. A full read buffer
// per stranger, as before, costs 64 KiB each: 25 MiB here.
func TestPreAuthConnectionsCostLittleMemory(t *testing.T) {
	const n = 400
	cfg := singleConfig(t)
	cfg.Logger = discardLogger()
	cfg.HandshakeTimeout = time.Minute
	cfg.Limits = Limits{MaxPreAuthConns: n, MaxPreAuthPerSource: n}
	tn := start(t, cfg)
	before := memoryInUse()
	openSilent(t, tn.PeerAddr(), n)
	waitFor(t, 20*time.Second, "every connection to be handshaking", func() bool { return tn.peerGate.count() == n })
	grown := int64(memoryInUse()) - int64(before)
	t.Logf("%d unauthenticated connections: %d KiB more memory in use (%d bytes each)", n, grown>>10, grown/n)
	if limit := int64(12 << 20); grown > limit {
		t.Fatalf("%d unauthenticated connections grew memory by %d MiB, want under %d MiB", n, grown>>20, limit>>20)
	}
}

// TestPreAuthConnectionsAreBoundedPerSource floods both ports from one
// address: the node keeps only MaxPreAuthPerSource of them per port and
// closes the rest at once, long before the handshake timeout.
func TestPreAuthConnectionsAreBoundedPerSource(t *testing.T) {
	const n, perSource = 100, 8
	cfg := singleConfig(t)
	cfg.HandshakeTimeout = time.Minute
	cfg.Limits = Limits{MaxPreAuthPerSource: perSource}
	tn := start(t, cfg)
	for _, side := range []struct{ name, addr string }{{sidePeer, tn.PeerAddr()}, {sideClient, tn.ClientAddr()}} {
		conns := openSilent(t, side.addr, n)
		waitFor(t, 20*time.Second, "the refusals to be counted", func() bool {
			return counterValue(tn.m.limited.WithLabelValues(side.name, "preauth-source")) >= n-perSource
		})
		if closed := closedByNode(conns, 2*time.Second); closed < n-perSource {
			t.Fatalf("%s port: the node closed %d of %d unauthenticated connections, want all but %d", side.name, closed, n, perSource)
		}
	}
}

// TestStrangersDoNotCountAsClients checks that unauthenticated
// connections cannot fill MaxClients: with more strangers connected than
// the cap, a real client still gets in.
func TestStrangersDoNotCountAsClients(t *testing.T) {
	cfg := singleConfig(t)
	cfg.MaxClients = 4
	cfg.HandshakeTimeout = time.Minute
	tn := start(t, cfg)
	openSilent(t, tn.ClientAddr(), 8)
	waitFor(t, 10*time.Second, "the strangers to be handshaking", func() bool { return tn.clientGate.count() == 8 })
	dial(t, tn.ClientAddr())
}

// TestRefusalLogIsRateLimited refuses hundreds of connections and checks
// that the log holds a bounded number of lines about them, while the
// metric counts every one.
func TestRefusalLogIsRateLimited(t *testing.T) {
	const n = 300
	cfg := singleConfig(t)
	cfg.HandshakeTimeout = time.Minute
	cfg.Limits = Limits{MaxPreAuthPerSource: 1}
	tn := start(t, cfg)
	began := time.Now()
	openSilent(t, tn.PeerAddr(), n)
	waitFor(t, 10*time.Second, "every refusal to be counted", func() bool {
		return counterValue(tn.m.refused.WithLabelValues(sidePeer)) >= n-1
	})
	lines := strings.Count(tn.logs.String(), "refusing connection")
	bound := refusalLogBurst + int(time.Since(began)/refusalLogEvery) + 1
	t.Logf("%d refusals, %d log lines (bound %d)", n-1, lines, bound)
	if lines > bound {
		t.Fatalf("%d lines logged for %d refusals, want at most %d", lines, n-1, bound)
	}
}

// TestStalledFrameIsClosed sends the header of a large frame and part of
// its body, then stalls: the node must close the connection once the
// frame read timeout passes, and keep serving.
func TestStalledFrameIsClosed(t *testing.T) {
	cfg := singleConfig(t)
	cfg.Limits = Limits{FrameReadTimeout: 300 * time.Millisecond}
	tn := start(t, cfg)
	nc, _ := openClientSession(t, tn.ClientAddr(), testSecret)
	nc.Write(header(wire.KindPublish, 512<<10))
	nc.Write(make([]byte, 100))
	if closedByNode([]net.Conn{nc}, 10*time.Second) != 1 {
		t.Fatal("a connection stalled in mid-frame was kept open")
	}
	waitFor(t, 2*time.Second, "the reason in the log", func() bool { return tn.logsMention("stalled-frame") })
	dial(t, tn.ClientAddr())
}

// TestIdleClientIsClosed checks the client idle timeout: a session that
// sends nothing is closed, and the Go client, idle as long, simply
// redials for its next request.
func TestIdleClientIsClosed(t *testing.T) {
	cfg := singleConfig(t)
	cfg.Limits = Limits{ClientIdleTimeout: 300 * time.Millisecond}
	tn := start(t, cfg)
	c := dial(t, tn.ClientAddr())
	nc, _ := openClientSession(t, tn.ClientAddr(), testSecret)
	if closedByNode([]net.Conn{nc}, 10*time.Second) != 1 {
		t.Fatal("an idle client connection was kept open")
	}
	waitFor(t, 2*time.Second, "the reason in the log", func() bool { return tn.logsMention("idle-timeout") })
	if err := c.CreateQueue(ctxFor(t, 20*time.Second), "after-idle", client.PolicyMajority); err != nil {
		t.Fatalf("a client idle past the timeout: %v", err)
	}
}

// TestHandshakeReadsAreSmall checks that a stranger's oversized hello is
// refused by the node without reading it.
func TestHandshakeReadsAreSmall(t *testing.T) {
	cfg := singleConfig(t)
	cfg.HandshakeTimeout = time.Minute
	tn := start(t, cfg)
	nc := openSilent(t, tn.PeerAddr(), 1)[0]
	nc.Write(header(0xFE01, session.MaxInitiatorBody+1))
	if closedByNode([]net.Conn{nc}, 10*time.Second) != 1 {
		t.Fatal("an oversized hello was not refused")
	}
}
