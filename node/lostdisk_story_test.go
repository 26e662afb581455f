package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// loseDisk takes m down and gives it an empty disk, as a machine whose
// data directory was lost or replaced would come back.
func (m *member) loseDisk() {
	m.crash()
	m.fs = vfs.NewCrashableMem()
}

// A follower's disk is lost and the node starts over an empty data
// directory without anyone saying so. The metadata leader counts it as
// holding entries it no longer has (raft would panic on the first
// heartbeat): the node stops voting, tells the leader, which hands
// leadership on so the next leader probes it from scratch, and catches
// up. Its queue replica comes back empty and suspect, so when the owner
// dies next, the recovery does not take the empty replica's word alone.
func TestANodeThatLostItsDiskRejoinsSafely(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 5)
	lost := followers[0]
	c.node(lost).loseDisk()
	c.node(lost).start()
	c.advance(3 * time.Second)
	if !c.saw(event.MetaCatchingUp, by(lost)) {
		t.Fatalf("%s did not notice that its metadata log lost acknowledged entries; events:\n%v", lost, c.events)
	}
	if !c.saw(event.MetaCaughtUp, by(lost)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost, c.events)
	}
	if v := viewOf(t, c.node(lost).n, "orders"); v.Role != "follower" || v.LastIndex == 0 {
		t.Fatalf("%s's replica is %+v after rejoining, want a follower that caught up", lost, v)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	newOwner := recoveredOwner(t, c)
	c.mustDeliverAll(newOwner, "orders", 5, "after a node lost its disk and then the owner died")
}

// The documented procedure: the node is started with Rejoin over its empty
// data directory, so it grants no vote even before a leader has told it
// anything, and still catches up.
func TestRejoinAfterALostDisk(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 5)
	lost := c.node(followers[1])
	lost.loseDisk()
	lost.rejoin = true
	lost.start()
	c.advance(3 * time.Second)
	rejoined := func(e emission) bool { return strings.HasPrefix(e.Why(), "started over an empty data directory") }
	if !c.saw(event.MetaCatchingUp, by(lost.id), rejoined) {
		t.Fatalf("%s did not start catching up for its empty data directory; events:\n%v", lost.id, c.events)
	}
	if !c.saw(event.MetaCaughtUp, by(lost.id)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost.id, c.events)
	}
	if v := viewOf(t, lost.n, "orders"); v.LastIndex == 0 {
		t.Fatalf("the rejoined replica holds nothing: %+v", v)
	}
}
