package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sourcegraph/conc"

	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// writeTimeout bounds one batch of writes. A peer or client that stops
// reading for this long is cut off rather than allowed to pin memory.
const writeTimeout = 10 * time.Second

// frameConn is one authenticated connection carrying wire frames: a
// reader that hands each decoded message on, and a writer that drains a
// bounded queue of encoded frames. Either side failing closes both.
type frameConn struct {
	nc     net.Conn
	br     *bufio.Reader
	side   string
	remote string
	// limit is the largest frame body accepted on this connection.
	limit int
	// idleTimeout closes the connection when no frame begins for this
	// long; frameTimeout when a frame, once begun, does not finish in
	// this long. Zero means no bound.
	idleTimeout  time.Duration
	frameTimeout time.Duration
	// out holds the frames waiting for the writer; first, on a peer
	// connection, the control frames, which go out ahead (isControl).
	out, first chan []byte
	// closing is closed, once, when the connection starts to close.
	closing chan struct{}
	once    sync.Once
	log     *slog.Logger

	in       prometheus.Counter
	sent     prometheus.Counter
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	overflow prometheus.Counter
	closed   *prometheus.CounterVec
}

func newFrameConn(nc net.Conn, br *bufio.Reader, side string, limit, queue int, log *slog.Logger, m *metrics) *frameConn {
	remote := nc.RemoteAddr().String()
	var first chan []byte
	if side == sidePeer {
		first = make(chan []byte, queue)
	}
	return &frameConn{
		first: first,
		nc:    nc, br: br, side: side, remote: remote, limit: limit,
		out: make(chan []byte, queue), closing: make(chan struct{}),
		log:      log.With(slog.String("side", side), slog.String("remote", remote)),
		in:       m.framesIn.WithLabelValues(side),
		sent:     m.framesOut.WithLabelValues(side),
		bytesIn:  m.bytesIn.WithLabelValues(side),
		bytesOut: m.bytesOut.WithLabelValues(side),
		overflow: m.dropped.WithLabelValues(side, "overflow"),
		closed:   m.closed,
	}
}

// setTimeouts sets the read bounds; it must be called before serve.
func (c *frameConn) setTimeouts(idle, frame time.Duration) {
	c.idleTimeout, c.frameTimeout = idle, frame
}

// enqueue queues an encoded frame for the writer. It never blocks: a
// full queue drops the frame and counts it, since the node tolerates loss
// but not a stalled handler. Peers resend what matters. A client does
// not get a dropped delivery again until its lease runs out (30 s by
// default), so a client connection that falls that far behind is closed
// instead: its leases go back to the queue at once, and the client
// reconnects and subscribes again, as it does after any broken
// connection.
func (c *frameConn) enqueue(frame []byte) {
	select {
	case c.out <- frame:
	default:
		c.overflow.Inc()
		if c.side == sideClient {
			c.close("send-queue-full", slog.LevelWarn, nil)
		}
	}
}

// enqueueFirst queues a control frame ahead of the others. It never
// blocks either; the queue is as long as the other and holds only the
// few control frames a node sends, so it fills only on a connection that
// no longer drains.
func (c *frameConn) enqueueFirst(frame []byte) {
	select {
	case c.first <- frame:
	default:
		c.overflow.Inc()
	}
}

// queued reports how many frames wait to be written.
func (c *frameConn) queued() int { return len(c.out) + len(c.first) }

// close shuts the connection once, logging why at the given level.
func (c *frameConn) close(reason string, level slog.Level, err error) {
	c.once.Do(func() {
		attrs := []any{slog.String("reason", reason)}
		if err != nil {
			attrs = append(attrs, slog.String("err", err.Error()))
		}
		c.log.Log(context.Background(), level, "closing connection", attrs...)
		c.closed.WithLabelValues(c.side, reason).Inc()
		close(c.closing)
		c.nc.Close()
	})
}

// serve runs the connection until it closes. accept is called for every
// message in order, on the reader's goroutine; an error from it closes the
// connection as a protocol violation.
func (c *frameConn) serve(accept func(wire.Message) error) {
	var wg conc.WaitGroup
	defer wg.Wait()
	wg.Go(c.writeLoop)
	c.readLoop(accept)
}

func (c *frameConn) readLoop(accept func(wire.Message) error) {
	// Frames are read into one buffer, each decoded (into memory of its
	// own) before the next is read; the buffer grows to the largest frame
	// seen, up to readScratchMax.
	var scratch []byte
	for {
		frame, err := c.readFrame(scratch)
		if err != nil {
			reason, level := classifyReadError(err)
			c.close(reason, level, err)
			return
		}
		m, err := wire.Decode(frame)
		if err != nil {
			c.close("malformed", slog.LevelWarn, err)
			return
		}
		scratch = session.NextScratch(scratch, frame, readScratchMax)
		c.in.Inc()
		c.bytesIn.Add(float64(len(frame)))
		if err := accept(m); err != nil {
			c.close("protocol-violation", slog.LevelWarn, err)
			return
		}
	}
}

// readScratchMax bounds the buffer a connection reads frames into: it
// grows to the largest frame the connection has carried up to this, so a
// connection that carries publishes and acks allocates nothing per frame,
// while the thousands of connections a node may hold, mostly quiet or
// small, keep small buffers beside their 64 KiB read and write buffers.
// Larger frames (pages of records, big payloads) get memory of their own.
const readScratchMax = 64 << 10

// Errors for connections closed by a read bound.
var (
	errIdle    = errors.New("no frame began within the idle timeout")
	errStalled = errors.New("a frame began but did not finish within the frame read timeout")
)

// readFrame reads the next frame within the connection's bounds: the
// frame must begin within idleTimeout and, once begun, arrive whole
// within frameTimeout. A sender that stalls in mid-frame so holds the
// frame's memory for a bounded time only.
func (c *frameConn) readFrame(scratch []byte) ([]byte, error) {
	c.nc.SetReadDeadline(deadline(c.idleTimeout))
	if _, err := c.br.Peek(1); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errIdle
		}
		return nil, err
	}
	c.nc.SetReadDeadline(deadline(c.frameTimeout))
	frame, err := session.ReadFrameInto(c.br, c.limit, scratch)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("%w: %v", errStalled, err)
	}
	return frame, err
}

// deadline is the read deadline for a bound of d from now; zero for none.
func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// classifyReadError names why a read failed, and how loudly to say so:
// bad input is a warning, an ordinary close is not.
func classifyReadError(err error) (string, slog.Level) {
	switch {
	case errors.Is(err, errIdle):
		return "idle-timeout", slog.LevelInfo
	case errors.Is(err, errStalled):
		return "stalled-frame", slog.LevelWarn
	case errors.Is(err, io.EOF):
		return "closed-by-remote", slog.LevelDebug
	case errors.Is(err, net.ErrClosed):
		return "closed-locally", slog.LevelDebug
	case errors.Is(err, session.ErrTruncated):
		return "truncated-frame", slog.LevelWarn
	case errors.Is(err, session.ErrFrameTooLarge), errors.Is(err, wire.ErrTooLarge):
		return "oversized-frame", slog.LevelWarn
	case errors.Is(err, wire.ErrBadVersion):
		return "malformed", slog.LevelWarn
	}
	return "read-error", slog.LevelInfo
}

// writeLoop sends the frames queued on the connection until it closes;
// a failed write closes it.
func (c *frameConn) writeLoop() {
	w := countingWriter{Conn: c.nc, written: c.bytesOut}
	if err := session.WriteFramesFirst(w, c.first, c.out, c.closing, writeTimeout, c.sent.Inc); err != nil {
		c.close("write-failed", slog.LevelInfo, err)
	}
}

// countingWriter counts the bytes written to its connection: what the
// writer's buffer flushes, so a batch of frames is counted as it leaves.
type countingWriter struct {
	net.Conn
	written prometheus.Counter
}

// Write writes p and counts what the connection took.
func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.Conn.Write(p)
	w.written.Add(float64(n))
	return n, err
}
