package sim

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Bad requests. In three seeds of five the first producer also sends,
// now and then during the safety phase, a request no node may take: a
// queue name outside the allowed alphabet, a confirmation policy that
// does not exist, a deduplication window, delay, lease extension, drain
// bound or subscription window out of range, a delivery limit without a
// dead-letter queue, a detection policy that cannot work, a node to add
// with no ID or address. Each is well formed on the wire, so it reaches
// the node's checks, and goes out beside the client core's traffic on
// the same connection, under a request ID the core never uses; the
// answer is recorded and kept from the core. The checker
// bad-request-refused holds every answer to be bad-request: a node that
// took one would act on input the protocol never meant to see. The
// draws come from a stream of their own, so seeds without bad requests
// draw what they drew before bad requests existed.

// streamBadRequests draws how many bad requests a generated scenario
// sends and, for the sending client, when, what and to which node.
const streamBadRequests = "bad-requests"

// badRequestsFrom is when bad requests may start: after the queues are
// created and the producers have begun.
const badRequestsFrom = 1500 * time.Millisecond

// maxBadRequests bounds the bad requests a scenario file may ask for.
const maxBadRequests = 1000

// badReqIDBase marks the request IDs of bad requests. The client core
// numbers its requests from 1 up and never comes near it.
const badReqIDBase = uint64(1) << 62

// BadRequestRecord is one bad request a client sent, and the first
// answer it got, if any.
type BadRequestRecord struct {
	Client int
	Node   node.NodeID
	// Kind names what is wrong with the request (see badRequestKinds).
	Kind string
	Sent time.Duration
	// Answered says an answer came back, at Answered; Status and Detail
	// are that answer's.
	Answered   bool
	AnsweredAt time.Duration
	Status     wire.Status
	Detail     string
}

// drawBadRequests draws how many bad requests a generated workload
// sends: none in two seeds of five.
func drawBadRequests(seed uint64) int {
	return pick(newStream(seed, streamBadRequests), 0, 0, 4, 8, 16)
}

// badQueueNames are names no queue may have: empty, hidden, too long,
// and each with one byte just outside a range of the allowed alphabet
// (ASCII letters, digits, '.', '-' and '_').
var badQueueNames = []string{
	"", ".hidden", strings.Repeat("n", wire.MaxQueueNameLen+1),
	"a/b", "a b", "q@", "q[", "q`", "q{", "q/", "q:", "q,", "q^", "q\x7f", "q\xc3\xa9",
}

// badRequestKinds builds each kind of bad request: it returns the
// request for reqID, drawn with r. queue is a queue of the workload,
// for the requests whose fault lies elsewhere than in the name.
var badRequestKinds = []struct {
	name  string
	build func(r *rand.Rand, reqID uint64, queue string) wire.Message
}{
	{"create-name", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		return &wire.CreateQueue{ReqID: reqID, Queue: pick(r, badQueueNames...), Policy: wire.PolicyMajority}
	}},
	{"create-policy", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		return &wire.CreateQueue{ReqID: reqID, Queue: "bad-policy", Policy: wire.PolicyOwnerOnly + 1 + wire.Policy(r.IntN(3))}
	}},
	{"create-window", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		w := pick(r, wire.MinDedupWindow-1, wire.MinDedupWindow/2, wire.MaxDedupWindow+1, -time.Second)
		return &wire.CreateQueue{ReqID: reqID, Queue: "bad-window", Policy: wire.PolicyMajority, DedupWindow: w}
	}},
	{"create-dead-letter", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		m := &wire.CreateQueue{ReqID: reqID, Queue: "bad-limit", Policy: wire.PolicyMajority}
		m.DeadLetter, m.MaxDeliveries = badDeadLetter(r, m.Queue)
		return m
	}},
	{"queue-options", func(r *rand.Rand, reqID uint64, queue string) wire.Message {
		m := &wire.SetQueueOptions{ReqID: reqID, Queue: queue}
		if r.IntN(3) == 0 {
			m.Queue, m.DeadLetter, m.MaxDeliveries = pick(r, badQueueNames...), deadLetterQueue, 2
		} else {
			m.DeadLetter, m.MaxDeliveries = badDeadLetter(r, queue)
		}
		return m
	}},
	{"publish-name", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		return &wire.Publish{ReqID: reqID, Queue: pick(r, badQueueNames...), ID: wire.MessageID{Producer: badProducer, Seq: reqID}, Payload: []byte("bad")}
	}},
	{"publish-delay", func(r *rand.Rand, reqID uint64, queue string) wire.Message {
		d := -pick(r, time.Nanosecond, time.Millisecond, time.Second)
		return &wire.Publish{ReqID: reqID, Queue: queue, ID: wire.MessageID{Producer: badProducer, Seq: reqID}, Delay: d, Payload: []byte("bad")}
	}},
	{"subscribe-window", func(r *rand.Rand, reqID uint64, queue string) wire.Message {
		return &wire.Subscribe{ReqID: reqID, Queue: queue, Window: 0, Lease: time.Second}
	}},
	{"extend-range", func(r *rand.Rand, reqID uint64, queue string) wire.Message {
		d := pick(r, 0, -time.Millisecond, wire.MaxExtend+1)
		return &wire.Extend{ReqID: reqID, Queue: queue, ID: wire.MessageID{Producer: badProducer, Seq: 1}, Lease: 1, For: d}
	}},
	{"move-drain", func(r *rand.Rand, reqID uint64, queue string) wire.Message {
		d := pick(r, -time.Nanosecond, -time.Second, 5*time.Minute+1, time.Hour)
		return &wire.MoveOwner{ReqID: reqID, Queue: queue, To: 1, DrainFor: d}
	}},
	{"detection", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		m := &wire.SetDetection{ReqID: reqID, Mode: 1 + uint8(r.IntN(2)), Interval: 10 * time.Millisecond}
		switch r.IntN(4) {
		case 0:
			m.Mode = pick(r, uint8(0), 3, 255)
		case 1:
			m.Interval = pick(r, 0, -time.Millisecond)
		default:
			m.Grace = -pick(r, time.Nanosecond, time.Second)
		}
		return m
	}},
	{"add-node", func(r *rand.Rand, reqID uint64, _ string) wire.Message {
		if r.IntN(2) == 0 {
			return &wire.AddNode{ReqID: reqID, Node: 0, Addr: "n0:7000"}
		}
		return &wire.AddNode{ReqID: reqID, Node: 90 + uint32(r.IntN(9)), Addr: ""}
	}},
}

// badProducer is the producer ID of bad publishes, one no workload
// client has.
const badProducer = 1 << 40

// badDeadLetter draws a dead-letter setting queue may not have: a limit
// with no queue to move to, a queue with no limit or one past the
// largest, the queue itself, or a queue whose name no queue may have.
func badDeadLetter(r *rand.Rand, queue string) (string, uint32) {
	switch r.IntN(5) {
	case 0:
		return "", 1 + uint32(r.IntN(3))
	case 1:
		return deadLetterQueue, 0
	case 2:
		return deadLetterQueue, wire.MaxDeliveriesLimit + 1
	case 3:
		return queue, 2
	default:
		return pick(r, badQueueNames...), 2
	}
}

// scheduleBadRequests has client c send the workload's bad requests,
// each at a time drawn over the safety phase, to a drawn node.
func (c *clientProc) scheduleBadRequests() {
	wl := c.w.sc.Workload
	if len(wl.Queues) == 0 {
		return
	}
	c.scheduleDrawn(streamBadRequests, wl.BadRequests, badRequestsFrom, func(r *rand.Rand) func() {
		kind := r.IntN(len(badRequestKinds))
		queue := wl.Queues[r.IntN(len(wl.Queues))].Name
		to := uint32(1 + r.IntN(len(c.w.procs)))
		draws := r.Uint64()
		return func() { c.sendBad(to, kind, queue, draws) }
	})
}

// sendBad builds a bad request of the kind-th kind, its details drawn
// from draws, and sends it to node to, unless the run has reached its
// calm phase or the node is down (a refused connection would tell the
// core its connection broke, which the core's own traffic did not
// cause). Its request ID is numbered in the run, so no two collide.
func (c *clientProc) sendBad(to uint32, kind int, queue string, draws uint64) {
	p := c.w.procs[to-1]
	if c.w.Live() || c.quiet() || p.state == stateDown {
		return
	}
	h := c.w.hist
	reqID := badReqIDBase + uint64(len(h.BadRequests))
	k := badRequestKinds[kind]
	m := k.build(rand.New(rand.NewPCG(draws, reqID)), reqID, queue)
	h.BadRequests = append(h.BadRequests, BadRequestRecord{Client: c.index, Node: p.id, Kind: k.name, Sent: c.w.now})
	c.badPending = append(c.badPending, badPending{reqID: reqID, record: len(h.BadRequests) - 1})
	c.send(to, m)
}

// badPending ties a bad request's ID to its history record.
type badPending struct {
	reqID  uint64
	record int
}

// answerBad records r as the answer to one of c's bad requests, and
// reports whether it was one: such answers are kept from the core.
func (c *clientProc) answerBad(r *wire.Reply) bool {
	if r.ReqID < badReqIDBase {
		return false
	}
	for _, p := range c.badPending {
		if p.reqID != r.ReqID {
			continue
		}
		rec := &c.w.hist.BadRequests[p.record]
		if !rec.Answered {
			rec.Answered, rec.AnsweredAt, rec.Status, rec.Detail = true, c.w.now, r.Status, r.Detail
			if r.Status == wire.StatusBadRequest {
				c.w.cov.probes[ProbeBadRequestRefused]++
			}
		}
		return true
	}
	return true // an answer to a request of an earlier generation of this client
}
