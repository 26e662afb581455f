package node_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// On five nodes (so that losing two leaves a metadata majority), a
// queue's owner dies and stays dead. After the failover, once it has been
// down for ReplaceAfter, a node outside the replica set takes its place
// and copies the whole history. Then a second original
// replica dies: the queue recovers from the last original replica and the
// newcomer, with every confirmed message. When the first dead owner comes
// back, it finds itself replaced and drops its copy.
func TestADeadReplicaIsReplacedFromOutsideTheSet(t *testing.T) {
	c, set, spares := fiveNodeQueue(t, wire.PolicyMajority)
	owner, spare := set[0], spares[0]

	c.node(owner).crash()
	c.advance(6 * time.Second)
	if !c.saw(event.MetaReplicaReplaced, onQueue("orders")) {
		t.Fatalf("the dead owner was never replaced; events:\n%v", c.events)
	}
	// The plan names the epoch the replacement's recovery will claim, as
	// the recovery's own plan does.
	plan, _ := c.last(event.MetaPlanReplace)
	recovery, _ := c.last(event.MetaPlanRecovery)
	if plan.Epoch() == 0 || plan.Epoch() != recovery.Epoch() {
		t.Fatalf("the replacement was planned for epoch %d and its recovery for %d", plan.Epoch(), recovery.Epoch())
	}
	second := recoveredOwner(t, c)
	v := viewOf(t, c.node(second).n, "orders")
	if slices.Contains(v.Replicas, owner) || !slices.Contains(v.Replicas, spare) || v.Role != "owner" {
		t.Fatalf("after the replacement %s sees %+v; want %s in the set instead of %s", second, v, spare, owner)
	}
	// The newcomer holds the recovered history, record for record.
	have := node.DumpReplicas(c.node(spare).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	want := node.DumpReplicas(c.node(second).fs.CrashClone(vfsCfg), "", 64, 1<<20)
	if len(have) != 1 || len(want) != 1 || have[0].Digest != want[0].Digest {
		t.Fatalf("the newcomer %s did not catch up with %s", spare, second)
	}

	// Lose the owner again: two of the three original replicas are gone.
	c.node(second).crash()
	c.advance(4 * time.Second)
	third := recoveredOwner(t, c)
	if third == second || third == owner {
		t.Fatalf("no survivor took over from %s (recovered by %s); events:\n%v", second, third, c.events)
	}
	c.mustDeliverAll(third, "orders", 5, "after losing two original replicas")

	// The first dead owner returns, finds itself outside the set, and
	// drops its copy for good.
	c.node(owner).start()
	c.advance(time.Second)
	if !c.saw(event.QueueReplaced, onQueue("orders")) {
		t.Fatalf("the replaced node kept its replica; events:\n%v", c.events)
	}
	if left := node.DumpReplicas(c.node(owner).fs.CrashClone(vfsCfg), "", 64, 1<<20); len(left) != 0 {
		t.Fatalf("the replaced node still holds %d replicas on disk", len(left))
	}
}

// fiveNodeQueue starts five nodes that replace a replica once it has been
// down for 2s, creates the queue "orders" with policy p on the three
// nodes placement gives it, and has five messages confirmed. It returns
// the cluster, the replica set (the owner first) and the two nodes
// outside it.
func fiveNodeQueue(t *testing.T, p wire.Policy) (c *cluster, set, spares []node.NodeID) {
	t.Helper()
	nodes := []node.NodeID{1, 2, 3, 4, 5}
	c = newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096, ReplaceAfter: 2 * time.Second})
	set = node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet("orders")
	for _, id := range nodes {
		if !slices.Contains(set, id) {
			spares = append(spares, id)
		}
	}
	c.request(set[0], 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: p})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	c.publishConfirmed(set[0], "orders", 5)
	return c, set, spares
}

// An owner restarts to find its queue's log damaged below what it had
// synced. It fences the replica, never serves from it, and reports it
// lost; the metadata fails the queue over to a healthy replica at once
// (its node is up, so no failure detector would ever have), and every
// confirmed message is still there.
func TestADamagedOwnerReplicaIsFailedOver(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 5)
	m := c.node(owner)
	m.crash()
	damageFirstSegment(t, m.fs, "orders")
	m.start()
	c.advance(3 * time.Second)
	if !c.saw(event.QueueFenced, onQueue("orders")) {
		t.Fatalf("the damaged replica was not fenced; events:\n%v", c.events)
	}
	// The status page reads the node's view of a replica with no log.
	if v := viewOf(t, m.n, "orders"); v.Fenced == "" || v.LastIndex != 0 {
		t.Fatalf("the damaged replica's view is %+v, want it fenced with no log", v)
	}
	newOwner := recoveredOwner(t, c)
	if newOwner == owner {
		t.Fatalf("the damaged replica's node %s still owns the queue", owner)
	}
	if v := viewOf(t, c.node(newOwner).n, "orders"); v.Owner != newOwner || v.State != "active" {
		t.Fatalf("%s sees %+v after the failover", newOwner, v)
	}
	c.mustDeliverAll(newOwner, "orders", 5, "after the damaged owner's failover")
}

// damageFirstSegment flips a bit early in the first log segment of the
// queue's replica on fs: inside a frame that was synced long ago.
func damageFirstSegment(t *testing.T, fs vfs.FS, queue string) {
	t.Helper()
	dirs, err := fs.List("queues")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(dirs, func(d string) bool { return strings.HasPrefix(d, queue+".") })
	if i < 0 {
		t.Fatalf("no replica of %s among %v", queue, dirs)
	}
	f, err := fs.OpenReadWrite(fs.PathJoin("queues", dirs[i], "log", "00000000000000000001.seg"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 64+30); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, 64+30); err != nil {
		t.Fatal(err)
	}
}

// On three nodes, with no node outside the set, a queue's first owner is
// down while the queue is made, and restarts to find the state file of
// the replica it had begun preparing damaged. It fences the replica and
// reports it lost; the queue, which holds nothing yet, is created with
// one of the healthy replicas as its owner instead of waiting for the
// damaged one for good, and the damaged replica never counts toward it.
func TestAQueueWhoseFirstOwnerIsDamagedWhileItIsMadeIsCreated(t *testing.T) {
	c := newCluster(t)
	first, others := roles("orders")
	m := c.node(first)
	m.crash()
	c.advance(2 * time.Second) // a new metadata leader, if it was one
	c.request(others[0], 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(time.Second)
	c.noReply(99) // the queue waits for its first owner

	// Stage what the down node would have kept of a replica it prepared
	// before it stopped: the state file, with a bit of its magic flipped.
	plantDamagedReplicaState(t, c.node(others[0]).fs, m.fs, "orders")
	m.start()
	c.advance(3 * time.Second)
	if !c.saw(event.QueueFenced, onQueue("orders")) {
		t.Fatalf("the damaged replica was not fenced; events:\n%v", c.events)
	}
	c.mustReply(99, wire.StatusOK)
	v := viewOf(t, c.node(others[0]).n, "orders")
	if v.State != "active" || !slices.Contains(others, v.Owner) || !slices.Contains(v.Replicas, first) {
		t.Fatalf("after the creation %s sees %+v; want it active, owned by one of %v, %s still in the set", others[0], v, others, first)
	}
	c.publishConfirmed(v.Owner, "orders", 5)
	c.mustDeliverAll(v.Owner, "orders", 5, "after the creation without the damaged first owner")
}

// plantDamagedReplicaState copies the replica state file of queue from
// one node's disk to another's (which must be down), with a bit of its
// first byte flipped.
func plantDamagedReplicaState(t *testing.T, from, to vfs.FS, queue string) {
	t.Helper()
	dirs, err := from.List("queues")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(dirs, func(d string) bool { return strings.HasPrefix(d, queue+".") })
	if i < 0 {
		t.Fatalf("no replica of %s among %v", queue, dirs)
	}
	dir := from.PathJoin("queues", dirs[i])
	src, err := from.Open(from.PathJoin(dir, "replica"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, st.Size())
	if _, err := src.ReadAt(data, 0); err != nil {
		t.Fatal(err)
	}
	data[0] ^= 0x04
	if err := to.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst, err := to.Create(to.PathJoin(dir, "replica"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := dst.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := dst.Sync(); err != nil {
		t.Fatal(err)
	}
}

// On five nodes, a replica is down while its queue is made, and stays
// down until the metadata plans to replace it. Meanwhile the owner and
// the other replica restart, so both are suspect and the seal of the
// prior set needs all three witnesses, the down node's too. That node
// comes back holding no replica and prepares an empty one to answer
// with, but a crash cuts the preparation short: the directory is made
// and the identity is not yet durable. Restarted over that directory, it
// finishes the preparation, suspect, and answers the seal, and the queue
// recovers with every confirmed message (seed 1056: left preparing, the
// replica ignored every seal, and the queue was never served again).
func TestAPriorReplicaWhosePreparationACrashCutShortAnswersTheSeal(t *testing.T) {
	nodes := []node.NodeID{1, 2, 3, 4, 5}
	c := newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096, ReplaceAfter: 2 * time.Second})
	set := node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet("orders")
	owner, other, absent := set[0], set[1], set[2]
	c.node(absent).crash()
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	c.publishConfirmed(owner, "orders", 5)

	c.node(owner).crash()
	c.node(other).crash()
	c.node(owner).start()
	c.node(other).start()
	c.advance(6 * time.Second)
	if !c.saw(event.MetaPlanReplace, onQueue("orders")) || c.saw(event.RecoveryDone, onQueue("orders")) {
		t.Fatalf("want a replacement of %s planned and no recovery done without its witness; events:\n%v", absent, c.events)
	}

	// The absent node comes back, learns of the queue and its
	// replacement, and prepares its empty replica; the seals it would
	// answer are held back. Then it crashes, and what is left is staged
	// as a crash before the identity was durable would leave it: the
	// replica's directory without the state file that holds the identity.
	c.intercept = func(_, to node.NodeID, msg wire.Message) bool {
		_, seal := msg.(*wire.Seal)
		return !seal || to != absent
	}
	c.node(absent).start()
	c.advance(time.Second)
	fs := c.node(absent).fs
	dirs, err := fs.List("queues")
	if err != nil || len(dirs) != 1 {
		t.Fatalf("%s holds replicas %v (%v), want the one it prepared", absent, dirs, err)
	}
	c.node(absent).crash()
	fs = c.node(absent).fs
	if err := fs.Remove(fs.PathJoin("queues", dirs[0], "replica")); err != nil {
		t.Fatal(err)
	}
	// Its answer must say it is suspect: the node may once have reported
	// records durable that a lost disk took with it.
	answered, trusted := false, false
	c.intercept = func(from, _ node.NodeID, msg wire.Message) bool {
		if m, ok := msg.(*wire.SealReply); ok && from == absent && m.OK {
			answered, trusted = true, trusted || !m.Suspect
		}
		return true
	}
	c.node(absent).start()
	c.advance(3 * time.Second)
	if !answered || trusted {
		t.Fatalf("%s answered the seal %v, trusted %v; want answered, suspect; events:\n%v", absent, answered, trusted, c.events)
	}
	recovered := recoveredOwner(t, c)
	c.mustDeliverAll(recovered, "orders", 5, "after the recovery that needed the prior replica's witness")
}
