// Package node holds cairn's node logic as event-driven state machines. A
// node never touches the operating system: it reads the clock, sets timers,
// sends messages, writes files, asks for durability and draws randomness
// only through the Env it is given. The simulator and the production
// runtime (live) are two implementations of that one interface.
package node

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// NodeID names a node in the cluster. Zero is never a valid node.
type NodeID uint32

// String renders the ID the way traces and logs show it.
func (id NodeID) String() string { return "n" + strconv.FormatUint(uint64(id), 10) }

// ConnID names one client connection to this node. It is unique within one
// incarnation of the node's process.
type ConnID uint64

// SyncToken identifies one durability request. The environment hands it
// back unchanged in OnSynced.
type SyncToken uint64

// TimerKind says what a timer is for; the node defines its own kinds.
type TimerKind uint16

// Timer is a value the environment hands back in OnTimer when it fires.
// Timers cannot be cancelled: a node ignores a timer it no longer wants,
// typically by comparing Seq with the current generation of that timer.
type Timer struct {
	Kind TimerKind
	Seq  uint64
}

// Env is everything a node may use from the outside world. Every method
// returns at once: none blocks, sleeps or fails loudly. Effects that take
// time (timers, durability, delivery) complete later as inbound calls on
// the node's Handler.
type Env interface {
	// Now is the node's clock. In the simulator it is virtual and may be
	// skewed or jump; a node must tolerate both.
	Now() time.Time
	// Monotonic is the time elapsed on the node's monotonic clock since
	// a fixed point of this process's life. It never jumps, and it keeps
	// counting while the process is stopped, as a paused or descheduled
	// process finds when it resumes; leases depend on both.
	Monotonic() time.Duration
	// After schedules OnTimer(t) once d has elapsed on the node's
	// monotonic timer base (unaffected by clock jumps).
	After(d time.Duration, t Timer)
	// Send queues m for peer to. Delivery is not guaranteed; the message
	// may be dropped, delayed, duplicated or reordered.
	Send(to NodeID, m wire.Message)
	// Reply queues m for client connection conn.
	Reply(conn ConnID, m wire.Message)
	// FS is this node's disk.
	FS() vfs.FS
	// Sync asks for f's written data (or, for a directory, its entries)
	// to be made durable. The outcome arrives later as OnSynced(tok, err).
	Sync(f vfs.File, tok SyncToken)
	// Rand is the node's seeded source of randomness: the only one it may
	// use.
	Rand() *rand.Rand
	// Boundary marks a named transition boundary,
	// <component>.<before|after>.<action>. In production it does nothing;
	// the simulator may crash the process right here.
	Boundary(name string)
	// Emit records an event, built by one of package event's
	// constructors.
	Emit(e event.Event)
	// Halt stops this process at once, as if it exited: it loses its
	// memory and keeps only what its disk made durable. A node halts when
	// continuing would be unsafe, for example after a failed sync of
	// storage it cannot fence on its own.
	Halt(reason string)
}

// Handler is the set of inbound calls a node answers. The environment calls
// them one at a time, never concurrently, and a handler never blocks.
type Handler interface {
	// Start is called once per process incarnation, before anything else.
	Start()
	// OnMessage delivers a message from a peer.
	OnMessage(from NodeID, m wire.Message)
	// OnTimer delivers a timer set with Env.After.
	OnTimer(t Timer)
	// OnSynced reports the outcome of Env.Sync.
	OnSynced(tok SyncToken, err error)
	// OnDisconnect reports that the connection to peer was reset: the
	// peer's process died or the connection broke. Silence (a partition)
	// is not reported.
	OnDisconnect(peer NodeID)
	// OnPeerRefused reports that a connection to peer was refused: its
	// host answered, and no process listens on its port. A process that
	// is alive, however slow or stopped, keeps its port open; a partition
	// refuses nothing, it drops.
	OnPeerRefused(peer NodeID)
	// OnClient delivers a request from a client connection.
	OnClient(conn ConnID, req wire.Message)
	// OnClientGone reports that a client connection closed.
	OnClientGone(conn ConnID)
}
