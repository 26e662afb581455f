package node_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// An operator moves a queue to another replica while its owner serves.
// The owner first lets its consumer finish what it holds, then parks the
// publish that arrives while it closes, and proposes the next owner once
// everything it appended is confirmed. The next owner recovers the queue
// and delivers what was left, and nothing a consumer acked goes out
// again.
func TestAHandoffDrainsTheOwnerAndMovesTheQueue(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	next := followers[0]
	c.publishConfirmed(owner, "orders", 3)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 2, Lease: time.Minute})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	held := c.deliveries(5)
	if len(held) != 2 {
		t.Fatalf("the consumer got %d deliveries, want its window of 2", len(held))
	}

	// The handoff waits for the consumer: two deliveries are out.
	c.request(owner, 9, &wire.MoveOwner{ReqID: 40, Queue: "orders", To: uint32(next), DrainFor: time.Minute})
	c.advance(200 * time.Millisecond)
	c.noReply(40)
	if c.saw(event.QueueHandoffProposed) {
		t.Fatal("the owner proposed the next owner while its consumer held two deliveries")
	}
	// Meanwhile publishes are still taken, and confirmed.
	c.request(owner, 6, &wire.Publish{ReqID: 41, Queue: "orders", ID: msgID(4), Payload: []byte("during the drain")})
	c.settle()
	c.mustReply(41, wire.StatusOK)
	if got := c.deliveries(5); len(got) != 0 {
		t.Fatalf("a draining owner handed out %v", got)
	}

	// The consumer acks both. The acks are written; before they are
	// confirmed, a publish arrives and is parked.
	c.request(owner, 5, &wire.Settle{ReqID: 42, Queue: "orders", ID: held[0].ID, Lease: held[0].Lease})
	c.request(owner, 5, &wire.Settle{ReqID: 43, Queue: "orders", ID: held[1].ID, Lease: held[1].Lease})
	c.request(owner, 6, &wire.Publish{ReqID: 44, Queue: "orders", ID: msgID(5), Payload: []byte("while closing")})
	c.noReply(44)
	c.settle()

	// The metadata names the next owner: the request is answered, and the
	// parked publish is sent there.
	if r := c.mustReply(40, wire.StatusOK); r.Owner != uint32(next) {
		t.Fatalf("the handoff was answered naming %d, want %s", r.Owner, next)
	}
	if r := c.mustReply(44, wire.StatusNotOwner); r.Owner != uint32(next) {
		t.Fatalf("the parked publish was sent to %d, want %s", r.Owner, next)
	}
	proposed, _ := c.last(event.QueueHandoffProposed)
	if proposed.Leases() != 0 || proposed.node != owner {
		t.Fatalf("the handoff was proposed by %s with %d leases out, want %s with none", proposed.node, proposed.Leases(), owner)
	}

	// The next owner recovers the queue, takes the publish and delivers
	// what was not acked: the third and fourth messages, then the fifth.
	c.advance(500 * time.Millisecond)
	if !c.saw(event.QueueActive, onQueue("orders"), inEpoch(2), by(next)) {
		t.Fatalf("%s did not serve the queue in epoch 2; events:\n%v", next, c.events)
	}
	// The plan named the process the target's checkpoint receipt gave,
	// so the target recovered without first claiming the epoch.
	if c.saw(event.QueueClaim, onQueue("orders"), by(next)) {
		t.Fatalf("%s claimed its epoch though the plan named its process; events:\n%v", next, c.events)
	}
	// The old owner stepped down when the metadata named the next one,
	// and said so when sealed: the next owner held nothing back.
	if c.saw(event.QueueHoldEnded, by(next)) {
		t.Fatal("the next owner held the history back though its old owner had released it")
	}
	c.request(next, 6, &wire.Publish{ReqID: 45, Queue: "orders", ID: msgID(5), Payload: []byte("while closing")})
	c.request(next, 7, &wire.Subscribe{ReqID: 46, Queue: "orders", Window: 10, Lease: time.Minute})
	c.advance(200 * time.Millisecond)
	c.mustReply(45, wire.StatusOK)
	var ids []wire.MessageID
	for _, d := range c.deliveries(7) {
		ids = append(ids, d.ID)
	}
	if want := []wire.MessageID{msgID(3), msgID(4), msgID(5)}; !slices.Equal(ids, want) {
		t.Fatalf("the next owner delivered %v, want %v", ids, want)
	}
	// A second request to move the queue to where it is now is done.
	c.request(next, 9, &wire.MoveOwner{ReqID: 47, Queue: "orders", To: uint32(next)})
	c.settle()
	c.mustReply(47, wire.StatusOK)
}

// A consumer that holds its deliveries past the drain bound does not
// stop the handoff: the owner proposes the next owner with the lease
// still out, and the next owner delivers the message again, as it would
// after a failover.
func TestAHandoffGivesUpOnAConsumerAfterTheDrainBound(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	next := followers[1]
	c.publishConfirmed(owner, "orders", 1)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	if got := c.deliveries(5); len(got) != 1 {
		t.Fatalf("the consumer got %d deliveries, want 1", len(got))
	}
	c.request(owner, 9, &wire.MoveOwner{ReqID: 40, Queue: "orders", To: uint32(next), DrainFor: 100 * time.Millisecond})
	c.advance(50 * time.Millisecond)
	c.noReply(40)
	c.advance(100 * time.Millisecond)
	c.mustReply(40, wire.StatusOK)
	proposed, _ := c.last(event.QueueHandoffProposed)
	if proposed.Leases() != 1 {
		t.Fatalf("the handoff was proposed with %d leases out, want the 1 the consumer kept", proposed.Leases())
	}
	c.advance(500 * time.Millisecond)
	c.request(next, 7, &wire.Subscribe{ReqID: 46, Queue: "orders", Window: 10, Lease: time.Minute})
	c.advance(200 * time.Millisecond)
	if got := c.deliveries(7); len(got) != 1 || got[0].ID != msgID(1) {
		t.Fatalf("the next owner delivered %v, want the message the old consumer kept", got)
	}
}

// A handoff is refused plainly when it cannot be done, and the owner
// serves on.
func TestAHandoffThatCannotBeDoneIsRefused(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	cases := []struct {
		name string
		to   node.NodeID
		m    *wire.MoveOwner
		want wire.Status
	}{
		{"a node outside the replica set", owner, &wire.MoveOwner{ReqID: 50, Queue: "orders", To: 9}, wire.StatusBadRequest},
		{"a negative drain", owner, &wire.MoveOwner{ReqID: 51, Queue: "orders", To: uint32(followers[0]), DrainFor: -time.Second}, wire.StatusBadRequest},
		{"a node that does not own the queue", followers[0], &wire.MoveOwner{ReqID: 52, Queue: "orders", To: uint32(followers[1])}, wire.StatusNotOwner},
		{"a queue that does not exist", owner, &wire.MoveOwner{ReqID: 53, Queue: "nothing", To: uint32(followers[0])}, wire.StatusNoQueue},
		{"the owner itself", owner, &wire.MoveOwner{ReqID: 54, Queue: "orders", To: uint32(owner)}, wire.StatusOK},
	}
	for _, tc := range cases {
		c.request(tc.to, 9, tc.m)
		c.settle()
		if r := c.reply(tc.m.ReqID); r == nil || r.Status != tc.want {
			t.Errorf("%s: got %+v, want status %s", tc.name, r, tc.want)
		}
	}
	if c.saw(event.QueueHandoffStarted) {
		t.Fatal("a refused handoff started")
	}
	c.publishConfirmed(owner, "orders", 1)
}

// A node about to shut down hands every queue it owns to another replica
// and is left owning none; the queues go on serving elsewhere.
func TestANodeDrainsTheQueuesItOwns(t *testing.T) {
	c := newCluster(t)
	owner, _ := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 2)
	m := c.node(owner)
	started := 0
	m.run(func() { started = m.n.DrainOwned(0) })
	if started != 1 {
		t.Fatalf("the drain started %d handoffs, want 1", started)
	}
	c.advance(500 * time.Millisecond)
	if got := m.n.Owned(); got != 0 {
		t.Fatalf("after the drain %s still owns %d queues", owner, got)
	}
	e, ok := c.last(event.QueueActive)
	if !ok || e.node == owner || e.Epoch() != 2 {
		t.Fatalf("the queue was not served elsewhere in epoch 2; events:\n%v", c.events)
	}
	c.request(e.node, 7, &wire.Subscribe{ReqID: 46, Queue: "orders", Window: 10, Lease: time.Minute})
	c.advance(200 * time.Millisecond)
	if got := c.deliveries(7); len(got) != 2 {
		t.Fatalf("the new owner delivered %d messages, want the 2 published", len(got))
	}
}

// createOwnedByOne creates count majority queues that one node owns, and
// returns their names and that node.
func createOwnedByOne(c *cluster, count int) ([]string, node.NodeID) {
	var names []string
	owner := node.NodeID(0)
	for i := 0; len(names) < count; i++ {
		name := fmt.Sprintf("q%d", i)
		if o, _ := roles(name); owner == 0 || o == owner {
			owner = o
			names = append(names, name)
		}
	}
	for _, name := range names {
		c.createQueue(name, wire.PolicyMajority)
	}
	return names, owner
}

// A node that drains many queues spreads them over its peers: each queue
// goes to the peer that owns fewest counting the ones handed to it so
// far, so neither peer takes them all.
func TestANodeDrainingManyQueuesSpreadsThemOverItsPeers(t *testing.T) {
	c := newCluster(t)
	names, owner := createOwnedByOne(c, 6)
	m := c.node(owner)
	m.run(func() { m.n.DrainOwned(0) })
	// (A draining leader first hands its leadership away.)
	c.advance(200 * time.Millisecond)
	to := map[node.NodeID]int{}
	for _, e := range c.emitted {
		if e.Name == event.QueueHandoffStarted && e.node == owner {
			to[node.NodeID(e.Next())]++
		}
	}
	if len(to) != 2 || to[owner] != 0 {
		t.Fatalf("the %d handoffs went to %v, want both peers", len(names), to)
	}
	for id, count := range to {
		if count != len(names)/2 {
			t.Fatalf("the %d handoffs went to %v: %s took %d, want half", len(names), to, id, count)
		}
	}
	c.advance(time.Second)
	if got := m.n.Owned(); got != 0 {
		t.Fatalf("after the drain %s still owns %d queues", owner, got)
	}
}

// A node that drains more queues than it may checkpoint first hands them
// off without asking for checkpoints: thousands of builds at once made a
// stopping node too slow to answer pings. The queues still move.
func TestALargeDrainSkipsTheCheckpointFirst(t *testing.T) {
	c := newCluster(t)
	names, owner := createOwnedByOne(c, node.DrainCheckpointMax+1)
	m := c.node(owner)
	mark := len(c.emitted)
	m.run(func() { m.n.DrainOwned(0) })
	c.advance(2 * time.Second)
	for _, e := range c.emitted[mark:] {
		if e.Name == event.CheckpointProposed && e.node == owner {
			t.Fatalf("a drain of %d queues asked for a checkpoint of %s first", len(names), e.Queue())
		}
	}
	if got := m.n.Owned(); got != 0 {
		t.Fatalf("after the drain %s still owns %d of %d queues", owner, got, len(names))
	}
}

// A node that drains more queues than it may hand off at once starts
// the first ones, then one more each time one ends, and never has more
// under way than its bound: thousands at once held its event loop and
// its peers' disks for seconds. Every queue still moves.
func TestADrainRunsABoundedNumberOfHandoffsAtOnce(t *testing.T) {
	c := newCluster(t)
	names, owner := createOwnedByOne(c, 2*node.DrainHandoffsMax+5)
	m := c.node(owner)
	mark := len(c.emitted)
	m.run(func() { m.n.DrainOwned(0) })
	c.advance(3 * time.Second)
	underWay, most, started := 0, 0, 0
	for _, e := range c.emitted[mark:] {
		switch {
		case e.node != owner:
		case e.Name == event.QueueHandoffStarted:
			underWay, started = underWay+1, started+1
			most = max(most, underWay)
		case e.Name == event.QueueOwnerStopped, e.Name == event.QueueHandoffAborted:
			underWay--
		}
	}
	if most != node.DrainHandoffsMax || started < len(names) {
		t.Fatalf("the drain started %d handoffs of %d queues, at most %d at once; want every queue, at most %d at once",
			started, len(names), most, node.DrainHandoffsMax)
	}
	if got := m.n.Owned(); got != 0 {
		t.Fatalf("after the drain %s still owns %d of %d queues", owner, got, len(names))
	}
	if got := m.n.HandedOff(); got != len(names) {
		t.Fatalf("the drain says it handed off %d queues, want the %d it moved", got, len(names))
	}
}

// A metadata leader that drains its queues before it stops hands the
// leadership to another voter first: its stop then costs the group no
// election, and a leader busy with its own handoffs is not the one to
// judge its peers' liveness. Its queues move once another leads.
func TestADrainingLeaderHandsTheLeadershipAway(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	var name string
	for i := 0; name == ""; i++ {
		if o, _ := roles(fmt.Sprintf("q%d", i)); o == leader {
			name = fmt.Sprintf("q%d", i)
		}
	}
	c.createQueue(name, wire.PolicyMajority)
	m := c.node(leader)
	var running int
	m.run(func() { running = m.n.DrainOwned(0) })
	if running != 1 {
		t.Fatalf("the drain has %d handoffs under way or waiting, want 1", running)
	}
	c.advance(time.Second)
	if now := c.leader(); now == leader || now == 0 {
		t.Fatalf("the draining leader %s still leads (leader now %s)", leader, now)
	}
	if c.saw(event.QueueHandoffAborted) {
		t.Fatalf("a handoff was given up during the leadership transfer; events:\n%v", c.events)
	}
	if got := m.n.Owned(); got != 0 {
		t.Fatalf("after the drain %s still owns %d queues", leader, got)
	}
}

// A queue that confirmed much since its last checkpoint is checkpointed
// before its owner drains: the target then rebuilds the state it serves
// from that checkpoint and the few records after it, not from the whole
// log, while the old owner still serves.
func TestAHandoffCheckpointsALongLogFirst(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	next := followers[0]
	c.publishConfirmed(owner, "orders", 5000)
	c.request(owner, 9, &wire.MoveOwner{ReqID: 40, Queue: "orders", To: uint32(next)})
	c.advance(time.Second)
	c.mustReply(40, wire.StatusOK)
	rebuilt, ok := c.last(event.QueueRebuilt)
	if !ok || rebuilt.node != next || rebuilt.Index() < 5000 || rebuilt.Base() != "memory" {
		t.Fatalf("the target rebuilt from index %d (%v, base %q), want from the checkpoint past the 5000 publishes its build left in memory; events:\n%v",
			rebuilt.Index(), rebuilt.node, rebuilt.Base(), c.events)
	}
	// The owner waited for the metadata to certify the cut before it
	// proposed the target: a cut left uncertified would have the next
	// owner ask every replica for a checkpoint the moment it serves.
	certified := slices.IndexFunc(c.emitted, func(e emission) bool {
		return e.Name == event.CheckpointCertified && e.node == owner && e.Index() >= 5000
	})
	proposed := slices.IndexFunc(c.emitted, func(e emission) bool { return e.Name == event.QueueHandoffProposed })
	if certified < 0 || proposed < 0 || certified > proposed {
		t.Fatalf("the cut was certified at event %d and the target proposed at event %d; want the certificate first", certified, proposed)
	}
	if c.saw(event.CheckpointProposed, by(next)) {
		t.Fatalf("the next owner asked for another checkpoint at once; events:\n%v", c.events)
	}
	// The target took its state from memory; the other two replicas kept
	// theirs, and each is exactly the checkpoint it vouched for.
	for _, id := range []node.NodeID{owner, followers[1]} {
		if kept, err := node.CheckpointStateMatches(c.node(id).n, "orders"); !kept || err != nil {
			t.Fatalf("%s's checkpoint state in memory (kept %v): %v", id, kept, err)
		}
	}
	c.request(next, 7, &wire.Subscribe{ReqID: 46, Queue: "orders", Window: 10000, Lease: time.Minute})
	c.advance(200 * time.Millisecond)
	if got := c.deliveries(7); len(got) != 5000 {
		t.Fatalf("the next owner delivered %d messages, want the 5000 confirmed", len(got))
	}
}

// A delivery limit holds across a planned move: the old owner hands the
// next one its delivery counts in its answer to the seal, so a message
// nacked once before the move and once after it has used up a limit of
// two and moves to the dead-letter queue.
func TestAHandoffCarriesDeliveryCountsOver(t *testing.T) {
	c := newCluster(t)
	c.createQueue("parked", wire.PolicyMajority)
	owner := c.createWithDeadLetter("orders", "parked", 2)
	_, followers := roles("orders")
	next := followers[0]
	c.subscribeAndPublishPoison(owner)
	if got := c.nackEach(owner, 5, "orders", 20); len(got) != 1 || got[0].Attempt != 1 {
		t.Fatalf("before the move the consumer got %v, want the message once", got)
	}
	// The nacked message went out again at once; the consumer hands that
	// delivery back unworked, which does not count.
	c.request(owner, 5, &wire.Unsubscribe{ReqID: 11, Queue: "orders"})
	c.settle()
	c.mustReply(11, wire.StatusOK)
	c.deliveries(5)
	c.request(owner, 9, &wire.MoveOwner{ReqID: 40, Queue: "orders", To: uint32(next)})
	c.advance(500 * time.Millisecond)
	c.mustReply(40, wire.StatusOK)
	c.request(next, 7, &wire.Subscribe{ReqID: 50, Queue: "orders", Window: 1, Lease: time.Minute})
	c.settle()
	got := c.nackEach(next, 7, "orders", 60)
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("after the move the consumer got %+v, want the message as its second delivery", got)
	}
	c.advance(500 * time.Millisecond)
	if !c.saw(event.QueueDeadLetter, onQueue("orders"), by(next)) {
		t.Fatalf("the message nacked twice was not dead-lettered by the new owner; events:\n%v", c.events)
	}
}

// A drain may run as long as the longest bound a handoff request may ask
// for, five minutes, and one told exactly that waits that long for a
// consumer that holds a lease, not the default five seconds.
func TestADrainOfTheLongestBoundWaitsThatLong(t *testing.T) {
	c := newCluster(t)
	owner, _ := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 1)
	c.request(owner, 5, &wire.Subscribe{ReqID: 10, Queue: "orders", Window: 1, Lease: 10 * time.Minute})
	c.settle()
	c.mustReply(10, wire.StatusOK)
	if got := c.deliveries(5); len(got) != 1 {
		t.Fatalf("the consumer got %d deliveries, want the 1 published", len(got))
	}
	m := c.node(owner)
	m.run(func() { m.n.DrainOwned(5 * time.Minute) })
	c.advance(10 * time.Second)
	if c.saw(event.QueueHandoffProposed, by(owner)) {
		t.Fatalf("%s proposed the next owner within 10 s, though told to drain for five minutes", owner)
	}
	if got := m.n.Owned(); got != 1 {
		t.Fatalf("%s owns %d queues while it drains, want 1", owner, got)
	}
}
