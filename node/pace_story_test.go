package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
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
