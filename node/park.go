package node

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// Requests parked during a failover. A publish or subscribe used to be
// refused while its queue changed hands: a node whose metadata says the
// owner is down redirected the client to the dead owner, and the
// recovery candidate answered "recovering"; either way the client backed
// off, often for longer than the rest of the failover took. Now such a
// request waits on the node it reached, and goes through the node again
// the moment the metadata moves on (a plan names the candidate, which the
// client is then sent to) or the candidate admits clients. It is refused
// as unavailable (a clean refusal: nothing was done) if it waits longer
// than parkTimeout, or if too many requests wait already.
const (
	parkTimeout = 500 * time.Millisecond
	maxParked   = 4096
	// resetParkWindow is how long after an owner's connection reset,
	// with nothing heard from it since, its queues' requests wait here
	// rather than being sent to it: long enough for the failure detector
	// to confirm a dead owner, short enough that an owner only cut off
	// from this node is redirected to soon after.
	resetParkWindow = 200 * time.Millisecond
)

// parkedRequest is a client request waiting for its queue's failover.
type parkedRequest struct {
	conn  ConnID
	queue string
	req   wire.Message
	at    time.Duration // on the node's monotonic clock
}

// parkDuringFailover parks req if its queue is changing hands as this
// node sees it, and reports whether it did.
func (n *Node) parkDuringFailover(conn ConnID, queue string, req wire.Message) bool {
	n.wakeResting(queue)
	return n.waitsHere(queue, req) && n.park(conn, queue, req)
}

// park holds req until checkParked sends it through the node again, and
// reports whether it did: not when too many requests wait already.
func (n *Node) park(conn ConnID, queue string, req wire.Message) bool {
	if len(n.parked) >= maxParked {
		return false
	}
	n.parked = append(n.parked, parkedRequest{conn: conn, queue: queue, req: req, at: n.env.Monotonic()})
	return true
}

// waitsHere reports whether req must wait on this node for its queue's
// failover: a publish waits for less than other requests, as an owner
// still outwaiting an older one admits it (beginOutwait).
func (n *Node) waitsHere(queue string, req wire.Message) bool {
	if _, publish := req.(*wire.Publish); publish || bugs.Active(bugs.OutwaitServesClients) {
		if r := n.queues[queue]; r != nil && r.serving() && r.own.outwaiting() && r.own.handoff == nil {
			return false
		}
	}
	return n.failingOver(queue)
}

// failingOver reports whether a request for queue should wait here: the
// metadata names this node the next owner of the recovering queue and
// its replica runs the recovery, or names this node the owner while it is
// still activating or hands the queue off, or it still names an owner it
// has confirmed down, before a plan names the next.
func (n *Node) failingOver(queue string) bool {
	q, r := n.meta.state.queues[queue], n.queues[queue]
	if q == nil {
		return false
	}
	switch {
	case q.State == QueueActive && q.Owner == n.cfg.ID:
		return r.handingOff() || r.activating() || r.waking()
	case q.State == QueueActive && q.Owner != n.cfg.ID:
		return n.meta.state.down[q.Owner] || n.justReset(q.Owner) || r.ownerSilent(q)
	case q.State == QueueRecovering && q.Owner == n.cfg.ID:
		return r != nil && r.inc == q.Incarnation && r.hasOwnerSide() && r.own != nil && !n.servesEarly(q)
	}
	return false
}

// activating reports whether this replica is an owner the metadata has
// activated that does not serve in full yet: a recovered one outwaiting
// an older owner's quorum (beginOutwait), or one waiting for its own
// quorum to accept an append it sent since it learned of its activation
// (waitForActivation). Either admits its clients in a few round trips or
// a silence limit, well within a parked request's patience; refused, they
// would back off for longer than that, or give up.
func (r *replica) activating() bool {
	if r == nil || r.own == nil {
		return false
	}
	if r.serving() {
		return r.own.outwaiting()
	}
	return r.own.activationWaits
}

// servesEarly reports whether this node already serves q as the owner of
// the epoch the metadata is still recovering into, which only the planted
// bug admit-before-install-quorum makes happen: its clients are then
// admitted, not parked or refused.
func (n *Node) servesEarly(q *QueueMeta) bool {
	if !bugs.Active(bugs.AdmitBeforeInstallQuorum) || q.State != QueueRecovering || q.Owner != n.cfg.ID {
		return false
	}
	r := n.queues[q.Name]
	return r != nil && r.inc == q.Incarnation && r.serving() && r.epoch == q.Epoch
}

// checkParked sends the parked requests of queue (every queue if queue
// is empty) whose failover has moved on through the node again, in
// arrival order, and refuses those that waited too long.
func (n *Node) checkParked(queue string) {
	if len(n.parked) == 0 {
		return
	}
	now := n.env.Monotonic()
	// The requests kept are filtered in place: each is copied out before
	// its slot can be written, and requests parked again while the loops
	// below run are appended after the kept ones. (A fresh slice at every
	// tick of every node was 3% of what a simulated run allocates.)
	var again, late []parkedRequest
	kept := n.parked[:0]
	for _, p := range n.parked {
		switch {
		case (queue == "" || p.queue == queue) && !n.waitsHere(p.queue, p.req):
			again = append(again, p)
		case now-p.at >= parkTimeout:
			late = append(late, p)
		default:
			kept = append(kept, p)
		}
	}
	clear(n.parked[len(kept):]) // let the requests that left go
	n.parked = kept
	for _, p := range late {
		for _, id := range wire.RequestIDs(p.req) {
			n.reply(p.conn, id, wire.StatusUnavailable, "queue "+p.queue+" is still failing over")
		}
	}
	for _, p := range again {
		n.OnClient(p.conn, p.req)
	}
}

// notePeerReset remembers when peer's connection reset.
func (n *Node) notePeerReset(peer NodeID) {
	if n.resetAt == nil {
		n.resetAt = make(map[NodeID]time.Duration)
	}
	n.resetAt[peer] = n.env.Monotonic()
}

// notePeerHeard forgets a reset once the peer is heard from again, and
// lets the requests that waited for it go.
func (n *Node) notePeerHeard(peer NodeID) {
	if _, reset := n.resetAt[peer]; reset {
		delete(n.resetAt, peer)
		n.checkParked("")
	}
}

// ownerSilent reports whether this replica follows q's owner in its
// current epoch and has accepted nothing from it for resetParkWindow,
// though an owner sends every follower an append at least every quarter
// of that window (heartbeatDue) unless it said it rests (rest.go): the
// owner is stopped or cut off, and a request that reached this node (most
// likely a client's hedge past the silent owner) is better held here
// until a plan names the next owner than sent back to the silent one.
// The wait is shorter when the owner steps back sooner (eager detection:
// one interval): from then on the owner sends its clients away naming
// no one, and a follower that still named the owner would bounce them
// between the two until their backoff grew past the failover.
func (r *replica) ownerSilent(q *QueueMeta) bool {
	if r == nil || r.inc != q.Incarnation || r.role != roleFollower || r.epoch != q.Epoch ||
		r.follow.epochOwner != q.Owner || r.follow.leaseGrantedAt == 0 || r.ownerRests() {
		return false
	}
	return r.n.leaseClock()-r.follow.leaseGrantedAt > uint64(min(resetParkWindow, r.n.ownerSilenceLimit()))
}

// justReset reports whether peer's connection reset within the last
// resetParkWindow, with nothing heard from it since.
func (n *Node) justReset(peer NodeID) bool {
	at, reset := n.resetAt[peer]
	return reset && n.env.Monotonic()-at < resetParkWindow
}

// dropParked forgets the requests of a connection that closed.
func (n *Node) dropParked(conn ConnID) {
	n.parked = slices.DeleteFunc(n.parked, func(p parkedRequest) bool { return p.conn == conn })
}
