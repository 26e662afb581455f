package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A recovered owner rebuilds the state it serves from in steps of a few
// thousand records, one per tick, so that a long history never holds up
// its node's heartbeats for long; the state it ends with is whole.
func TestARecoveryRebuildsALongHistoryInSteps(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 10_000)
	// The first append a node sends in a newer epoch than the first
	// owner's carries the marker a recovery appends once its state is
	// rebuilt.
	var markerSent time.Time
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if m, ok := msg.(*wire.Append); ok && m.Epoch > 1 && len(m.Entries) > 0 && markerSent.IsZero() {
			markerSent = c.now
		}
		return true
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	recovered := recoveredOwner(t, c)
	// The install starts when the stage before it ends.
	var installStart time.Time
	for _, e := range c.emitted {
		if e.Name == event.RecoveryStage && e.node == recovered && e.Stage() != "install" && e.Outcome() == "ok" {
			installStart = e.at
		}
	}
	if installStart.IsZero() || markerSent.IsZero() {
		t.Fatalf("no install on %s (stage before it ended %v, marker sent %v); events:\n%v", recovered, installStart, markerSent, c.events)
	}
	// 10,001 records in steps of 4,096: the first at once, two more a
	// tick (10ms) apart. Messages and syncs take no time in this cluster,
	// so a rebuild done in one go would send the marker at once.
	if d := markerSent.Sub(installStart); d < 2*10*time.Millisecond {
		t.Fatalf("the marker went out %v after the install began: the rebuild was not spread over ticks", d)
	}
	c.mustDeliverAll(recovered, "orders", 10_000, "after a recovery rebuilt 10,000 messages in steps")
}
