package core

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// model is a small, adversarial stand-in for a cluster that knows the
// ground truth of every operation: whether some node acted on it. It drops,
// delays, duplicates and refuses requests, moves the queue's owner, pauses
// a node (which then answers nothing until it resumes and serves what it
// was sent) and breaks connections, and then checks the client's one
// promise: OK means it happened, Failed means it did not, and everything
// finishes once.
type model struct {
	t      *testing.T
	rng    *rand.Rand // the world's randomness, separate from the client's
	c      *Client
	now    time.Time
	calm   bool
	owner  uint32
	acted  map[OpID]bool
	kinds  map[OpID]OpKind
	done   map[OpID]Outcome
	late   []lateReply
	sentDs int
	gotDs  int
	// took maps each node to the subscribe request of q it holds, as a
	// node would: taken up when it acts on one, dropped by an
	// Unsubscribe or when the connection breaks.
	took map[uint32]uint64
	// unsubscribes counts the Unsubscribe requests the client sent.
	unsubscribes int
	// paused is the node that answers nothing until resumeAt, zero if
	// none; held are the requests it was sent meanwhile.
	paused   uint32
	resumeAt time.Time
	held     []heldRequest
	// hedged counts requests served while another attempt of the same
	// operation was in flight.
	hedged int
	log    strings.Builder
}

// heldRequest is a request a paused node received: it serves it when it
// resumes, whether or not the client still waits for it.
type heldRequest struct {
	to  uint32
	op  OpID
	msg wire.Message
}

type lateReply struct {
	at   time.Time
	from uint32
	r    *wire.Reply
}

// newModel builds a model world whose client hedges after hedgeAfter
// (negative: never).
func newModel(t *testing.T, clientSeed, worldSeed uint64, hedgeAfter time.Duration) *model {
	cfg := testConfig()
	cfg.MaxAttempts = 4
	cfg.HedgeAfter = hedgeAfter
	return &model{
		t: t, rng: rand.New(rand.NewPCG(worldSeed, 99)), now: t0, owner: 1,
		c:     New(cfg, rand.New(rand.NewPCG(clientSeed, 1))),
		acted: map[OpID]bool{}, kinds: map[OpID]OpKind{}, done: map[OpID]Outcome{},
		took: map[uint32]uint64{},
	}
}

// run drives a stormy phase of steps, then a calm one in which every
// operation must finish, and returns the transcript.
func (m *model) run(steps int) string {
	m.c.Subscribe(m.now, "q", 8, time.Second)
	for range steps {
		m.step()
	}
	m.calm = true
	m.resume()
	for i := 0; len(m.done) < len(m.kinds); i++ {
		if i > 2000 {
			m.t.Fatalf("operations still unfinished after the calm phase: %d of %d done", len(m.done), len(m.kinds))
		}
		m.exchange()
		m.advance()
	}
	// Each delivery reaches the application or is dropped as stale (from
	// a node other than the one holding the established subscription);
	// none vanishes.
	if stale := int(m.c.StaleDeliveries()); m.gotDs+stale != m.sentDs {
		m.t.Fatalf("sent %d deliveries, the application saw %d and %d were dropped as stale", m.sentDs, m.gotDs, stale)
	}
	// A paused node may act on a request after the operation finished:
	// Failed must have allowed for that too.
	for _, op := range slices.Sorted(maps.Keys(m.done)) {
		if m.done[op] == OutcomeFailed && m.acted[op] {
			m.t.Fatalf("op %d was reported Failed, and a node acted on it afterwards", op)
		}
	}
	return m.log.String()
}

func (m *model) step() {
	switch m.rng.IntN(8) {
	case 0, 1:
		op, _ := m.c.Publish(m.now, "q", []byte("p"), 0)
		m.kinds[op] = OpPublish
	case 2:
		m.kinds[m.c.CreateQueue(m.now, "q", wire.PolicyMajority)] = OpCreate
	case 3:
		d := Delivery{Queue: "q", ID: wire.MessageID{Producer: 5, Seq: m.rng.Uint64N(100)}, Lease: 1, From: 1 + m.rng.Uint32N(3)}
		if m.rng.IntN(2) == 0 {
			// A gateway's ack, by ID at whichever node owns the queue.
			m.kinds[m.c.AckAtOwner(m.now, d.Queue, d.ID)] = OpAck
			break
		}
		m.kinds[m.c.Ack(m.now, d)] = OpAck
	case 4:
		m.owner = 1 + m.rng.Uint32N(3)
	case 5:
		m.disconnect(1 + m.rng.Uint32N(3))
	case 6:
		m.sentDs++
		m.c.OnMessage(m.now, 1+m.rng.Uint32N(3), &wire.Delivery{Queue: "q", ID: wire.MessageID{Producer: 5, Seq: 1}, Lease: 2})
	case 7:
		if m.paused == 0 {
			// Most often the owner, the pause hedging is for.
			m.paused = m.owner
			if m.rng.IntN(3) == 0 {
				m.paused = 1 + m.rng.Uint32N(3)
			}
			m.resumeAt = m.now.Add(time.Duration(m.rng.Int64N(int64(1500 * time.Millisecond))))
		}
	}
	m.exchange()
	m.checkSubscription()
	m.advance()
}

// exchange answers everything in the outbox and checks every event.
func (m *model) exchange() {
	for {
		m.drainEvents()
		out := m.c.Outbox()
		if len(out) == 0 {
			return
		}
		m.checkFlights()
		for _, o := range out {
			fmt.Fprintf(&m.log, "%v n%d<-%s\n", m.now.Sub(t0), o.To, wire.Describe(o.Msg))
			if _, ok := o.Msg.(*wire.Unsubscribe); ok {
				// Sent once and not tracked; the node drops what it holds.
				m.unsubscribes++
				delete(m.took, o.To)
				continue
			}
			reqs := []wire.Message{o.Msg}
			if b, ok := o.Msg.(*wire.SettleBatch); ok {
				// Each settle of a batch is a request of its own, with
				// its own fate.
				reqs = reqs[:0]
				for _, s := range b.Settles() {
					reqs = append(reqs, s)
				}
			}
			for _, r := range reqs {
				if o.To == m.paused {
					m.hold(o.To, r)
				} else {
					m.serve(o.To, r)
				}
			}
		}
	}
}

// serve plays the cluster's part for one request.
func (m *model) serve(to uint32, msg wire.Message) {
	reqID := reqIDOf(msg)
	a, ok := m.c.attempts[reqID]
	if !ok {
		// Serving an earlier message of this batch finished or replaced
		// the operation (a disconnect, say); this one went down with it.
		return
	}
	op := a.op.id
	if len(a.op.flights) > 1 {
		m.hedged++
	}
	fate := m.rng.IntN(12)
	if m.calm {
		fate = 11
	}
	switch fate {
	case 0: // lost on the way
	case 1: // the node acts, perhaps, and the connection breaks
		m.maybeAct(op, to)
		m.disconnect(to)
	case 2: // not ready: the protocol says the node did not act
		m.answer(to, reqID, wire.StatusUnavailable, 0)
	case 3: // a stale owner's write may survive
		m.maybeAct(op, to)
		m.answer(to, reqID, wire.StatusFenced, m.owner)
	case 4: // someone else made the queue, the queue is gone, or the lease is
		switch k := m.kinds[op]; {
		case k == OpCreate && !m.acted[op]:
			m.answer(to, reqID, wire.StatusQueueExists, 0)
			return
		case k == OpPublish && !m.acted[op]:
			m.answer(to, reqID, wire.StatusNoQueue, 0)
			return
		}
		m.process(op, to, reqID, msg)
	default:
		m.process(op, to, reqID, msg)
	}
}

// process is the honest path: a non-owner refuses, the owner acts once
// and answers as a real node would to a repeat.
func (m *model) process(op OpID, to uint32, reqID uint64, msg wire.Message) {
	_, create := msg.(*wire.CreateQueue)
	if !create && to != m.owner {
		hint := m.owner
		if !m.calm && m.rng.IntN(4) == 0 {
			hint = 0
		}
		m.answer(to, reqID, wire.StatusNotOwner, hint)
		return
	}
	status := wire.StatusOK
	if m.acted[op] {
		switch msg.(type) {
		case *wire.CreateQueue:
			status = wire.StatusQueueExists
		case *wire.Settle:
			status = wire.StatusNotLeased
		}
	}
	m.acted[op] = true
	if _, ok := msg.(*wire.Subscribe); ok {
		m.took[to] = reqID
	}
	if !m.calm && m.rng.IntN(8) == 0 {
		return // acted, but the reply is lost
	}
	m.answer(to, reqID, status, 0)
}

// disconnect breaks the connection to node: the node drops the
// subscription it held for this client, and its replies in flight die.
func (m *model) disconnect(node uint32) {
	delete(m.took, node)
	m.c.OnDisconnect(m.now, node)
	m.dropLateFrom(node)
}

// checkSubscription holds the client's Unsubscribe requests to their
// promise: they never end the subscription the client holds. Once the
// client's subscription is established on a node, that node still holds
// the request that made it, or a later one; only a new subscribe
// replaces it.
func (m *model) checkSubscription() {
	for _, s := range m.c.subs {
		if s.op != nil || s.node == 0 {
			continue
		}
		if held, ok := m.took[s.node]; !ok || held < s.reqID {
			m.t.Fatalf("the subscription is established on n%d by request %d, and that node holds %d (%v)", s.node, s.reqID, held, ok)
		}
	}
}

func (m *model) maybeAct(op OpID, to uint32) {
	if m.kinds[op] != 0 && m.rng.IntN(2) == 0 {
		m.acted[op] = true
	}
}

// answer queues a reply, sometimes late enough to outlive the attempt,
// sometimes twice.
func (m *model) answer(from uint32, reqID uint64, status wire.Status, owner uint32) {
	r := &wire.Reply{ReqID: reqID, Status: status, Owner: owner}
	delay := time.Duration(m.rng.Int64N(int64(300 * time.Millisecond)))
	if !m.calm && m.rng.IntN(6) == 0 {
		delay += 2 * time.Second
	}
	m.late = append(m.late, lateReply{at: m.now.Add(delay), from: from, r: r})
	if !m.calm && m.rng.IntN(10) == 0 {
		m.late = append(m.late, lateReply{at: m.now.Add(2 * delay), from: from, r: r})
	}
}

func (m *model) dropLateFrom(node uint32) {
	kept := m.late[:0]
	for _, l := range m.late {
		if l.from != node {
			kept = append(kept, l)
		}
	}
	m.late = kept
}

// advance moves time to the next thing that happens: a reply arriving or
// a client deadline, whichever is first, or a short step if neither.
func (m *model) advance() {
	m.checkWakes()
	next := m.now.Add(50 * time.Millisecond)
	if d, ok := m.c.NextDeadline(); ok && d.Before(next) {
		next = d
	}
	for _, l := range m.late {
		if l.at.Before(next) {
			next = l.at
		}
	}
	if m.paused != 0 && m.resumeAt.Before(next) {
		next = m.resumeAt
	}
	if next.Before(m.now) {
		next = m.now
	}
	m.now = next
	kept := m.late[:0]
	var due []lateReply
	for _, l := range m.late {
		if l.at.After(m.now) {
			kept = append(kept, l)
		} else {
			due = append(due, l)
		}
	}
	m.late = kept
	for _, l := range due {
		m.c.OnMessage(m.now, l.from, l.r)
	}
	if m.paused != 0 && !m.resumeAt.After(m.now) {
		m.resume()
	}
	m.c.Tick(m.now)
}

// hold keeps a request sent to the paused node until it resumes.
func (m *model) hold(to uint32, msg wire.Message) {
	if a, ok := m.c.attempts[reqIDOf(msg)]; ok {
		m.held = append(m.held, heldRequest{to: to, op: a.op.id, msg: msg})
	}
}

// resume ends the pause: the node serves, in order, what it was sent
// while it was paused, as a process woken by SIGCONT would, including
// the requests whose operations finished meanwhile: it acts on them all
// the same, and its replies find no one waiting.
func (m *model) resume() {
	held := m.held
	m.paused, m.held = 0, nil
	for _, r := range held {
		if _, waiting := m.c.attempts[reqIDOf(r.msg)]; waiting {
			m.serve(r.to, r.msg)
		} else {
			m.process(r.op, r.to, reqIDOf(r.msg), r.msg)
		}
	}
}

// checkFlights checks the hedging invariants on every live operation: at
// most two attempts in flight, at different nodes, and only a publish or
// a subscribe ever has two.
func (m *model) checkFlights() {
	for _, op := range m.c.live {
		if len(op.flights) != 0 && op.phase != phaseAwaiting {
			m.t.Fatalf("op %d has %d attempts in flight in phase %s", op.id, len(op.flights), op.phase)
		}
		if len(op.flights) < 2 {
			continue
		}
		if len(op.flights) > 2 || op.flights[0].to == op.flights[1].to || (op.kind != OpPublish && op.kind != OpSubscribe) {
			m.t.Fatalf("%s op %d has attempts in flight at %v", op.kind, op.id, op.flights)
		}
	}
}

// checkWakes holds the wake heap to a scan of the live operations: each
// operation waiting on a reply or a retry has a current entry at its wake
// time, and the heap's first is the earliest of them. A change to an
// operation that does not file its wake time anew fails here.
func (m *model) checkWakes() {
	var earliest time.Time
	for _, op := range m.c.live {
		if op.phase != phaseAwaiting && op.phase != phaseBackoff {
			continue
		}
		at := op.wake()
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
		filed := false
		for e := range m.c.wakes.All() {
			if e.op == op && e.current() && e.at.Equal(at) {
				filed = true
				break
			}
		}
		if !filed {
			m.t.Fatalf("op %d (%s) wakes at %v, and the heap files no current entry for that", op.id, op.phase, at)
		}
	}
	e, ok := m.c.nextWake()
	if ok != !earliest.IsZero() || ok && !e.at.Equal(earliest) {
		m.t.Fatalf("the heap's next wake is %v (%v), a scan of the live operations says %v", e.at, ok, earliest)
	}
}

// drainEvents checks each event against the ground truth.
func (m *model) drainEvents() {
	for _, e := range m.c.Events() {
		fmt.Fprintf(&m.log, "%v %s\n", m.now.Sub(t0), e)
		if e.Delivery != nil {
			m.gotDs++
			continue
		}
		if e.Kind == OpSubscribe {
			continue
		}
		if prev, dup := m.done[e.Op]; dup {
			m.t.Fatalf("op %d finished twice: %s, then %v", e.Op, prev, e)
		}
		m.done[e.Op] = e.Outcome
		switch {
		case e.Outcome == OutcomeOK && !m.acted[e.Op]:
			m.t.Fatalf("reported OK but nothing acted on it: %v", e)
		case e.Outcome == OutcomeFailed && m.acted[e.Op]:
			m.t.Fatalf("reported Failed but a node acted on it: %v", e)
		}
	}
}

// Against a cluster that misbehaves in every way a network and a failover
// can, the client never calls an operation OK that did not happen or
// Failed that did, and finishes every operation exactly once.
// It holds with hedging on (the default, and a short delay that hedges
// often) and off.
func TestModelOutcomesMatchGroundTruth(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hedgeAfter time.Duration
	}{
		{"hedging off", -1},
		{"default hedging", 0},
		{"eager hedging", 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outcomes := map[Outcome]int{}
			hedged, unsubscribes := 0, 0
			for seed := uint64(1); seed <= 200; seed++ {
				m := newModel(t, seed, seed*7919, tc.hedgeAfter)
				m.run(300)
				for _, o := range m.done {
					outcomes[o]++
				}
				hedged += m.hedged
				unsubscribes += m.unsubscribes
			}
			t.Logf("outcomes: %v; %d requests served beside another attempt in flight; %d unsubscribes after stale deliveries",
				outcomes, hedged, unsubscribes)
			if unsubscribes == 0 {
				t.Error("no stale delivery led to an Unsubscribe: the subscription check tested nothing")
			}
			// The storm must actually produce every outcome, or it tests little.
			for _, o := range []Outcome{OutcomeOK, OutcomeFailed, OutcomeUnknown} {
				if outcomes[o] == 0 {
					t.Errorf("no operation ended %s across all seeds: %v", o, outcomes)
				}
			}
			if hedging := tc.hedgeAfter >= 0; hedging != (hedged > 0) {
				t.Errorf("%d requests served beside another in flight, with hedging after %v", hedged, tc.hedgeAfter)
			}
		})
	}
}

// The same inputs and the same seed give the same messages and events, in
// the same order; a different client seed gives a different run.
func TestDeterministicForSameSeed(t *testing.T) {
	a := newModel(t, 42, 4242, 0).run(400)
	b := newModel(t, 42, 4242, 0).run(400)
	if a != b {
		t.Fatalf("two runs with the same seeds diverged:\n%s", firstDifference(a, b))
	}
	if c := newModel(t, 43, 4242, 0).run(400); c == a {
		t.Fatal("a different client seed produced an identical run; the rng is not used")
	}
}

func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("one run is a prefix of the other (%d vs %d lines)", len(la), len(lb))
}
