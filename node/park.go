package node

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// Requests parked on a recovery candidate. A publish or subscribe that
// reaches the node the metadata names as a recovering queue's next owner
// used to be refused as unavailable, and the client backed off, often
// for longer than the rest of the recovery took. The candidate holds it
// instead and handles it the moment it admits clients, or says
// unavailable if the recovery takes longer than parkTimeout, stops here,
// or too many requests wait already.
const (
	parkTimeout = 500 * time.Millisecond
	maxParked   = 4096
)

// parkedRequest is a client request waiting for its queue's recovery.
type parkedRequest struct {
	conn ConnID
	req  wire.Message
	at   time.Time
}

// parkForRecovery parks req if this node is recovering queue as its
// planned owner, and reports whether it did.
func (n *Node) parkForRecovery(conn ConnID, queue string, req wire.Message) bool {
	r := n.queues[queue]
	if !n.recoveringHere(queue) || len(r.own.parked) >= maxParked {
		return false
	}
	r.own.parked = append(r.own.parked, parkedRequest{conn: conn, req: req, at: n.env.Now()})
	return true
}

// recoveringHere reports whether the metadata names this node the next
// owner of a recovering queue, and its replica has an owner side to run
// the recovery.
func (n *Node) recoveringHere(queue string) bool {
	q, r := n.meta.state.queues[queue], n.queues[queue]
	return q != nil && q.State == QueueRecovering && q.Owner == n.cfg.ID &&
		r != nil && r.inc == q.Incarnation && r.hasOwnerSide() && r.own != nil
}

// unpark hands every parked request to the node again, in arrival order:
// once the owner serves they are served; if the queue went elsewhere they
// are redirected.
func (o *ownerState) unpark() {
	parked := o.parked
	o.parked = nil
	for _, p := range parked {
		o.r.n.OnClient(p.conn, p.req)
	}
}

// refuseParked answers every parked request unavailable: the node did
// not act on it, so the client may try again.
func (o *ownerState) refuseParked(why string) {
	parked := o.parked
	o.parked = nil
	for _, p := range parked {
		for _, id := range wire.RequestIDs(p.req) {
			o.r.n.reply(p.conn, id, wire.StatusUnavailable, why)
		}
	}
}

// checkParked runs on the owner tick: requests parked too long are
// refused, and all of them go back through the node once the queue is no
// longer recovering here.
func (o *ownerState) checkParked(now time.Time) {
	if len(o.parked) == 0 {
		return
	}
	if !o.r.n.recoveringHere(o.r.name) {
		o.unpark()
		return
	}
	expired := 0
	for expired < len(o.parked) && now.Sub(o.parked[expired].at) >= parkTimeout {
		expired++
	}
	if expired == 0 {
		return
	}
	late := o.parked[:expired]
	o.parked = slices.Clone(o.parked[expired:])
	for _, p := range late {
		for _, id := range wire.RequestIDs(p.req) {
			o.r.n.reply(p.conn, id, wire.StatusUnavailable, "queue "+o.r.name+" is still recovering")
		}
	}
}

// dropParked forgets the requests of a connection that closed.
func (o *ownerState) dropParked(conn ConnID) {
	o.parked = slices.DeleteFunc(o.parked, func(p parkedRequest) bool { return p.conn == conn })
}
