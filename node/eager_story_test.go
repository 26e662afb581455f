package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Under eager detection an owner cut off from every peer steps back once
// it has heard from no quorum for an interval, and its replacement must
// not serve before that: two nodes would say they serve the queue at
// once. The metadata leader pings each peer every so often, so when the
// cut comes the owner's last answer may be nearly a ping period old;
// judged by that answer's age, the owner would be verified down almost
// at once and replaced well inside the interval. So the story cuts the
// owner at every tick of the leader's ping period, and in each run the
// new owner's activation comes after the old owner stepped back.
func TestAnEagerReplacementServesOnlyAfterTheCutOffOwnerSteppedBack(t *testing.T) {
	const tick = 10 * time.Millisecond
	for offset := range 10 {
		t.Run(fmt.Sprintf("cut %d ticks after a ping", offset), func(t *testing.T) {
			c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: tick, SegmentSize: 4096,
				Detection: node.DetectionPolicy{Mode: node.DetectEager, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}})
			queue, owner := queueNotOwnedBy(c.leader())
			if got := c.createQueue(queue, wire.PolicyMajority); got != owner {
				t.Fatalf("queue %s is owned by n%d, want n%d", queue, got, owner)
			}
			c.publishConfirmed(owner, queue, 1)

			leader := c.leader()
			var pinged time.Time
			c.intercept = func(from, to node.NodeID, m wire.Message) bool {
				if _, ok := m.(*wire.Ping); ok && from == leader && to == owner {
					pinged = c.now
				}
				return true
			}
			for start := c.now; !pinged.Equal(c.now); {
				c.advance(tick)
				if c.now.Sub(start) > time.Second {
					t.Fatal("the leader sent the owner no ping for a second")
				}
			}
			c.advance(time.Duration(offset) * tick)
			c.intercept = nil
			cutAt := c.now
			c.cut[owner] = true
			// Past the owner's step-back and before any replacement, a
			// follower holds a publish rather than naming the silent
			// owner, which would only send the client away again.
			c.advance(120 * time.Millisecond)
			follower := otherThan(owner, leader)
			c.request(follower, 5, &wire.Publish{ReqID: 500, Queue: queue, ID: msgID(500), Payload: []byte{5}})
			if r := c.reply(500); r != nil {
				t.Fatalf("a follower answered a publish 120ms after the cut with %v (owner n%d), want it held until the failover", r.Status, r.Owner)
			}
			c.advance(2 * time.Second)
			if r := c.reply(500); r == nil || r.Status != wire.StatusOK && (r.Status != wire.StatusNotOwner || node.NodeID(r.Owner) == owner || r.Owner == 0) {
				t.Fatalf("the held publish was answered %+v after the failover, want it confirmed or sent to the new owner", r)
			}

			lost, ok := c.last(event.QueueQuorumLost)
			if !ok || lost.node != owner {
				t.Fatalf("the cut-off owner n%d never stepped back; events:\n%v", owner, c.events)
			}
			var active *emission
			for i := range c.emitted {
				if e := &c.emitted[i]; e.Name == event.QueueActive && e.node != owner && e.Epoch() > 1 {
					active = e
					break
				}
			}
			if active == nil {
				t.Fatalf("no other node took the queue over; events:\n%v", c.events)
			}
			t.Logf("stepped back %v after the cut, replaced %v after it", lost.at.Sub(cutAt), active.at.Sub(cutAt))
			if !lost.at.Before(active.at) {
				t.Fatalf("n%d served epoch %d %v after the cut, before the cut-off n%d stepped back at %v",
					active.node, active.Epoch(), active.at.Sub(cutAt), owner, lost.at.Sub(cutAt))
			}
		})
	}
}

// otherThan returns the node of a three-node cluster that is neither a
// nor b.
func otherThan(a, b node.NodeID) node.NodeID {
	return 6 - a - b
}

// queueNotOwnedBy returns a queue name, and its owner, that node does not
// own, so that cutting the owner off leaves the metadata leader standing.
func queueNotOwnedBy(id node.NodeID) (string, node.NodeID) {
	for i := 0; ; i++ {
		name := fmt.Sprintf("orders-%d", i)
		if owner, _ := roles(name); owner != id {
			return name, owner
		}
	}
}
