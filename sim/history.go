package sim

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Stamp is a point in a run's total order: the virtual time and the
// sequence number of the event. The simulator stamps every message a
// node sends, which gives checkers the ground truth of "before".
type Stamp struct {
	At  time.Duration
	Seq uint64
}

// Before reports whether s happened before o.
func (s Stamp) Before(o Stamp) bool {
	if s.At != o.At {
		return s.At < o.At
	}
	return s.Seq < o.Seq
}

// IsZero reports whether the stamp was never set.
func (s Stamp) IsZero() bool { return s == Stamp{} }

// String renders the stamp.
func (s Stamp) String() string { return fmt.Sprintf("%v#%d", s.At, s.Seq) }

// Op outcomes as the history records them.
const (
	OutcomePending = "pending" // never completed before the run ended
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeUnknown = "unknown"
)

// OpRecord is one client operation from invocation to outcome.
type OpRecord struct {
	Client  int
	Kind    string // create, delete, publish, subscribe, unsubscribe, ack, nack, extend
	Queue   string
	ID      wire.MessageID
	Delay   time.Duration
	Invoked time.Duration
	Done    time.Duration
	Outcome string
	Status  wire.Status
	Index   uint64
	// Replied stamps the node's final reply, when the outcome came from
	// one.
	Replied Stamp
	// An extend names the lease it extends (its number and the node
	// that holds it) and the span it asked for; an ack sent by ID to the
	// queue's owner (AtOwner) names the delivery it acks.
	Lease   uint64
	From    node.NodeID
	For     time.Duration
	AtOwner bool
	// A create names the deduplication window it asked for (zero: the
	// nodes' default).
	Window time.Duration
	// A publish carries its payload's digest (PayloadSum).
	Sum uint64
	// An add-node or remove-node names the node it adds or removes, and
	// Again marks one that repeats the request before it.
	Node  node.NodeID
	Again bool
}

// PayloadSum is the digest the history keeps of a payload, so checkers
// can tell that a delivery carries what was published without keeping
// every payload: 64-bit FNV-1a.
func PayloadSum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// DeliveryRecord is one delivery a client received.
type DeliveryRecord struct {
	Client   int
	Queue    string
	ID       wire.MessageID
	Lease    uint64
	Attempt  uint32
	From     node.NodeID
	Sent     Stamp // when the owner sent it
	Received time.Duration
	Sum      uint64 // a received delivery's payload digest (PayloadSum)
}

// DeadLetterRecord is one ask to move a message to a dead-letter queue:
// the source queue's owner (Node) asked at At that the dead-letter queue
// Target store message ID of queue Queue.
type DeadLetterRecord struct {
	At     time.Duration
	Node   node.NodeID
	Queue  string
	Target string
	ID     wire.MessageID
}

// PurgeWriteRecord is an owner's append of a purge record, named by the
// purge's token. A purge lands when an owner takes its request, which may
// be after its client stopped waiting for it: an owner still recovering
// parks a request, and a recovered owner's hold defers a purge.
type PurgeWriteRecord struct {
	At    time.Duration
	Node  node.NodeID
	Queue string
	Token wire.MessageID
	Index uint64
}

// NodeEvent is a node event that checkers read (durability reports,
// truncations, replica opens).
type NodeEvent struct {
	At    time.Duration
	Node  node.NodeID
	Name  event.Name
	Queue string
	Value uint64 // the event's numeric attribute (see recordedEvents)
	Epoch uint64
	Inc   uint64 // queue incarnation, where the event names one
	Term  uint64 // metadata term, for leadership events
	// TargetUp is the ground truth for a suspicion or a confirmation:
	// whether the node's process was in fact running.
	TargetUp bool
}

// History is everything a run's checkers judge: what clients asked and
// saw, what nodes reported, and what their disks held at the end.
type History struct {
	Ops []OpRecord
	// Deliveries are the deliveries clients received; Sends every
	// delivery an owner sent, received or not.
	Deliveries []DeliveryRecord
	Sends      []DeliveryRecord
	// UnroutedSends are deliveries an owner sent on a connection the
	// world no longer knows (its client went, or the node restarted since
	// the owner took it): they reached nobody, and are kept apart from
	// Sends, which name a client, but an owner counted each of them.
	UnroutedSends []DeliveryRecord
	NodeEvents    []NodeEvent
	// DeadLetters lists every ask of a source queue's owner to store a
	// dead-lettered message in its dead-letter queue.
	DeadLetters []DeadLetterRecord
	// PurgeWrites lists every purge record an owner appended, whether or
	// not it stayed in the history.
	PurgeWrites []PurgeWriteRecord
	// Final holds, per node, the replicas its disk held at the end of the
	// run (read from what a power loss would leave).
	Final map[node.NodeID][]node.ReplicaDump
	// Removed holds, per member some node applied the removal of, when
	// that first happened. A removed node's process may run on, but
	// nothing asks it to keep up: what its disk holds at the end is
	// history, not a replica.
	Removed map[node.NodeID]time.Duration
	// Admitted and Leaving hold, per member, when some node first applied
	// its admission, and its leave: the ground truth the answers to
	// add-node and remove-node requests are held to.
	Admitted, Leaving map[node.NodeID]time.Duration
	// MemberRefusals are the admissions and leaves some node applied as
	// refused, each time one did.
	MemberRefusals []MemberRefusal
	// BadRequests lists every request sent that no node may take, with
	// the answer it got (see badrequests.go).
	BadRequests []BadRequestRecord
	// Owners maps each queue to its owner.
	Owners map[string]node.NodeID
	// Crashes counts node crashes during the run.
	Crashes int
	// Crashed lists every crash, in order, with what caused it.
	Crashed []CrashRecord
	// EventCounts counts node events by name, over every node.
	EventCounts map[event.Name]int
	// Coverage is what the run reached: probes and boundary hits near
	// faults (see probes.go).
	Coverage Coverage
	// Story holds, in order, the events that tell who held each queue and
	// how it changed hands: plans, recovery stages, activations, fences,
	// truncations and the faults that broke a replica. Checkers quote
	// the part around a violation, so its cause reads without the trace.
	Story []StoryEvent
	// Reassignments are the planned moves of a queue's ownership away from
	// a node, each judged by what the simulator knows happened to that
	// node (see reassign.go).
	Reassignments []Reassignment
	// ServingOverlaps are the polls that found two nodes saying they
	// serve one queue (see serving.go).
	ServingOverlaps []ServingOverlap
	// LivenessAt is when the calm liveness phase began: the network
	// healed and calmed, disks stopped failing, every process was resumed
	// or restarted. Live says it began at all.
	LivenessAt time.Duration
	Live       bool
	// Processes lists every process start and stop, in order: the ground
	// truth of which nodes were up when.
	Processes []ProcessChange
	// Unplugged lists the isolate-resting-owner faults that struck: the
	// node cut off, and from when until when. Such a fault's scheduled
	// time is only when it began to wait for a rest (restingowner.go).
	Unplugged []UnplugSpan
	// Broken holds, for each node whose disk a fault broke (damaged,
	// lost, misdirected or truncated data it had made durable, a decayed
	// bit, a bit flipped at a crash, the whole disk lost), when that first
	// happened. A replica on any other disk has no damage to find.
	Broken map[node.NodeID]time.Duration
	// PeerDelays is, per delayBucket of virtual time, the longest a
	// message from one node to another sent in that bucket took to
	// arrive (see PeerDelayMax).
	PeerDelays []time.Duration
	// Unserved and Deficits are the spans in which a queue went
	// unserved (in the calm phase) or short of a replica that could be
	// replaced (see calm.go).
	Unserved []UnservedSpan
	Deficits []ReplicaDeficit
	// ClientRestarts are the restarts of workload clients, each of which
	// closed the client's connections and so ended its leases.
	ClientRestarts []ClientRestart
	// ClockJumps are the jumps of node clocks, which move every deadline
	// a node keeps on its clock, its leases' expiries among them.
	ClockJumps []ClockJump
}

// ClientRestart is one restart of a workload client.
type ClientRestart struct {
	At     time.Duration
	Client int
	// Vanished is how long the client's host was gone, its connections
	// closed without a word to the nodes; 0 for a process restart.
	Vanished time.Duration
	// Lease is the lease the client's subscriptions asked for.
	Lease time.Duration
}

// ClockJump is one jump of a node's clock, by By (forward if positive).
type ClockJump struct {
	At   time.Duration
	Node node.NodeID
	By   time.Duration
}

// StoryEvent is one line of a queue's ownership story.
type StoryEvent struct {
	At    time.Duration
	Node  node.NodeID
	Queue string
	// Text is the event as the trace renders it.
	Text string
}

// storyEvents are the node events a queue's story is told with.
var storyEvents = map[event.Name]bool{
	event.MetaPlanRecovery: true, event.MetaPlanReplace: true, event.MetaRecoveryActivated: true,
	event.MetaActivated: true, event.MetaReplicaReplaced: true,
	event.RecoveryStart: true, event.RecoveryStage: true, event.RecoveryForeignHistory: true,
	event.RecoveryLostWitness: true, event.RecoveryUnsupported: true, event.RecoveryContradiction: true,
	event.RecoveryActivateFailed: true, event.RecoveryDone: true, event.RecoveryAbandoned: true,
	event.RecoverySourceReadFailed: true,
	event.QueueActive:              true, event.QueueFenced: true, event.QueueStale: true, event.QueueOwnerStopped: true,
	event.QueueTruncate: true, event.QueueRefusedTruncation: true, event.QueueTrusted: true,
	event.QueueReplaced: true, event.QueueRetired: true,
}

// tell adds e to the story if it belongs there.
func (h *History) tell(at time.Duration, id node.NodeID, e event.Event) {
	if e.Name == event.MetaMembership {
		switch e.Kind() {
		case "remove":
			noteFirst(&h.Removed, node.NodeID(e.Node()), at)
		case "add":
			noteFirst(&h.Admitted, node.NodeID(e.Node()), at)
		case "leave":
			noteFirst(&h.Leaving, node.NodeID(e.Node()), at)
		}
	}
	if e.Name == event.MetaMembershipRefused && (e.Kind() == "add" || e.Kind() == "leave") {
		h.MemberRefusals = append(h.MemberRefusals, MemberRefusal{At: at, Kind: e.Kind(), Node: node.NodeID(e.Node())})
	}
	if storyEvents[e.Name] {
		h.Story = append(h.Story, StoryEvent{At: at, Node: id, Queue: e.Queue(), Text: e.String()})
	}
}

// MemberRefusal is one node's application of an add ("add") or a leave
// ("leave") of Node as refused.
type MemberRefusal struct {
	At   time.Duration
	Kind string
	Node node.NodeID
}

// noteFirst records at as when id's change first happened, unless an
// earlier time is there.
func noteFirst(m *map[node.NodeID]time.Duration, id node.NodeID, at time.Duration) {
	if _, ok := (*m)[id]; ok {
		return
	}
	if *m == nil {
		*m = make(map[node.NodeID]time.Duration)
	}
	(*m)[id] = at
}

// UnplugSpan is one isolate-resting-owner fault as it struck.
type UnplugSpan struct {
	Node        node.NodeID
	From, Until time.Duration
}

// CrashRecord is one node crash.
type CrashRecord struct {
	At   time.Duration
	Node node.NodeID
	// Reason says what caused it; a fault aimed at a role names the
	// role ("fault: owner", "fault: leader").
	Reason string
}
