package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// When a node that owns more queues than a peer may recover at once
// dies, the metadata leader plans their recoveries a bounded number per
// candidate at a time, and plans more as those finish: thousands planned
// in one pass left the survivors' loops and disks seconds behind. Every
// queue still fails over.
func TestTheLeaderPacesTheRecoveriesOfAManyQueueOwner(t *testing.T) {
	c := newCluster(t)
	names, owner := createOwnedByOne(c, 2*node.RecoveryPlansMax+10)
	mark := len(c.emitted)
	c.node(owner).crash()
	c.advance(6 * time.Second)
	underWay := map[node.NodeID]map[string]bool{}
	most, active := 0, map[string]bool{}
	for _, e := range c.emitted[mark:] {
		switch e.Name {
		case event.MetaPlanRecovery:
			for _, set := range underWay {
				delete(set, e.Queue())
			}
			to := node.NodeID(e.ToNode())
			if underWay[to] == nil {
				underWay[to] = map[string]bool{}
			}
			underWay[to][e.Queue()] = true
			most = max(most, len(underWay[to]))
		case event.QueueActive:
			delete(underWay[e.node], e.Queue())
			active[e.Queue()] = true
		}
	}
	if most != node.RecoveryPlansMax {
		t.Fatalf("the leader had up to %d recoveries of %d queues under way on one candidate, want %d",
			most, len(names), node.RecoveryPlansMax)
	}
	for _, name := range names {
		if !active[name] {
			t.Fatalf("queue %s did not fail over (%d of %d did)", name, len(active), len(names))
		}
	}
}

// A recovery the leader planned holds its place against its candidate's
// bound from its plan until it activates, not only until it starts: one
// started and still sealing is as much work for the candidate. Here
// every seal answer is lost for the first 600 ms after the owner dies
// (three of the leader's planning passes), so the first recoveries start
// and cannot finish; no pass meanwhile plans past the bound.
func TestAStartedRecoveryHoldsItsPlaceUntilItActivates(t *testing.T) {
	c := newCluster(t)
	names, owner := createOwnedByOne(c, 2*node.RecoveryPlansMax+10)
	mark := len(c.emitted)
	c.node(owner).crash()
	crashed := c.now
	c.intercept = func(_, _ node.NodeID, m wire.Message) bool {
		_, answer := m.(*wire.SealReply)
		return !answer || c.now.Sub(crashed) > 600*time.Millisecond
	}
	c.advance(6 * time.Second)
	planned := map[node.NodeID]map[string]bool{}
	most, active := 0, map[string]bool{}
	for _, e := range c.emitted[mark:] {
		switch e.Name {
		case event.MetaPlanRecovery:
			to := node.NodeID(e.ToNode())
			if planned[to] == nil {
				planned[to] = map[string]bool{}
			}
			planned[to][e.Queue()] = true
			if e.at.Sub(crashed) < 600*time.Millisecond {
				most = max(most, len(planned[to]))
			}
		case event.QueueActive:
			active[e.Queue()] = true
		}
	}
	if most == 0 || most > node.RecoveryPlansMax {
		t.Fatalf("while no recovery could finish, the leader planned up to %d on one candidate, want 1 to %d",
			most, node.RecoveryPlansMax)
	}
	if len(active) != len(names) {
		t.Fatalf("%d of %d queues failed over", len(active), len(names))
	}
}
