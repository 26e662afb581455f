package node_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// cluster is a hand-driven cluster (three nodes unless a story asks): messages, syncs and timers
// wait in queues until the test releases them, so a story can stage any
// interleaving it wants.
type cluster struct {
	t     *testing.T
	now   time.Time
	nodes []*member
	// inflight peer messages, client replies, pending syncs, timers.
	msgs    []envelope
	replies []clientReply
	syncs   []pendingSync
	timers  []timer
	// events is the cluster's log for failure messages: every event as
	// its emitter and trace rendering, and every halt. emitted holds the
	// same events for the stories to query.
	events  []string
	emitted []emission
	// cut holds nodes cut off from everyone: their messages vanish.
	cut map[node.NodeID]bool
	// cfg is every member's configuration but its ID.
	cfg node.Config
	// intercept, when set, sees every peer message about to be delivered
	// and may drop it by returning false.
	intercept func(from, to node.NodeID, msg wire.Message) bool
	// hold, when set, sees every pending sync about to be performed and
	// keeps it pending by returning true.
	hold func(pendingSync) bool
}

type member struct {
	c    *cluster
	id   node.NodeID
	fs   *vfs.MemFS
	n    *node.Node
	inc  int
	down bool
	// rejoin starts the node with Config.Rejoin set.
	rejoin bool
	// join starts the node as one joining a running cluster: Config.Join
	// set and only itself in its node list.
	join bool
	// tweak, when set, edits this node's configuration at each start.
	tweak func(*node.Config)
	// fault, when set, may fail any file system operation of this node
	// (the disk's own contents are untouched).
	fault errorfs.Injector
	// slow, when set, makes this node's monotonic clock run slower than
	// the cluster's time, which its timers follow (setSlow).
	slow *slowClock
}

// slowClock is a monotonic clock that runs at rate of the cluster's time
// since from, where it read base.
type slowClock struct {
	from time.Time
	base time.Duration
	rate float64
}

// setSlow makes m's monotonic clock run at rate of the cluster's time
// from now on, going on from what it reads now: a timer set for a span
// measured on that clock fires before the clock has moved by the span.
func (m *member) setSlow(rate float64) {
	base := (&testEnv{m: m}).Monotonic()
	m.slow = &slowClock{from: m.c.now, base: base, rate: rate}
}

type envelope struct {
	from, to node.NodeID
	inc      int // the receiver's incarnation when sent
	frame    []byte
}

type clientReply struct {
	from node.NodeID
	conn node.ConnID
	msg  wire.Message
}

type pendingSync struct {
	m   *member
	inc int
	f   vfs.File
	tok node.SyncToken
}

type timer struct {
	m   *member
	inc int
	at  time.Time
	t   node.Timer
}

// halted unwinds a node that called Halt.
type halted struct{ reason string }

func newCluster(t *testing.T) *cluster {
	return newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096})
}

// newClusterOf starts a cluster of cfg.Nodes, each with cfg and its ID.
func newClusterOf(t *testing.T, cfg node.Config) *cluster {
	c := &cluster{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), cut: map[node.NodeID]bool{}, cfg: cfg}
	for i := 1; i <= len(cfg.Nodes); i++ {
		m := &member{c: c, id: node.NodeID(i), fs: vfs.NewCrashableMem()}
		c.nodes = append(c.nodes, m)
	}
	for _, m := range c.nodes {
		m.start()
	}
	c.advance(2 * time.Second) // long enough to elect a metadata leader
	return c
}

func (m *member) start() {
	m.inc++
	m.down = false
	cfg := m.c.cfg
	cfg.ID = m.id
	cfg.Rejoin = m.rejoin
	if m.join {
		cfg.Join, cfg.Nodes = true, []node.NodeID{m.id}
	}
	if m.tweak != nil {
		m.tweak(&cfg)
	}
	m.n = node.New(cfg, &testEnv{m: m, inc: m.inc})
	m.run(m.n.Start)
}

// run calls into the node, turning Halt into a crash.
func (m *member) run(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			h, ok := r.(halted)
			if !ok {
				panic(r)
			}
			m.c.events = append(m.c.events, fmt.Sprintf("%s halted: %s", m.id, h.reason))
			m.crash()
		}
	}()
	fn()
}

// crash keeps only what m's disk synced, and takes m down.
func (m *member) crash() {
	m.fs = m.fs.CrashClone(vfs.CrashCloneCfg{})
	m.down = true
	m.inc++
}

func (c *cluster) node(id node.NodeID) *member { return c.nodes[id-1] }

// resetPeers tells every other running member that its connection to id
// reset, as a real restart of id does: a resting owner learns from it
// that a follower restarted (it would otherwise wait for its next seldom
// heartbeat's answer), which the stories that restart nodes by hand
// model with this.
func (c *cluster) resetPeers(id node.NodeID) {
	for _, m := range c.nodes {
		if m.id != id && !m.down {
			m.run(func() { m.n.OnDisconnect(id) })
		}
	}
}

// testEnv implements node.Env for one incarnation of a member.
type testEnv struct {
	m   *member
	inc int
	rng *rand.Rand
}

func (e *testEnv) Now() time.Time { return e.m.c.now }
func (e *testEnv) Monotonic() time.Duration {
	if s := e.m.slow; s != nil {
		return s.base + time.Duration(float64(e.m.c.now.Sub(s.from))*s.rate)
	}
	return e.m.c.now.Sub(time.Unix(0, 0))
}
func (e *testEnv) After(d time.Duration, t node.Timer) {
	e.m.c.timers = append(e.m.c.timers, timer{e.m, e.inc, e.m.c.now.Add(d), t})
}
func (e *testEnv) Send(to node.NodeID, msg wire.Message) {
	e.m.c.msgs = append(e.m.c.msgs, envelope{e.m.id, to, e.m.c.node(to).inc, wire.Encode(nil, msg)})
}
func (e *testEnv) Reply(conn node.ConnID, msg wire.Message) {
	e.m.c.replies = append(e.m.c.replies, clientReply{e.m.id, conn, msg})
}
func (e *testEnv) FS() vfs.FS {
	if e.m.fault != nil {
		return errorfs.Wrap(e.m.fs, e.m.fault)
	}
	return e.m.fs
}
func (e *testEnv) Sync(f vfs.File, tok node.SyncToken) {
	e.m.c.syncs = append(e.m.c.syncs, pendingSync{e.m, e.inc, f, tok})
}
func (e *testEnv) Rand() *rand.Rand {
	if e.rng == nil {
		e.rng = rand.New(rand.NewPCG(uint64(e.m.id), uint64(e.inc)))
	}
	return e.rng
}
func (e *testEnv) Boundary(string) {}
func (e *testEnv) Emit(ev event.Event) {
	e.m.c.events = append(e.m.c.events, fmt.Sprintf("%s %s", e.m.id, ev))
	e.m.c.emitted = append(e.m.c.emitted, emission{e.m.id, ev, e.m.c.now})
}
func (e *testEnv) Halt(reason string) { panic(halted{reason}) }

// deliver hands over the in-flight peer messages that match, in order.
func (c *cluster) deliver(match func(envelope) bool) int {
	n := 0
	for i := 0; i < len(c.msgs); {
		e := c.msgs[i]
		if !match(e) {
			i++
			continue
		}
		if i == 0 {
			c.msgs = c.msgs[1:] // the common case, without moving the rest down
		} else {
			c.msgs = slices.Delete(c.msgs, i, i+1)
		}
		to := c.node(e.to)
		if to.down || to.inc != e.inc || c.cut[e.from] || c.cut[e.to] {
			continue
		}
		msg, err := wire.Decode(e.frame)
		if err != nil {
			c.t.Fatalf("frame from %s does not decode: %v", e.from, err)
		}
		if c.intercept != nil && !c.intercept(e.from, e.to, msg) {
			continue
		}
		to.run(func() { to.n.OnMessage(e.from, msg) })
		n++
	}
	return n
}

// completeSyncs performs and reports the pending syncs of the members
// that match.
func (c *cluster) completeSyncs(match func(*member) bool) int {
	n := 0
	for i := 0; i < len(c.syncs); {
		s := c.syncs[i]
		if !match(s.m) || c.hold != nil && c.hold(s) {
			i++
			continue
		}
		c.syncs = slices.Delete(c.syncs, i, i+1)
		if s.m.down || s.m.inc != s.inc {
			continue
		}
		err := s.f.Sync()
		s.m.run(func() { s.m.n.OnSynced(s.tok, err) })
		n++
	}
	return n
}

func all[T any](T) bool { return true }

// settle delivers messages and completes syncs until nothing moves.
func (c *cluster) settle() {
	for i := 0; ; i++ {
		if i > 10000 {
			c.t.Fatal("the cluster does not settle")
		}
		if c.deliver(all[envelope])+c.completeSyncs(all[*member])+c.fireDue() == 0 {
			return
		}
	}
}

// fireDue fires the timers already due, as an environment fires a timer
// armed with no delay (the owners' end of turn, a rebuild's next step)
// without waiting for time to pass. It returns how many fired.
func (c *cluster) fireDue() int {
	fired := 0
	for {
		i := slices.IndexFunc(c.timers, func(t timer) bool { return !t.at.After(c.now) })
		if i < 0 {
			return fired
		}
		tm := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		if !tm.m.down && tm.m.inc == tm.inc {
			tm.m.run(func() { tm.m.n.OnTimer(tm.t) })
			fired++
		}
	}
}

// advance moves the clock, firing due timers in order, settling after
// each.
func (c *cluster) advance(d time.Duration) {
	end := c.now.Add(d)
	for {
		slices.SortStableFunc(c.timers, func(a, b timer) int { return a.at.Compare(b.at) })
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			break
		}
		tm := c.timers[0]
		c.timers = c.timers[1:]
		c.now = tm.at
		if !tm.m.down && tm.m.inc == tm.inc {
			tm.m.run(func() { tm.m.n.OnTimer(tm.t) })
			c.settle()
		}
	}
	c.now = end
}

// request sends a client request to a node, alone in its turn; the
// replies it produced wait in the client reply queue.
func (c *cluster) request(to node.NodeID, conn node.ConnID, req wire.Message) {
	c.requestTurn(to, conn, req)
}

// requestTurn sends several client requests to a node in one turn: all
// of them arrive before the node's end-of-turn timer fires, as requests
// queued behind each other do, and then it fires.
func (c *cluster) requestTurn(to node.NodeID, conn node.ConnID, reqs ...wire.Message) {
	m := c.node(to)
	for _, req := range reqs {
		m.run(func() { m.n.OnClient(conn, req) })
	}
	c.fireDue()
}

// reply takes the reply to reqID from the client reply queue.
func (c *cluster) reply(reqID uint64) *wire.Reply {
	for i, r := range c.replies {
		if rep, ok := r.msg.(*wire.Reply); ok && rep.ReqID == reqID {
			if i == 0 {
				// Replies are mostly taken in the order they came: moving
				// the rest down for each made a story of 40,000 publishes
				// spend nearly all its time copying.
				c.replies = c.replies[1:]
			} else {
				c.replies = slices.Delete(c.replies, i, i+1)
			}
			return rep
		}
	}
	return nil
}

// deliveries takes every delivery sent to conn.
func (c *cluster) deliveries(conn node.ConnID) []*wire.Delivery {
	var out []*wire.Delivery
	kept := c.replies[:0]
	for _, r := range c.replies {
		if d, ok := r.msg.(*wire.Delivery); ok && r.conn == conn {
			out = append(out, d)
			continue
		}
		kept = append(kept, r)
	}
	c.replies = kept
	return out
}

// leader returns the node that most recently announced metadata
// leadership.
func (c *cluster) leader() node.NodeID {
	if e, ok := c.last(event.MetaLeader); ok {
		return e.node
	}
	c.t.Fatal("no metadata leader was ever elected")
	return 0
}

// othersThan lists the founding members other than id, in ID order.
func othersThan(id node.NodeID) []node.NodeID {
	var out []node.NodeID
	for _, m := range []node.NodeID{1, 2, 3} {
		if m != id {
			out = append(out, m)
		}
	}
	return out
}

// leaderships counts announcements of metadata leadership.
func (c *cluster) leaderships() int {
	n := 0
	for _, e := range c.emitted {
		if e.Name == event.MetaLeader {
			n++
		}
	}
	return n
}

// emission is one event and the node that emitted it.
type emission struct {
	node node.NodeID
	event.Event
	at time.Time // the cluster's clock when it was emitted
}

// saw reports whether a node emitted an event named name that meets
// every condition.
func (c *cluster) saw(name event.Name, conds ...func(emission) bool) bool {
	return c.count(name, conds...) > 0
}

// count is how many events named name that meet every condition the
// nodes emitted.
func (c *cluster) count(name event.Name, conds ...func(emission) bool) int {
	n := 0
	for _, e := range c.emitted {
		if e.Name == name && !slices.ContainsFunc(conds, func(ok func(emission) bool) bool { return !ok(e) }) {
			n++
		}
	}
	return n
}

// last returns the latest event named name.
func (c *cluster) last(name event.Name) (emission, bool) {
	for i := len(c.emitted) - 1; i >= 0; i-- {
		if c.emitted[i].Name == name {
			return c.emitted[i], true
		}
	}
	return emission{}, false
}

// The conditions of saw.

func onQueue(q string) func(emission) bool  { return func(e emission) bool { return e.Queue() == q } }
func inEpoch(n uint64) func(emission) bool  { return func(e emission) bool { return e.Epoch() == n } }
func by(id node.NodeID) func(emission) bool { return func(e emission) bool { return e.node == id } }

// sealedOK holds for a recovery.stage event of a seal that went well.
func sealedOK(e emission) bool { return e.Stage() == "seal" && e.Outcome() == "ok" }

// logged reports whether a line of the cluster's log holds substr; the
// stories use it for halts, which are no events.
func (c *cluster) logged(substr string) bool {
	return slices.ContainsFunc(c.events, func(e string) bool { return strings.Contains(e, substr) })
}

var vfsCfg = vfs.CrashCloneCfg{}
