package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower loses its disk and rejoins, so its replica comes back
// suspect: it once reported records durable that it no longer holds.
// Cut off from the owner, it stays suspect until the owner dies; the
// queue then waits for the old owner's process, whose replica, reopened
// after a crash, is suspect too, and the recovery seals all three. The
// sealed replicas adopt the new epoch durably before the candidate's
// installing appends reach them, and those carry a commit of zero, since
// the new owner has confirmed nothing in its epoch yet: such an append
// proves nothing about a suspect replica's log, so it must not end the
// suspicion. A replica is trusted only once the new owner has confirmed
// records and its log agrees that far, and it says through which index.
func TestASuspectReplicaIsNotTrustedOnACommitOfZero(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 5)
	lost := c.node(followers[0])
	lost.loseDisk()
	lost.rejoin = true
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		_, isAppend := msg.(*wire.Append)
		return !(isAppend && from == owner && to == lost.id)
	}
	lost.start()
	c.advance(3 * time.Second)
	if v := viewOf(t, lost.n, "orders"); !v.Suspect {
		t.Fatalf("%s's replica after rejoining, cut off from the owner: %+v, want it suspect", lost.id, v)
	}
	// With one of the two survivors suspect, no seal of them can be
	// trusted to find every confirmed record, so the queue waits for the
	// old owner's process to come back.
	c.node(owner).crash()
	c.intercept = nil
	c.advance(2 * time.Second)
	c.node(owner).start()
	c.advance(5 * time.Second)
	newOwner := recoveredOwner(t, c)
	throughZero := func(e emission) bool { return strings.HasSuffix(e.Why(), " through 0") }
	if c.saw(event.QueueTrusted, throughZero) {
		t.Fatalf("a suspect replica was trusted on a commit of zero; events:\n%v", c.events)
	}
	if !c.saw(event.QueueTrusted, by(lost.id)) {
		t.Fatalf("%s's replica was never trusted after the recovery; events:\n%v", lost.id, c.events)
	}
	c.mustDeliverAll(newOwner, "orders", 5, "after the recovery past a suspect replica")
}
