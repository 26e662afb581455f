package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// On five nodes, a policy-all queue on a, b and c loses c: once c has
// been down for ReplaceAfter, the owner a leads its replacement by d.
// Before that replacement activates, b goes down too, and once b has
// been down as long it is swapped out of the pending set as well, for e:
// under the all policy the set cannot activate without every member, and
// its seal needs just one prior witness, so a alone of the prior set is
// left in the set. The owner's copy to e never gets through, so the
// replacement is still pending when a restarts over a damaged log and
// reports its replica lost. Now no member of both sets can lead the
// recovery; b and c, which hold every confirmed message, come back
// outside the set. The metadata swaps b back in for a, b leads the
// recovery from the prior set's witnesses, and every confirmed message
// is delivered.
func TestAPriorMemberSwappedBackLeadsTheRecoveryNoOtherCould(t *testing.T) {
	c, set, spares := fiveNodeQueue(t, wire.PolicyAll)
	a, b, cc := set[0], set[1], set[2]

	// No queue traffic between a and either spare gets through: no
	// replacement can install.
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		switch m.(type) {
		case *wire.Append, *wire.AppendReply, *wire.Fetch, *wire.FetchReply, *wire.Checkpoint, *wire.CheckpointAck:
			return !(from == a && slices.Contains(spares, to) || to == a && slices.Contains(spares, from))
		}
		return true
	}
	c.node(cc).crash()
	for step := 0; step < 400 && !c.saw(event.MetaPlanReplace, onQueue("orders")); step++ {
		c.advance(10 * time.Millisecond)
	}
	if !c.saw(event.MetaPlanReplace, onQueue("orders")) {
		t.Fatalf("%s was never replaced; events:\n%v", cc, c.events)
	}
	c.node(b).crash()
	v := viewOf(t, c.node(a).n, "orders")
	for step := 0; step < 600 && slices.Contains(v.Replicas, b); step++ {
		c.advance(10 * time.Millisecond)
		v = viewOf(t, c.node(a).n, "orders")
	}
	if slices.Contains(v.Replicas, b) || slices.Contains(v.Replicas, cc) {
		t.Fatalf("the story needs b and c swapped out of the pending set, it is %v; events:\n%v", v.Replicas, c.events)
	}

	m := c.node(a)
	m.crash()
	damageFirstSegment(t, m.fs, "orders")
	m.start()
	c.node(b).start()
	c.node(cc).start()
	c.advance(5 * time.Second)
	if !c.saw(event.QueueFenced, by(a), onQueue("orders")) {
		t.Fatalf("the damaged replica on %s was not fenced; events:\n%v", a, c.events)
	}
	owner := recoveredOwner(t, c)
	if owner != b && owner != cc {
		t.Fatalf("the queue was recovered by %s, want a prior member swapped back in; events:\n%v", owner, c.events)
	}
	c.mustDeliverAll(owner, "orders", 5, "after a prior member was swapped back in")
}
