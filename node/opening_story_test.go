package node_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A new queue's first owner opens its epoch while the metadata still
// holds its node down: it crashed and restarted, and the leader has not
// heard it since. The leader plans the queue's failover at its next pass,
// without waiting for any silence, and the candidate recovers the queue
// at epoch 2, sealing a follower that had accepted the opening marker.
// That follower's acceptance, sent before the seal, reaches the opening
// owner only after epoch 2 activated, well within the silence limit of
// the stamp it echoes. The opening owner must not serve epoch 1 on it (seed
// 60892 of the long sweep, epochs checker: epoch 1 activated after epoch
// 2); it waits, and once it hears from its peers again it follows the
// owner of epoch 2.
func TestAnOpeningOwnerHeldDownDoesNotActivateOnALateAcceptance(t *testing.T) {
	c := newCluster(t)
	x, followers := roles("orders")
	c.node(x).crash()
	c.advance(2 * time.Second)
	if !c.saw(event.MetaNodeDown, func(e emission) bool { return node.NodeID(e.Node()) == x }) {
		t.Fatalf("the metadata never held the crashed %s down; events:\n%v", x, c.events)
	}

	// x restarts, but no ping reaches it or comes back from it, so the
	// leader keeps it down. Once it has sent its opening marker it hears
	// nothing more: its metadata stays as it was when it opened. The
	// followers' answers to its appends are held back.
	var late []*wire.AppendReply
	var lateFrom []node.NodeID
	opened := false
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		switch m := m.(type) {
		case *wire.Ping, *wire.Pong:
			return from != x && to != x
		case *wire.Append:
			opened = opened || from == x && m.Epoch == 1
		case *wire.AppendReply:
			if to == x {
				late, lateFrom = append(late, m), append(lateFrom, from)
				return false
			}
		}
		return to != x || !opened
	}
	c.node(x).start()
	c.advance(time.Second)
	c.request(followers[0], 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	recovered := func() bool { return c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) }
	for range 100 {
		if recovered() {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if !opened || !recovered() {
		t.Fatalf("%s did not open epoch 1, or no candidate recovered epoch 2; events:\n%v", x, c.events)
	}
	xm := c.node(x)
	if i := slices.IndexFunc(xm.n.Members(), func(m wire.MemberInfo) bool { return node.NodeID(m.ID) == x }); i < 0 || !xm.n.Members()[i].Down {
		t.Fatalf("%s's metadata does not hold it down; the story needs it to", x)
	}

	// The last acceptance of the marker, from before the seal, arrives
	// now. A quorum holds the marker, and the stamp it echoes is fresh.
	last := -1
	for i, r := range late {
		if r.OK && r.Epoch == 1 && r.Durable >= 1 {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("no follower accepted %s's opening marker; events:\n%v", x, c.events)
	}
	xm.run(func() { xm.n.OnMessage(lateFrom[last], late[last]) })
	c.fireDue()
	if c.saw(event.QueueActive, onQueue("orders"), inEpoch(1), by(x)) {
		t.Fatalf("%s activated epoch 1 after epoch 2 activated, on an acceptance from before the seal; events:\n%v", x, c.events)
	}
	if v := viewOf(t, xm.n, "orders"); v.Role == "owner" {
		t.Fatalf("%s serves the queue: %+v", x, v)
	}

	// Heard again, x follows the owner of epoch 2 and sends clients there.
	c.intercept = nil
	c.advance(time.Second)
	newOwner := recoveredOwner(t, c)
	if c.saw(event.QueueActive, onQueue("orders"), inEpoch(1), by(x)) {
		t.Fatalf("%s activated epoch 1 after epoch 2 activated; events:\n%v", x, c.events)
	}
	c.request(x, 1, &wire.Publish{ReqID: 1, Queue: "orders", ID: msgID(1)})
	if r := c.mustReply(1, wire.StatusNotOwner); node.NodeID(r.Owner) != newOwner {
		t.Fatalf("%s redirects to %d, want the owner of epoch 2, %s", x, r.Owner, newOwner)
	}
	c.request(newOwner, 1, &wire.Publish{ReqID: 2, Queue: "orders", ID: msgID(2)})
	c.settle()
	c.mustReply(2, wire.StatusOK)
}

// The owner of an owner-only queue restarts. The metadata gives its new
// process epoch 2 at once (the queue stays active: there is no other
// history to prove its own against), and the owner starts making epoch 2
// durable, but its disk is slow. Meanwhile an operator removes one of the
// queue's followers: the leader plans a replacement that keeps the owner
// and moves the queue to epoch 3, and the owner claims that epoch and
// starts its recovery. When the slow write of epoch 2 finally lands, the
// plain activation it was for is gone: the owner must not open it now,
// in the recovery's epoch, and so serve as soon as a quorum holds a
// marker there, before the metadata activated epoch 3 (seed 209194 of
// the long sweep found this with a new queue's first epoch, which a
// replica now records when it is prepared). It serves once the recovery
// is activated, and every message published then is delivered.
func TestAPlainActivationStillWritingItsEpochGivesWayToARecovery(t *testing.T) {
	c, owner, out := ownerOnlyOrdersOnFour(t)

	// The owner restarts; its state file writes stall from then on.
	om := c.node(owner)
	om.crash()
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == owner && err == nil && st.Name() == "replica.tmp"
	}
	om.start()
	bumped := func() bool {
		for _, v := range om.n.Queues() {
			if v.Name == "orders" {
				return v.Epoch == 2
			}
		}
		return false
	}
	for range 100 {
		if bumped() {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if !bumped() || c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) {
		t.Fatalf("want %s to hold epoch 2 in its metadata and still be writing it; events:\n%v", owner, c.events)
	}

	c.request(c.leader(), 9, &wire.RemoveNode{ReqID: 72, Node: uint32(out)})
	for range 100 {
		if c.saw(event.RecoveryStart, onQueue("orders"), inEpoch(3), by(owner)) {
			break
		}
		c.advance(10 * time.Millisecond)
	}
	if !c.saw(event.RecoveryStart, onQueue("orders"), inEpoch(3), by(owner)) {
		t.Fatalf("%s never started recovering epoch 3 while writing epoch 2; events:\n%v", owner, c.events)
	}

	// The write of epoch 2 lands, and the recovery goes on.
	c.hold = nil
	c.advance(2 * time.Second)
	if c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) {
		t.Fatalf("%s opened epoch 2 after the recovery into epoch 3 began; events:\n%v", owner, c.events)
	}
	active := slices.IndexFunc(c.emitted, func(e emission) bool {
		return e.Name == event.QueueActive && e.Queue() == "orders" && e.Epoch() == 3 && e.node == owner
	})
	approved := slices.IndexFunc(c.emitted, func(e emission) bool {
		return e.Name == event.MetaRecoveryActivated && e.Queue() == "orders" && e.Epoch() == 3
	})
	if active < 0 || approved < 0 {
		t.Fatalf("epoch 3 was never activated and served (served at %d, activated at %d); events:\n%v", active, approved, c.events)
	}
	if active < approved {
		t.Fatalf("%s served epoch 3 before the metadata activated it; events:\n%v", owner, c.events)
	}
	if !c.saw(event.RecoveryDone, onQueue("orders"), inEpoch(3), by(owner)) {
		t.Fatalf("%s served epoch 3 without finishing its recovery; events:\n%v", owner, c.events)
	}
	c.publishConfirmed(owner, "orders", 3)
	c.mustDeliverAll(owner, "orders", 3, "after the recovery into epoch 3")
}

// A new queue's replicas record its first epoch with their identity, so
// its owner opens epoch 1 without a write of its own: each replica writes
// its state file once while the queue is created, not twice. That write
// syncs the replica's directory after the log directory was made in it,
// so the log's first sync leaves the replica's directory alone: each
// replica syncs its own directory once, its log directory once, and the
// queues directory once.
func TestANewQueuesReplicasWriteTheirStateOnce(t *testing.T) {
	c := newCluster(t)
	type count struct{ state, replicaDir, logDir, queuesDir int }
	syncs := map[node.NodeID]*count{1: {}, 2: {}, 3: {}}
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		n := syncs[s.m.id]
		switch name := st.Name(); {
		case name == "replica.tmp":
			n.state++
		case strings.HasPrefix(name, "orders."):
			n.replicaDir++
		case name == "log":
			n.logDir++
		case name == "queues":
			n.queuesDir++
		}
		return false
	}
	c.createQueue("orders", wire.PolicyMajority)
	for _, id := range []node.NodeID{1, 2, 3} {
		if got, want := *syncs[id], (count{1, 1, 1, 1}); got != want {
			t.Errorf("%s's syncs while the queue was created: %+v, want %+v", id, got, want)
		}
	}
	owner, _ := roles("orders")
	if !c.saw(event.QueueActive, onQueue("orders"), inEpoch(1), by(owner)) {
		t.Fatalf("%s never opened epoch 1; events:\n%v", owner, c.events)
	}
}

// A follower crashes while it prepares a new queue: its directory is
// made, its identity not yet written. It comes back while the queue is
// still being created and finishes the preparation. It never reported
// anything to anyone, and the queue has no history, so it is not suspect:
// a seal it takes part in needs no extra witness because of it.
func TestAFollowerThatFinishesAnInterruptedPreparationOfANewQueueIsNotSuspect(t *testing.T) {
	c := newCluster(t)
	_, followers := roles("orders")
	f1, f2 := followers[0], followers[1]
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return err == nil && st.Name() == "replica.tmp" && (s.m.id == f1 || s.m.id == f2)
	}
	owner, _ := roles("orders")
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(300 * time.Millisecond)
	if c.saw(event.MetaActivated, onQueue("orders")) {
		t.Fatalf("the queue activated with both followers' identity writes held; events:\n%v", c.events)
	}
	m := c.node(f1)
	m.crash()
	m.start()
	c.advance(200 * time.Millisecond)
	// An owner's verification would clear a suspect replica later on:
	// look before the queue is active.
	if v := viewOf(t, m.n, "orders"); v.Suspect {
		t.Fatalf("%s is suspect as it finishes its interrupted preparation of a new queue: %+v", f1, v)
	}
	c.hold = nil
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
}

// ownerOnlyOrdersOnFour makes a four-node cluster with an owner-only
// queue "orders" on three of them, and returns its owner and the follower
// an operator will remove (one that does not lead the metadata).
func ownerOnlyOrdersOnFour(t *testing.T) (c *cluster, owner, out node.NodeID) {
	nodes := []node.NodeID{1, 2, 3, 4}
	c = newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096})
	set := node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet("orders")
	owner, out = set[0], set[1]
	if out == c.leader() {
		out = set[2]
	}
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyOwnerOnly})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	return c, owner, out
}

// As above, but the slow write of epoch 2 lands in the moment after the
// owner applied the replacement's plan and asked for epoch 3, before the
// metadata gave it that epoch: the owner has no recovery yet and its
// replica is still at epoch 2, so only the metadata says the plain
// activation is gone (it is at epoch 3 now, recovering). The owner must
// not open epoch 2 then: it would serve the queue in an epoch the plan
// has left, beside a recovery about to seal its replicas.
func TestAPlainActivationLandingWhileItsOwnerClaimsARecoveryGivesWay(t *testing.T) {
	c, owner, out := ownerOnlyOrdersOnFour(t)

	// The owner restarts; its state file writes stall until it claims
	// epoch 3.
	om := c.node(owner)
	om.crash()
	claimed := func() bool { return c.saw(event.QueueClaim, onQueue("orders"), inEpoch(3), by(owner)) }
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == owner && err == nil && st.Name() == "replica.tmp" && !claimed()
	}
	om.start()
	c.advance(500 * time.Millisecond)
	if c.saw(event.QueueActive, onQueue("orders"), inEpoch(2)) {
		t.Fatalf("want %s still writing epoch 2; events:\n%v", owner, c.events)
	}

	c.request(c.leader(), 9, &wire.RemoveNode{ReqID: 72, Node: uint32(out)})
	c.advance(2 * time.Second)
	if !claimed() {
		t.Fatalf("%s never claimed epoch 3; events:\n%v", owner, c.events)
	}
	if c.saw(event.QueueActive, onQueue("orders"), inEpoch(2), by(owner)) {
		t.Fatalf("%s opened epoch 2 after the plan for epoch 3 reached it; events:\n%v", owner, c.events)
	}
	if !c.saw(event.QueueActive, onQueue("orders"), inEpoch(3), by(owner)) {
		t.Fatalf("%s never served epoch 3; events:\n%v", owner, c.events)
	}
	c.publishConfirmed(owner, "orders", 3)
	c.mustDeliverAll(owner, "orders", 3, "after the recovery into epoch 3")
}
