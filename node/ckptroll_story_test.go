package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Between checkpoints every replica applies what was confirmed, a tick at
// a time, to the state it keeps for its next build. A follower that takes
// over after its owner dies then rebuilds only the records since its last
// tick, not the queue's whole history; and the state each replica keeps
// is always its checkpoint's with the log since applied.
func TestAReplicaKeepsItsNextBuildsBaseRolledForward(t *testing.T) {
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3000)
	c.advance(200 * time.Millisecond) // the commit reaches the followers, and a few ticks pass
	for _, id := range append([]node.NodeID{owner}, followers...) {
		if kept, err := node.CheckpointStateMatches(c.node(id).n, "orders"); !kept || err != nil {
			t.Fatalf("%s's base in memory (kept %v): %v", id, kept, err)
		}
	}
	// The records were in hand when each replica appended them: the bases
	// roll from memory, not from reading the log back.
	for _, id := range append([]node.NodeID{owner}, followers...) {
		fromTail, fromLog := node.BaseRolls(c.node(id).n, "orders")
		if fromTail < 9*(fromTail+fromLog)/10 {
			t.Errorf("%s's base applied %d records from its tail and read %d from its log, want nine in ten from the tail", id, fromTail, fromLog)
		}
	}
	recovered, e := rebuildAfterCrash(t, c, owner)
	if e.Index() < 3000 || e.Base() != "memory" {
		t.Fatalf("the recovered owner rebuilt from index %d (base %q), want from its base rolled past the 3,000 publishes: %v", e.Index(), e.Base(), e)
	}
	c.mustDeliverAll(recovered, "orders", 3000, "after a recovery from a rolled base")
}

// A new owner serves from its base and keeps a copy as the base of its
// next build, whose ID maps it fills a step a tick: filling a big window
// at once would stall the node. A cut asked for while they fill waits,
// and is built once they are whole, though nothing is appended after the
// ask to start it. Here the cut is the one a new owner asks for at once,
// since its predecessor died before certifying one.
func TestACutAskedWhileTheBaseFillsIsBuiltOnceItIsWhole(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 50 * time.Millisecond, CheckpointRecords: 8_000})
	owner := c.createQueue("orders", wire.PolicyMajority)
	receipts := passReceipts(c, false)
	// 70,000 IDs in the window: more than a tick fills.
	c.publishConfirmed(owner, "orders", 70_000)
	c.advance(time.Second)
	c.node(owner).crash()
	*receipts = true
	var recovered node.NodeID
	for range 1000 {
		if e, ok := c.last(event.QueueActive); ok && e.node != owner {
			recovered = e.node
			break
		}
		c.advance(time.Millisecond)
	}
	if recovered == 0 {
		t.Fatalf("no owner took over from %s; events:\n%v", owner, c.events)
	}
	if e, _ := c.last(event.QueueRebuilt); e.Base() != "memory" {
		t.Fatalf("the recovered owner rebuilt from base %q, want its base in memory: %v", e.Base(), e)
	}
	asked := len(c.emitted)
	c.advance(60 * time.Millisecond) // the new owner asks for a cut at its first tick
	if !node.BaseFilling(c.node(recovered).n, "orders") {
		t.Fatalf("%s's base filled its maps before its owner asked for a cut: the test asks too late", recovered)
	}
	if sawSince(c, asked, event.CheckpointBuilt, by(recovered)) {
		t.Fatalf("%s built its checkpoint before its base's maps were filled", recovered)
	}
	c.advance(time.Second)
	if !sawSince(c, asked, event.CheckpointBuilt, by(recovered)) {
		t.Fatalf("%s built no checkpoint after its base filled; events:\n%v", recovered, c.events)
	}
	// A certificate needs every replica's receipt: the old owner comes
	// back, as a follower.
	c.node(owner).start()
	c.advance(5 * time.Second)
	if !sawSince(c, asked, event.CheckpointCertified) {
		t.Fatalf("the new owner %s left its cut uncertified; events:\n%v", recovered, c.events)
	}
	if kept, err := node.CheckpointStateMatches(c.node(recovered).n, "orders"); !kept || err != nil {
		t.Fatalf("%s's base after the build (kept %v): %v", recovered, kept, err)
	}
	c.mustDeliverAll(recovered, "orders", 70_000, "after a cut built on a refilled base")
}

// sawSince reports whether a node emitted an event named name after the
// first n of the cluster's.
func sawSince(c *cluster, n int, name event.Name, conds ...func(emission) bool) bool {
	return slices.ContainsFunc(c.emitted[n:], func(e emission) bool {
		return e.Name == name && !slices.ContainsFunc(conds, func(ok func(emission) bool) bool { return !ok(e) })
	})
}

// The owner dies while its followers write the checkpoint it asked for,
// the state at the cut built and the file not yet durable. The follower
// that takes over serves from that state, kept in memory, instead of
// decoding the checkpoint it was writing (seconds for a big window, while
// clients wait).
func TestANewOwnerChosenWhileACheckpointIsWrittenServesFromMemory(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, CheckpointRecords: 2_000})
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	writing := true
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return writing && s.m.id != owner && err == nil && st.Name() == "checkpoint.tmp"
	}
	c.publishConfirmed(owner, "orders", 2_500)
	c.advance(200 * time.Millisecond)
	if !c.saw(event.CheckpointBuilt, by(owner)) || c.saw(event.CheckpointBuilt, by(followers[0])) || c.saw(event.CheckpointBuilt, by(followers[1])) {
		t.Fatalf("want the owner's checkpoint built and both followers' still being written; events:\n%v", c.events)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	recovered := recoveredOwner(t, c)
	if e, ok := c.last(event.QueueRebuilt); !ok || e.node != recovered || e.Base() != "memory" {
		t.Fatalf("%s rebuilt from %v, want from the state at the cut it was writing, in memory", recovered, e)
	}
	writing = false
	c.advance(time.Second)
	if kept, err := node.CheckpointStateMatches(c.node(recovered).n, "orders"); !kept || err != nil {
		t.Fatalf("%s's base once its checkpoint was written (kept %v): %v", recovered, kept, err)
	}
	c.mustDeliverAll(recovered, "orders", 2_500, "after a failover during a checkpoint's write")
}

// The owner dies while a follower builds the checkpoint it asked for, and
// that follower takes the queue over before its build is done. It ends
// the build and serves from the build's state, instead of decoding its
// last checkpoint in the handler that installs it.
func TestANewOwnerChosenWhileItBuildsServesFromTheBuildsState(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, CheckpointRecords: 4_000})
	owner := c.createQueue("orders", wire.PolicyMajority)
	leader := c.leader()
	payload := make([]byte, 4096) // 4,500 of them take two 8 MiB encoding steps
	building := func() node.NodeID {
		for _, m := range c.nodes {
			if m.id != owner && m.id != leader && node.BuildUnderWay(m.n, "orders") {
				return m.id
			}
		}
		return 0
	}
	var builder node.NodeID
	for i := uint64(1); i <= 20_000 && builder == 0; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: payload})
		c.settle()
		if i%100 == 0 {
			c.advance(time.Millisecond)
		}
		builder = building()
	}
	if builder == 0 || owner == leader {
		t.Fatalf("want a follower that does not lead the metadata building a checkpoint (owner n%d, leader n%d); events:\n%v", owner, leader, c.events)
	}
	c.killSeenByPeers(owner)
	c.settle() // no tick passes: the builder's build is where it was
	e, ok := c.last(event.QueueRebuilt)
	if !ok || e.node != builder || e.Base() != "memory" {
		t.Fatalf("want n%d, which was building, to rebuild from the build's state in memory, got %v; events:\n%v", builder, e, c.events)
	}
	c.advance(5 * time.Second)
	if kept, err := node.CheckpointStateMatches(c.node(builder).n, "orders"); !kept || err != nil {
		t.Fatalf("n%d's base after serving from the build's state (kept %v): %v", builder, kept, err)
	}
}

// A follower restarted over a long log starts its next build's base from
// its checkpoint (here, with none yet, from the empty state) and rolls it
// forward to what was confirmed. It gains on the log by at least a
// quarter of what the base lacks each tick, not by a fixed step: with a
// fixed 1,024 records a tick, a base far behind stayed behind for
// seconds, and a replica chosen owner meanwhile rebuilt the rest in the
// middle of its failover.
func TestARestartedReplicaRollsItsBaseUpToItsLogInAFewTicks(t *testing.T) {
	const published = 40_000
	c := newCluster(t)
	owner, followers := roles("orders")
	c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", published)
	c.advance(200 * time.Millisecond)
	f := c.node(followers[0])
	f.crash()
	c.advance(50 * time.Millisecond)
	f.start()
	ticks := 0
	for ; ; ticks++ {
		if applied, kept := node.BaseApplied(f.n, "orders"); kept && applied >= published {
			break
		}
		if ticks > 100 {
			t.Fatalf("%s's base did not reach the %d publishes in 100 ticks after its restart", f.id, published)
		}
		c.advance(10 * time.Millisecond)
	}
	// 16,384 records at the first roll, then a quarter of the rest a
	// tick down to a step of 1,024: about a dozen ticks, where a fixed
	// 1,024 a tick took two dozen.
	if ticks > 16 {
		t.Fatalf("%s's base took %d ticks to reach its log after the restart, want at most 16", f.id, ticks)
	}
	if kept, err := node.CheckpointStateMatches(f.n, "orders"); !kept || err != nil {
		t.Fatalf("%s's base after the restart (kept %v): %v", f.id, kept, err)
	}
}
