package node_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A node of a five-node cluster dies and the metadata marks it down.
// Queues created meanwhile are placed on the four nodes that are up, so
// each, a policy-all queue among them, is created and served at once
// instead of waiting for the dead node to come back.
func TestNewQueuesAvoidANodeMarkedDown(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3, 4, 5}, Tick: 10 * time.Millisecond, SegmentSize: 4096})
	c.advance(time.Second)
	const dead node.NodeID = 4
	c.node(dead).crash()
	for step := 0; !c.saw(event.MetaNodeDown, func(e emission) bool { return e.Node() == uint32(dead) }); step++ {
		if step > 600 {
			t.Fatalf("%s was not marked down in 3s; events:\n%v", dead, c.events)
		}
		c.advance(5 * time.Millisecond)
	}
	// Enough names that the hash ring would have put several on the dead
	// node.
	for i := range 10 {
		name := fmt.Sprintf("q%d", i)
		c.request(1, 50, &wire.CreateQueue{ReqID: uint64(100 + i), Queue: name, Policy: wire.PolicyAll})
		c.advance(300 * time.Millisecond)
		c.mustReply(uint64(100+i), wire.StatusOK)
		if v := viewOf(t, c.node(1).n, name); slices.Contains(v.Replicas, dead) || len(v.Replicas) != 3 {
			t.Fatalf("queue %s was placed on %v, want three nodes without the dead %s", name, v.Replicas, dead)
		}
	}
}
