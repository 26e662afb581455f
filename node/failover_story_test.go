package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// When the owner dies for good, the metadata leader confirms it down, a
// surviving replica recovers the confirmed history in a new epoch, and
// clients get every confirmed message back from it. When the old owner
// returns, it rejoins as a follower and converges.
func TestOwnerLossFailsOverWithEveryConfirmedMessage(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 5)
	c.node(owner).crash()
	c.advance(4 * time.Second)
	if !c.saw(event.RecoveryDone, onQueue("orders")) {
		t.Fatalf("no recovery completed; events:\n%v", c.events)
	}
	newOwner := recoveredOwner(t, c)
	if newOwner == owner {
		t.Fatalf("the dead owner %s is still the owner", owner)
	}
	// The plan named no process of the candidate (the leader knows none),
	// so the candidate's process claimed the epoch before recovering.
	if !c.saw(event.QueueClaim, onQueue("orders"), by(newOwner)) {
		t.Fatalf("the candidate %s recovered without claiming its epoch; events:\n%v", newOwner, c.events)
	}

	// A fresh subscriber on the new owner gets all five.
	c.mustDeliverAll(newOwner, "orders", 5, "after failover")
	// Every survivor's view names the new owner at epoch 2, and only the
	// new owner says it serves.
	for _, m := range c.nodes {
		if m.down {
			continue
		}
		v := viewOf(t, m.n, "orders")
		wantRole := "follower"
		if m.id == newOwner {
			wantRole = "owner"
		}
		if v.Owner != newOwner || v.Epoch != 2 || v.State != "active" || v.Role != wantRole {
			t.Fatalf("%s sees %+v; want owner %s epoch 2 active, role %s", m.id, v, newOwner, wantRole)
		}
	}
	// New publishes are confirmed again.
	c.request(newOwner, 1, &wire.Publish{ReqID: 30, Queue: "orders", ID: msgID(30)})
	c.settle()
	c.mustReply(30, wire.StatusOK)

	// The old owner comes back as a follower, fenced for clients, and
	// catches up.
	c.node(owner).start()
	c.advance(2 * time.Second)
	c.request(owner, 1, &wire.Publish{ReqID: 40, Queue: "orders", ID: msgID(40)})
	if r := c.mustReply(40, wire.StatusNotOwner); node.NodeID(r.Owner) != newOwner {
		t.Fatalf("the old owner redirects to %d, want %s", r.Owner, newOwner)
	}
	if v := viewOf(t, c.node(owner).n, "orders"); v.Role != "follower" || v.Owner != newOwner {
		t.Fatalf("the returned old owner sees %+v; want a follower of %s", v, newOwner)
	}
	old := node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	cur := node.DumpReplicas(c.node(newOwner).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	if len(old) != 1 || len(cur) != 1 || old[0].Digest != cur[0].Digest {
		t.Fatalf("the old owner did not converge: %d vs %d entries", len(old[0].Entries), len(cur[0].Entries))
	}
}

// viewOf returns n's view of one queue.
func viewOf(t *testing.T, n *node.Node, queue string) node.QueueView {
	t.Helper()
	for _, v := range n.Queues() {
		if v.Name == queue {
			return v
		}
	}
	t.Fatalf("the node lists no queue %s", queue)
	return node.QueueView{}
}

// recoveredOwner finds the node that finished recovering.
func recoveredOwner(t *testing.T, c *cluster) node.NodeID {
	t.Helper()
	if e, ok := c.last(event.RecoveryDone); ok {
		return e.node
	}
	t.Fatal("no node finished a recovery")
	return 0
}

// publishConfirmed publishes n messages (IDs 1..n, request IDs 1..n) to
// owner and requires every one confirmed.
func (c *cluster) publishConfirmed(owner node.NodeID, queue string, n uint64) {
	c.t.Helper()
	for i := uint64(1); i <= n; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: queue, ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	for i := uint64(1); i <= n; i++ {
		c.mustReply(i, wire.StatusOK)
	}
}

// publishWhileCut cuts lagging off and publishes messages from..to (IDs
// and request IDs alike), confirmed by the owner and the other replica.
// lagging stays cut off.
func (c *cluster) publishWhileCut(owner, lagging node.NodeID, queue string, from, to uint64) {
	c.t.Helper()
	c.cut[lagging] = true
	for i := from; i <= to; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: queue, ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	for i := from; i <= to; i++ {
		c.mustReply(i, wire.StatusOK)
	}
}

// mustDeliverAll subscribes a fresh client to queue on owner and requires
// it to receive messages 1..n; when says after what, for the failure.
func (c *cluster) mustDeliverAll(owner node.NodeID, queue string, n uint64, when string) {
	c.t.Helper()
	c.request(owner, 7, &wire.Subscribe{ReqID: 1000, Queue: queue, Window: max(10, uint32(n))})
	c.settle()
	c.mustReply(1000, wire.StatusOK)
	got := map[wire.MessageID]bool{}
	for _, d := range c.deliveries(7) {
		got[d.ID] = true
	}
	for i := uint64(1); i <= n; i++ {
		if !got[msgID(i)] {
			c.t.Fatalf("confirmed message %s was not delivered %s (got %v)", msgID(i), when, got)
		}
	}
}

// loseWrites imitates m's disk losing the last k records of queue's log
// that it had acknowledged as synced; m must be down.
func (c *cluster) loseWrites(m *member, queue string, k int) {
	c.t.Helper()
	inc := currentIncarnation(c.t, m, queue)
	dir := m.fs.PathJoin("queues", fmt.Sprintf("%s.%016x", queue, inc), "log")
	if cut, _, err := storage.LoseLastFrames(m.fs, dir, k); err != nil || cut != k {
		c.t.Fatalf("losing %d records of %s on %s: cut %d, %v", k, queue, m.id, cut, err)
	}
}

// The owner's disk lies: after every node stops, the owner's log has lost
// its last synced records. Restarting the owner must not let its short
// log win: it seals the followers, which hold the records, and copies
// them back before it serves.
func TestRestartedOwnerWithLostWritesRecoversFromFollowers(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 20)
	for _, m := range c.nodes {
		m.crash()
	}
	c.loseWrites(c.node(owner), "orders", 8)
	for _, m := range c.nodes {
		m.start()
	}
	c.advance(3 * time.Second)
	c.mustDeliverAll(owner, "orders", 20, "after the owner's disk lost its last synced writes")
	if !c.saw(event.RecoveryDone, onQueue("orders")) || c.saw(event.QueueTruncate, onQueue("orders")) {
		t.Fatalf("the restarted owner served without recovering, or a replica dropped records; events:\n%v", c.events)
	}
}

// A restarted replica's own log is not evidence enough: the last records
// were confirmed on the owner and one follower only, and then the owner's
// disk lost them. The owner and the lagging follower restart; counting the
// owner's witness as a seal quorum would select the lagging history and
// lose those records. The owner waits instead, and recovers everything
// once the follower that holds them returns.
func TestSuspectOwnerWaitsForEveryReplica(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	lagging, holder := followers[0], followers[1]
	c.publishConfirmed(owner, "orders", 12)
	c.publishWhileCut(owner, lagging, "orders", 13, 20)
	for _, m := range c.nodes {
		m.crash()
	}
	delete(c.cut, lagging)
	c.loseWrites(c.node(owner), "orders", 8)
	c.node(owner).start()
	c.node(lagging).start()
	c.advance(3 * time.Second)
	if c.saw(event.RecoveryStage, onQueue("orders"), inEpoch(2), sealedOK) {
		t.Fatalf("a suspect owner and one replica sealed without the third; events:\n%v", c.events)
	}
	c.node(holder).start()
	c.advance(3 * time.Second)
	if !c.saw(event.RecoveryDone, onQueue("orders")) {
		t.Fatalf("no recovery once every replica answered; events:\n%v", c.events)
	}
	c.mustDeliverAll(owner, "orders", 20, "after the replica holding the last records returned")
}

// The page-cache lie: after a failed fsync a restarted process can read
// back, and "successfully" sync, pages that never reached the disk, and
// lose them at the next machine crash; from outside, the follower's disk
// lost records it reported durable. Here the last records were confirmed
// on the owner and that follower only; both crash, the follower's disk
// drops them, and it restarts with the lagging replica while the owner
// stays down. The two may not elect the follower's short log: the
// follower is suspect, so the recovery waits for the owner.
func TestAFollowerWhoseDiskLiedIsNotEnoughEvidence(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	liar, lagging := c.node(followers[0]), followers[1]
	c.publishConfirmed(owner, "orders", 12)
	c.publishWhileCut(owner, lagging, "orders", 13, 20)
	c.node(owner).crash()
	liar.crash()
	c.loseWrites(liar, "orders", 8)
	delete(c.cut, lagging)
	liar.start()
	c.advance(5 * time.Second)
	if c.saw(event.RecoveryDone, onQueue("orders")) {
		t.Fatalf("a recovery completed on the lying follower and the lagging replica alone; events:\n%v", c.events)
	}
	c.node(owner).start()
	c.advance(5 * time.Second)
	newOwner := recoveredOwner(t, c)
	c.mustDeliverAll(newOwner, "orders", 20, "after the owner returned")
}

// One replica's disk is slow while its queue is made: the owner and the
// other replica prepare, and the queue is activated on them, while the
// slow replica is still writing the identity of the replica it prepared.
// That replica was made by this process and has reported nothing to
// anyone, so finishing its preparation must not leave it suspect. The
// owner dies before it ever told the slow replica a commit (which would
// have verified it), and the two survivors' witnesses are enough to
// recover without the dead owner's (seed 92390: the activation, applied
// while the identity was being written, made the replica suspect, and the
// seal waited for the owner to come back).
func TestAReplicaActivatedWhileWritingItsIdentityRecoversWithoutTheOwner(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	slow := followers[0]
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == slow && err == nil && st.Name() == "replica.tmp"
	}
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	if !c.saw(event.MetaActivated, by(slow)) || !c.saw(event.QueueOpen, by(slow)) {
		t.Fatalf("want %s to apply the activation while its identity is written; events:\n%v", slow, c.events)
	}

	c.node(owner).crash()
	c.hold = nil
	c.settle()
	if v := viewOf(t, c.node(slow).n, "orders"); v.Suspect {
		t.Fatalf("%s's replica is suspect after a preparation nothing cut short: %+v", slow, v)
	}
	c.advance(4 * time.Second)
	if !c.saw(event.RecoveryDone, onQueue("orders")) {
		t.Fatalf("no recovery completed without the dead owner; events:\n%v", c.events)
	}
	recovered := recoveredOwner(t, c)
	c.publishConfirmed(recovered, "orders", 3)
	c.mustDeliverAll(recovered, "orders", 3, "after a recovery sealed by the two survivors")
}
