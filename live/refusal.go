package live

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Telling the node that a peer is gone. When a peer's connection breaks,
// the node verifies the peer (node/detect.go): it pings it for a few
// ticks and confirms it down if nothing answers, 30-40 ms in every
// failover after a SIGKILL. The operating system knows sooner: once the
// peer's process is gone, a connection to its port is refused at once.
// So after a break the runtime tries bare connections to the peer's port
// for a little while, and reports the first refusal to the node. A dying
// process closes its listening socket only once the kernel has taken its
// memory back (tens of milliseconds for a few hundred megabytes), and a
// connection made before then proves nothing, so the probe keeps trying
// on schedule until it is refused, the link is up again, or the
// schedule ends. A live peer costs a few connections that close at once.

// refusalProbeWaits are the waits before each probe after a break, about
// 60 ms in all, about as long as the verification it can cut short.
var refusalProbeWaits = []time.Duration{0, 2 * time.Millisecond, 4 * time.Millisecond,
	8 * time.Millisecond, 16 * time.Millisecond, 30 * time.Millisecond}

// refusalProbeTimeout bounds one probe's connect: a refusal is a
// round trip, and a peer cut off by the network refuses nothing.
const refusalProbeTimeout = 50 * time.Millisecond

// startRefusalProbe probes l's peer after its connection broke, unless
// this node does not know where the peer listens.
func (r *Runtime) startRefusalProbe(l *peerLink) {
	if l.addr == "" || r.ctx.Err() != nil {
		return
	}
	r.spawn(&r.dialers, "refusal probe for "+l.id.String(), func() { r.probeRefusal(l) })
}

// probeRefusal runs the probe schedule and tells the node of the first
// refusal.
func (r *Runtime) probeRefusal(l *peerLink) {
	for _, wait := range refusalProbeWaits {
		if !sleep(l.ctx, wait) || l.cur.Load() != nil {
			return // stopping, or connected again: the peer is there
		}
		if r.probeRefused(l) {
			r.post(func() { r.handler.OnPeerRefused(l.id) })
			return
		}
	}
}

// probeRefused tries one bare connection to l's peer and reports whether
// it was refused.
func (r *Runtime) probeRefused(l *peerLink) bool {
	if !r.budget.take() {
		return false // no descriptor to spare: the verification decides
	}
	defer r.budget.give()
	ctx, cancel := context.WithTimeout(l.ctx, refusalProbeTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", l.addr)
	if err == nil {
		nc.Close()
		return false
	}
	return refused(err)
}

// refused reports whether a dial failed because nothing listens.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
