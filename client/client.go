package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/session"
)

// NodeInfo is one node of the cluster as the client knows it.
type NodeInfo struct {
	ID uint32
	// Addr is the client address the client dials.
	Addr string
	// HTTPAddr is the node's status and metrics address, if it has one.
	HTTPAddr string
}

// Client is a connection to a cairn cluster. Its methods are safe for
// concurrent use.
type Client struct {
	opts Options
	// ctx ends when the client closes; dialers watch it.
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by the loop goroutine.
	core    *core.Client
	nodes   map[uint32]*nodeEntry
	waiters map[core.OpID]chan core.Event
	// unawaited holds the acks handed to the core that nobody waits on,
	// and flushes the Flush calls waiting for some of them to finish.
	unawaited map[core.OpID]struct{}
	flushes   []flushWait
	subs      map[string]*Subscription
	fetches   map[string]*fetchSession
	timer     *time.Timer

	in       chan func()
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when the loop has shut down
	conns    sync.WaitGroup

	// info is the cluster as learned at Dial; it never changes.
	info []NodeInfo
	// learning is the member-list question in flight (see learnNodes),
	// or zero.
	learning core.OpID
}

// nodeEntry is one node as the loop sees it: where to dial it, and its
// connection or the frames waiting for one.
type nodeEntry struct {
	id      uint32
	addr    string
	conn    *nodeConn
	dialing bool
	pending [][]byte
}

// Dial connects to a cluster through the first of addrs (client
// addresses, host:port) that completes the handshake, and learns every
// node from it. It fails only if none does.
func Dial(ctx context.Context, opts Options, addrs ...string) (*Client, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errors.New("client: Dial needs at least one address")
	}
	var errs []error
	for _, addr := range addrs {
		h, err := connect(ctx, &opts, addr, 0)
		if err == nil {
			return start(opts, addr, h), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("client: no node reachable: %w", errors.Join(errs...))
}

// start builds the client around its first connection and starts the
// loop.
func start(opts Options, addr string, first *handshaken) *Client {
	c := &Client{
		opts: opts, nodes: make(map[uint32]*nodeEntry),
		waiters: make(map[core.OpID]chan core.Event), subs: make(map[string]*Subscription),
		fetches:   make(map[string]*fetchSession),
		unawaited: make(map[core.OpID]struct{}),
		in:        make(chan func(), 256), stop: make(chan struct{}), done: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.info = clusterFrom(first.welcome, addr)
	ids := make([]uint32, len(c.info))
	for i, n := range c.info {
		ids[i] = n.ID
		c.nodes[n.ID] = &nodeEntry{id: n.ID, addr: n.Addr}
	}
	c.core = core.New(core.Config{
		Producer: producerID(), Nodes: ids, RequestTimeout: opts.RequestTimeout,
		MaxAttempts: opts.MaxAttempts, RetryFor: opts.RetryFor, RetryBackoff: opts.RetryBackoff, MaxBackoff: opts.MaxBackoff,
		HedgeAfter: opts.HedgeAfter,
	}, mrand.New(mrand.NewPCG(randomUint64(), randomUint64())))
	c.attach(c.nodes[first.welcome.Node], first)
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	go c.loop()
	return c
}

// clusterFrom lists the nodes a welcome names, by ID. Nodes without a
// client address cannot be dialed and are left out; the node that sent
// the welcome is always in, at addr, the address that reached it.
func clusterFrom(w session.Welcome, addr string) []NodeInfo {
	var out []NodeInfo
	for _, n := range w.Nodes {
		if n.ID == 0 || n.ClientAddr == "" || slices.ContainsFunc(out, func(o NodeInfo) bool { return o.ID == n.ID }) {
			continue
		}
		if n.ID == w.Node {
			n.ClientAddr = addr
		}
		out = append(out, NodeInfo{ID: n.ID, Addr: n.ClientAddr, HTTPAddr: n.HTTPAddr})
	}
	if !slices.ContainsFunc(out, func(o NodeInfo) bool { return o.ID == w.Node }) {
		out = append(out, NodeInfo{ID: w.Node, Addr: addr})
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

// Nodes lists the cluster's nodes as the client learned them, by ID.
func (c *Client) Nodes() []NodeInfo { return slices.Clone(c.info) }

// Close closes every connection. It first gives the acks already handed
// over by Ack up to Options.RequestTimeout to be answered (see Flush), so
// a consumer that acks and then closes does not see its last messages
// delivered again. Operations still in flight end with an error wrapping
// ErrClosed (and ErrUnknownOutcome); subscription handlers are not called
// again, but Close does not wait for one that is running.
func (c *Client) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	c.Flush(ctx)
	cancel()
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	c.conns.Wait()
	return nil
}

// producerID draws this client's producer identity, which names its
// messages. It must not collide with another producer's, so it is random
// and never zero.
func producerID() uint64 {
	for {
		if id := randomUint64(); id != 0 {
			return id
		}
	}
}

func randomUint64() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
