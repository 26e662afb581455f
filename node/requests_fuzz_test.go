package node_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
)

// FuzzClientRequests turns each input into a script of client requests
// (create, delete, publish, subscribe, ack, nack, set-detection, a
// client going away) with arbitrary names, IDs, sizes and timings, sent
// to the nodes of a three-node hand-driven cluster with time passing in
// between. The first byte chooses the setup: a queue "q" that is healthy,
// or one whose replica on one node was damaged on disk (a bit flipped in
// a synced frame) before that node restarted, so the node holds a fenced
// replica for the whole script.
//
// No node may panic, including when asked for its queue view (what GET
// /status reads), and each reply must be well formed: it answers a
// request sent to that node on that connection, once (a subscription
// may be ended later by one more, non-OK, reply), with a known status,
// and a refusal as bad-request says why. A delivery must go to a
// connection subscribed to its queue on that node.
func FuzzClientRequests(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0, 1, 3, 0, 0, 0, 2, 3, 0, 3, 3, 7, 20, 4, 0, 0, 0, 0})
	f.Add([]byte{1, 2, 0, 0, 3, 0, 0, 0, 2, 2, 0, 1, 1, 10, 0, 0, 7, 50, 5, 0, 1, 0, 0})
	f.Add([]byte{3, 0, 2, 0, 0, 0, 6, 0, 1, 0, 100, 0, 5, 1, 4, 0, 0, 7, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		s := newRequestScript(t, in)
		for op := 0; op < maxScriptOps && !in.done(); op++ {
			s.step(in)
			s.viewAll()
		}
		s.c.advance(2 * time.Second)
		s.viewAll()
		s.checkReplies()
	})
}

// maxScriptOps bounds one script, so every input runs quickly.
const maxScriptOps = 48

// fuzzInput reads a fuzz input a byte at a time. Past its end every read
// is zero, so any input is a complete script.
type fuzzInput struct {
	b []byte
}

func (in *fuzzInput) done() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *fuzzInput) u16() uint16 { return uint16(in.byte())<<8 | uint16(in.byte()) }

// bytes returns the next n bytes, fewer at the end of the input.
func (in *fuzzInput) bytes(n int) []byte {
	n = min(n, len(in.b))
	v := in.b[:n]
	in.b = in.b[n:]
	return v
}

// fuzzNames are the queue names a script uses most: the setup's queue,
// another valid one, and names the node must refuse.
var fuzzNames = []string{"q", "r", "", "a/b", ".q", strings.Repeat("n", wire.MaxQueueNameLen+1), "q.0000000000000001", "q\x00"}

// name returns a queue name: usually one of fuzzNames, sometimes raw
// bytes from the input.
func (in *fuzzInput) name() string {
	b := in.byte()
	if b < 224 {
		return fuzzNames[int(b)%len(fuzzNames)]
	}
	return string(in.bytes(int(b % 16)))
}

// sentRequest is what a script sent, to check the replies against.
type sentRequest struct {
	to   node.NodeID
	conn node.ConnID
	kind wire.Kind
}

// requestScript drives one fuzz input against a cluster.
type requestScript struct {
	t     *testing.T
	c     *cluster
	next  uint64 // the next request ID
	sent  map[uint64]sentRequest
	subs  map[string]bool // "node/conn/queue" for each subscribe sent
	seen  []*wire.Delivery
	ops   []string // the script so far, for failure reports
	setup string
}

// newRequestScript builds the cluster and queue "q" the input's first
// byte asks for.
func newRequestScript(t *testing.T, in *fuzzInput) *requestScript {
	s := &requestScript{t: t, c: newCluster(t), next: 1 << 20, sent: map[uint64]sentRequest{}, subs: map[string]bool{}}
	setup := in.byte()
	owner := s.c.createQueue("q", wire.PolicyMajority)
	s.setup = "healthy queue q"
	if setup&1 == 1 {
		victim := node.NodeID(setup>>1%3 + 1)
		s.damage(owner, victim)
	}
	s.c.replies = nil // only the script's requests are judged
	return s
}

// damage gives victim a fenced replica of q: q gets a few confirmed
// messages, then victim stops, a bit flips in a synced frame of its log,
// and it restarts to find the damage.
func (s *requestScript) damage(owner, victim node.NodeID) {
	s.c.publishConfirmed(owner, "q", 8)
	m := s.c.node(victim)
	m.crash()
	damageFirstSegment(s.t, m.fs, "q")
	m.start()
	s.c.advance(time.Second)
	if !s.c.saw(event.QueueFenced, by(victim), onQueue("q")) {
		s.t.Fatalf("%s did not fence its damaged replica of q; events:\n%s", victim, strings.Join(s.c.events, "\n"))
	}
	s.setup = fmt.Sprintf("queue q with a damaged replica on %s (owner %s)", victim, owner)
}

// step reads one operation from the input and performs it.
func (s *requestScript) step(in *fuzzInput) {
	op := in.byte()
	to := node.NodeID(in.byte()%3 + 1)
	conn := node.ConnID(in.byte()%3 + 1)
	switch (op & 0x7f) % 10 { // the top bit says whether to settle after
	case 0:
		s.send(to, conn, &wire.CreateQueue{Queue: in.name(), Policy: wire.Policy(in.byte() % 5)})
	case 1:
		s.send(to, conn, &wire.DeleteQueue{Queue: in.name()})
	case 2, 3:
		s.send(to, conn, s.publish(in))
	case 4:
		lease := time.Duration(int8(in.byte())) * 10 * time.Millisecond
		s.send(to, conn, &wire.Subscribe{Queue: in.name(), Window: uint32(in.byte() % 5), Lease: lease})
	case 5:
		s.send(to, conn, s.settleOrExtend(in))
	case 6:
		ms := func() time.Duration { return time.Duration(int16(in.u16())) * time.Millisecond }
		s.send(to, conn, &wire.SetDetection{Mode: in.byte() % 4, Interval: ms(), Grace: ms()})
	case 7:
		d := time.Duration(in.byte()) * 10 * time.Millisecond
		s.ops = append(s.ops, fmt.Sprintf("advance %v", d))
		s.c.advance(d)
	case 9:
		// Bit 6 of the operation byte picks a purge, so the inputs saved
		// before purges read as they did.
		if op&0x40 != 0 {
			s.send(to, conn, &wire.Purge{Queue: in.name()})
			break
		}
		s.send(to, conn, &wire.Unsubscribe{Queue: in.name()})
	case 8:
		// Bit 6 picks a depth query, so the inputs saved before it read
		// as they did.
		if op&0x40 != 0 {
			s.send(to, conn, &wire.QueueInfo{Queue: in.name()})
			break
		}
		s.ops = append(s.ops, fmt.Sprintf("client %d leaves %s", conn, to))
		if m := s.c.node(to); !m.down {
			m.run(func() { m.n.OnClientGone(conn) })
		}
	}
	if op&0x80 != 0 {
		s.c.settle()
	}
}

// publish reads a publish: an ID from a small space, so retries and
// duplicates happen; a payload of up to 63 bytes or one over the limit;
// a delay that may be negative.
func (s *requestScript) publish(in *fuzzInput) *wire.Publish {
	m := &wire.Publish{Queue: in.name(), ID: wire.MessageID{Producer: uint64(in.byte() % 3), Seq: uint64(in.byte() % 8)}}
	switch size := in.byte(); size {
	case 255:
		m.Payload = make([]byte, wire.MaxPayloadSize+1)
	default:
		m.Payload = make([]byte, size%64)
	}
	m.Delay = time.Duration(int8(in.byte())) * 10 * time.Millisecond
	return m
}

// settleOrExtend reads an ack, a nack or a lease extension (by a span
// that may be negative or zero), usually of a delivery the script has
// seen, otherwise of an arbitrary message and lease.
func (s *requestScript) settleOrExtend(in *fuzzInput) wire.Message {
	s.collectDeliveries()
	pick, how := in.byte(), in.byte()
	st := &wire.Settle{Nack: how&1 == 1}
	if len(s.seen) > 0 && pick < 200 {
		d := s.seen[int(pick)%len(s.seen)]
		st.Queue, st.ID, st.Lease = d.Queue, d.ID, d.Lease
	} else {
		st.ID = wire.MessageID{Producer: uint64(in.byte() % 3), Seq: uint64(in.byte() % 8)}
		st.Queue, st.Lease = in.name(), uint64(in.byte())
	}
	if how&2 == 0 {
		return st
	}
	extendFor := time.Duration(int8(in.byte())) * 10 * time.Millisecond
	return &wire.Extend{Queue: st.Queue, ID: st.ID, Lease: st.Lease, For: extendFor}
}

// collectDeliveries notes the deliveries sent so far, leaving them in
// place for checkReplies.
func (s *requestScript) collectDeliveries() {
	s.seen = s.seen[:0]
	for _, r := range s.c.replies {
		if d, ok := r.msg.(*wire.Delivery); ok {
			s.seen = append(s.seen, d)
		}
	}
}

// send gives req the next request ID and sends it, unless the node is
// down (a real client could not reach it).
func (s *requestScript) send(to node.NodeID, conn node.ConnID, req wire.Message) {
	id := s.next
	s.next++
	setReqID(req, id)
	s.ops = append(s.ops, fmt.Sprintf("req %d to %s on conn %d: %s", id, to, conn, wire.Describe(req)))
	if s.c.node(to).down {
		return
	}
	s.sent[id] = sentRequest{to: to, conn: conn, kind: req.Kind()}
	if m, ok := req.(*wire.Subscribe); ok {
		s.subs[subKey(to, conn, m.Queue)] = true
	}
	s.c.request(to, conn, req)
}

func setReqID(req wire.Message, id uint64) {
	switch m := req.(type) {
	case *wire.CreateQueue:
		m.ReqID = id
	case *wire.DeleteQueue:
		m.ReqID = id
	case *wire.Publish:
		m.ReqID = id
	case *wire.Subscribe:
		m.ReqID = id
	case *wire.Settle:
		m.ReqID = id
	case *wire.SetDetection:
		m.ReqID = id
	case *wire.Unsubscribe:
		m.ReqID = id
	case *wire.Extend:
		m.ReqID = id
	case *wire.Purge:
		m.ReqID = id
	case *wire.QueueInfo:
		m.ReqID = id
	default:
		panic(fmt.Sprintf("no request ID in %T", req))
	}
}

func subKey(to node.NodeID, conn node.ConnID, queue string) string {
	return fmt.Sprintf("%s/%d/%q", to, conn, queue)
}

// viewAll reads every running node's queue view and metadata leader, as
// the status page does; a panic there fails the input.
func (s *requestScript) viewAll() {
	for _, m := range s.c.nodes {
		if !m.down {
			m.n.Queues()
			m.n.MetaLeader()
		}
	}
}

// checkReplies judges every message the nodes sent to clients.
func (s *requestScript) checkReplies() {
	answers := map[uint64][]*wire.Reply{}
	for _, r := range s.c.replies {
		if err := roundTrips(r.msg); err != nil {
			s.fail("%s sent conn %d a malformed %s: %v", r.from, r.conn, wire.Describe(r.msg), err)
		}
		switch m := r.msg.(type) {
		case *wire.Reply:
			s.checkReply(r, m)
			answers[m.ReqID] = append(answers[m.ReqID], m)
		case *wire.Delivery:
			if !s.subs[subKey(r.from, r.conn, m.Queue)] {
				s.fail("%s delivered %s on conn %d, which did not subscribe to %q there", r.from, wire.Describe(m), r.conn, m.Queue)
			}
		default:
			s.fail("%s sent conn %d a %T, which is no client message", r.from, r.conn, r.msg)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(answers)) {
		s.checkAnswers(id, answers[id])
	}
}

// checkReply judges one reply on its own.
func (s *requestScript) checkReply(r clientReply, m *wire.Reply) {
	req, ok := s.sent[m.ReqID]
	switch {
	case !ok:
		s.fail("%s answered request %d, which was never sent: %s", r.from, m.ReqID, wire.Describe(m))
	case req.to != r.from || req.conn != r.conn:
		s.fail("request %d went to %s on conn %d, but %s answered it on conn %d", m.ReqID, req.to, req.conn, r.from, r.conn)
	case strings.HasPrefix(m.Status.String(), "status("):
		s.fail("request %d got an unknown status: %s", m.ReqID, wire.Describe(m))
	case m.Status == wire.StatusBadRequest && m.Detail == "":
		s.fail("request %d was refused as bad-request without a reason", m.ReqID)
	case m.Owner > 3:
		s.fail("request %d was redirected to a node outside the cluster: %s", m.ReqID, wire.Describe(m))
	}
}

// checkAnswers judges all the replies to one request: one, except that a
// subscription may later be ended by a second reply that is not OK.
func (s *requestScript) checkAnswers(id uint64, rs []*wire.Reply) {
	if len(rs) == 1 {
		return
	}
	ended := len(rs) == 2 && s.sent[id].kind == wire.KindSubscribe &&
		rs[0].Status == wire.StatusOK && rs[1].Status != wire.StatusOK
	if !ended {
		var all []string
		for _, r := range rs {
			all = append(all, wire.Describe(r))
		}
		s.fail("request %d got %d replies: %s", id, len(rs), strings.Join(all, ", "))
	}
}

// roundTrips checks that a client message encodes to a frame that
// decodes to the same message.
func roundTrips(m wire.Message) error {
	back, err := wire.Decode(wire.Encode(nil, m))
	if err != nil {
		return err
	}
	if d := cmp.Diff(m, back); d != "" {
		return fmt.Errorf("changed on the wire (-sent +decoded):\n%s", d)
	}
	return nil
}

func (s *requestScript) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nsetup: %s\nscript:\n  %s", fmt.Sprintf(format, args...), s.setup, strings.Join(s.ops, "\n  "))
}
