package client

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// The client's own vocabulary. A program that uses cairn imports this
// package alone: the protocol's codec, handshake and client core are
// implementation details that may change between versions, so none of
// their types appears in the client's API. Each type here converts to and
// from its protocol counterpart in one place, below.

// MessageID names a published message: the producer's identity (random
// per Client) and a sequence number. A retried publish keeps its ID, so
// the queue holds the message at most once.
type MessageID struct {
	Producer uint64
	Seq      uint64
}

// String renders the ID as p<producer>.<seq>, as the node's logs and the
// CLI do.
func (id MessageID) String() string { return fmt.Sprintf("p%d.%d", id.Producer, id.Seq) }

func messageIDFrom(id wire.MessageID) MessageID { return MessageID{Producer: id.Producer, Seq: id.Seq} }

// Policy says how many replicas must hold a message durably before its
// publish is confirmed.
type Policy uint8

// Confirmation policies.
const (
	// PolicyMajority confirms once a majority of the replica set, the
	// owner included, holds the message: it survives the loss of any
	// minority. The default.
	PolicyMajority Policy = iota
	// PolicyAll confirms once every replica holds the message.
	PolicyAll
	// PolicyOwnerOnly confirms once the owner alone holds it: fastest,
	// and lost if the owner's disk is.
	PolicyOwnerOnly
)

// policies lists every policy with its protocol value.
var policies = [...]struct {
	policy Policy
	wire   wire.Policy
}{
	{PolicyMajority, wire.PolicyMajority},
	{PolicyAll, wire.PolicyAll},
	{PolicyOwnerOnly, wire.PolicyOwnerOnly},
}

// String names the policy: majority, all or owner-only.
func (p Policy) String() string {
	if w, ok := p.toWire(); ok {
		return w.String()
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParsePolicy reads a policy by the name String gives it.
func ParsePolicy(name string) (Policy, error) {
	w, err := wire.ParsePolicy(name)
	if err != nil {
		return 0, err
	}
	for _, p := range policies {
		if p.wire == w {
			return p.policy, nil
		}
	}
	return 0, fmt.Errorf("confirmation policy %s has no client counterpart", w)
}

// toWire is p's protocol value; false for a value no constant names.
func (p Policy) toWire() (wire.Policy, bool) {
	for _, q := range policies {
		if q.policy == p {
			return q.wire, true
		}
	}
	return 0, false
}

// Status says why an operation certainly did not happen (see
// StatusError).
type Status uint8

// Statuses a StatusError may carry.
const (
	// StatusUnknown stands for a status this client version does not
	// know; the StatusError's Detail still says what happened.
	StatusUnknown Status = iota
	// StatusNoQueue: the queue does not exist.
	StatusNoQueue
	// StatusQueueExists: a queue by that name already exists.
	StatusQueueExists
	// StatusTooLarge: the message is over the size limit.
	StatusTooLarge
	// StatusBadRequest: the request was malformed or not allowed (for
	// example an operation that needs the admin role); Detail says why.
	StatusBadRequest
	// StatusNotLeased: an ack, nack or extension of a delivery whose
	// lease lapsed;
	// the message will be (or was) delivered again.
	StatusNotLeased
	// StatusOwnerChanged: an ack, nack or extension reached a node that no longer
	// owns the queue. The lease ended with the old owner, so the message
	// will be delivered again.
	StatusOwnerChanged
	// StatusUnavailable: the cluster could not serve the request and did
	// not act on it.
	StatusUnavailable
	// StatusDiskFull: the queue's owner is short of disk space and takes
	// no new messages (or queues) until consumers drain enough for its
	// logs to shrink, or an operator frees space; deliveries and acks go
	// on. The message was not stored.
	StatusDiskFull
)

// statusNames are the statuses' names, as the node's own logs spell them.
var statusNames = [...]string{"unknown", "no-queue", "queue-exists", "too-large", "bad-request", "not-leased", "owner-changed", "unavailable",
	"disk-full"}

// String names the status (no-queue, queue-exists, ...).
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return statusNames[StatusUnknown]
}

// statusFrom is the client status for a protocol status.
func statusFrom(w wire.Status) Status {
	switch w {
	case wire.StatusNoQueue:
		return StatusNoQueue
	case wire.StatusQueueExists:
		return StatusQueueExists
	case wire.StatusTooLarge:
		return StatusTooLarge
	case wire.StatusBadRequest:
		return StatusBadRequest
	case wire.StatusNotLeased:
		return StatusNotLeased
	case wire.StatusNotOwner, wire.StatusFenced:
		return StatusOwnerChanged
	case wire.StatusUnavailable:
		return StatusUnavailable
	case wire.StatusDiskFull:
		return StatusDiskFull
	}
	return StatusUnknown
}

// Detection is a failure-detection policy for the whole cluster: how a
// node decides that a queue's owner is dead, which bounds how soon a
// failover starts.
type Detection struct {
	// Mode is DetectionHeartbeat or DetectionEager.
	Mode DetectionMode
	// Interval paces the metadata leader's pings (four an interval under
	// heartbeat detection, two under eager). Under heartbeat detection a
	// node that leaves a ping unanswered for Grace (at least Interval) is
	// confirmed down; under eager detection, for Interval, or longer when
	// its link stalled lately.
	Interval time.Duration
	// Grace is heartbeat detection's tolerance for an unanswered ping,
	// its verification included; eager detection has none.
	Grace time.Duration
}

// DetectionMode chooses how owners are suspected.
type DetectionMode uint8

// Detection modes.
const (
	// DetectionHeartbeat suspects an owner only once its heartbeats stop.
	DetectionHeartbeat DetectionMode = 1
	// DetectionEager also suspects an owner as soon as its connection
	// breaks.
	DetectionEager DetectionMode = 2
)

func (d Detection) toWire() wire.SetDetection {
	return wire.SetDetection{Mode: uint8(d.Mode), Interval: d.Interval, Grace: d.Grace}
}
