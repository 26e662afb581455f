package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// handshaken is a connection that completed the handshake.
type handshaken struct {
	nc      net.Conn
	br      *bufio.Reader
	welcome session.Welcome
}

// connect dials addr and runs TLS (if configured) and the session
// handshake, all within DialTimeout. expect, when non-zero, is the node
// that must answer.
func connect(ctx context.Context, opts *Options, addr string, expect uint32) (*handshaken, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	h, err := secure(ctx, opts, nc, addr, expect)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return h, nil
}

func secure(ctx context.Context, opts *Options, nc net.Conn, addr string, expect uint32) (*handshaken, error) {
	conn := nc
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		conn = tc
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	in := session.Initiator{Role: opts.role(), Expect: expect, Secret: opts.Secret}
	w, err := in.Handshake(br, conn)
	if err != nil {
		return nil, err
	}
	return &handshaken{nc: conn, br: br, welcome: w}, nil
}

// nodeConn is an open connection to one node: a reader that feeds the
// loop, and a writer that drains a bounded queue.
type nodeConn struct {
	node    uint32
	nc      net.Conn
	br      *bufio.Reader
	out     chan []byte
	closing chan struct{}
	once    sync.Once
}

// attach starts serving h as e's connection.
func (c *Client) attach(e *nodeEntry, h *handshaken) {
	conn := &nodeConn{node: e.id, nc: h.nc, br: h.br, out: make(chan []byte, c.opts.SendQueue), closing: make(chan struct{})}
	e.conn = conn
	// What the core sent while the node was being dialed goes out first,
	// written by the writer rather than queued: a burst larger than the
	// send queue is no sign that the node is not reading, and dropping
	// the fresh connection for it would only make the core send the same
	// burst again.
	backlog := e.pending
	e.pending = nil
	c.conns.Add(2)
	go func() {
		defer c.conns.Done()
		conn.writeLoop(backlog)
	}()
	go func() {
		defer c.conns.Done()
		c.readLoop(conn)
	}()
}

func (conn *nodeConn) close() {
	conn.once.Do(func() {
		close(conn.closing)
		conn.nc.Close()
	})
}

// readLoop hands every message to the loop. When the connection ends,
// for whatever reason, it tells the loop, which tells the core: requests
// outstanding there become ambiguous at once.
//
// Frames that arrived together go to the loop in one hand-over: a
// subscriber draining a backlog receives a delivery and an ack's answer
// per message, and waking the loop once per frame cost more than the
// frames' own handling. The reader never waits for a frame to arrive
// while it holds others, so batching adds no delay.
func (c *Client) readLoop(conn *nodeConn) {
	var batch []wire.Message
	// Each frame is decoded, into memory of its own, before the next is
	// read, so all are read into one buffer, which grows to the largest
	// frame seen up to readScratchMax.
	var scratch []byte
	for {
		frame, err := session.ReadFrameInto(conn.br, wire.MaxBodySize, scratch)
		if err == nil {
			var m wire.Message
			if m, err = wire.Decode(frame); err == nil {
				scratch = session.NextScratch(scratch, frame, readScratchMax)
				batch = append(batch, m)
				if len(batch) < readBatchMax && session.FrameBuffered(conn.br) {
					continue
				}
				c.handOver(conn, batch)
				batch = nil
				continue
			}
		}
		c.handOver(conn, batch)
		conn.close()
		c.post(func() { c.onConnLost(conn, err) })
		return
	}
}

// readBatchMax bounds the frames a reader hands the loop at once.
const readBatchMax = 128

// readScratchMax bounds the buffer the reader reads frames into; larger
// frames get memory of their own.
const readScratchMax = 64 << 10

// handOver gives the loop the messages read from conn, in order.
func (c *Client) handOver(conn *nodeConn, msgs []wire.Message) {
	if len(msgs) == 0 {
		return
	}
	c.post(func() {
		now := time.Now()
		for _, m := range msgs {
			c.core.OnMessage(now, conn.node, m)
		}
	})
}

// writeTimeout bounds one batch of writes to a node: a node that stops
// reading for that long loses the connection, and the core retries what
// was outstanding on it elsewhere.
const writeTimeout = 10 * time.Second

// writeLoop sends backlog and then the frames queued for the node until
// the connection closes; a failed write closes it, and the reader
// notices and reports it.
func (conn *nodeConn) writeLoop(backlog [][]byte) {
	if err := writeBacklog(conn.nc, backlog); err != nil {
		conn.close()
		return
	}
	if err := session.WriteFrames(conn.nc, conn.out, conn.closing, writeTimeout, nil); err != nil {
		conn.close()
	}
}

// writeBacklog writes frames in as few system calls as a buffer allows,
// within writeTimeout.
func writeBacklog(nc net.Conn, frames [][]byte) error {
	if len(frames) == 0 {
		return nil
	}
	nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	bw := bufio.NewWriterSize(nc, 64<<10)
	for _, frame := range frames {
		if _, err := bw.Write(frame); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// enqueue queues a frame on e's connection. A full queue means the node
// is not reading; the connection is dropped, which makes everything
// outstanding on it ambiguous and lets the core retry elsewhere.
func (c *Client) enqueue(e *nodeEntry, frame []byte) {
	select {
	case e.conn.out <- frame:
	default:
		c.opts.Logger.Warn("send queue full; dropping connection", slog.Uint64("node", uint64(e.id)))
		conn := e.conn
		conn.close()
		c.onConnLost(conn, nil)
	}
}

// dial connects to e in the background and hands the connection to the
// loop. If the loop is gone, or does not take it, the connection is
// closed here, so none outlives the client.
func (c *Client) dial(e *nodeEntry) {
	e.dialing = true
	id, addr := e.id, e.addr
	c.conns.Add(1)
	go func() {
		defer c.conns.Done()
		h, err := connect(c.ctx, &c.opts, addr, id)
		taken := make(chan bool, 1)
		posted := c.post(func() { taken <- c.onDialed(e, h, err) })
		if h == nil {
			return
		}
		if !posted {
			h.nc.Close()
			return
		}
		select {
		case ok := <-taken:
			if !ok {
				h.nc.Close()
			}
		case <-c.done:
			h.nc.Close() // harmless if the loop took it: it was closing it anyway
		}
	}()
}
