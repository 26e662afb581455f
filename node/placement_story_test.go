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

// A replica of a policy-all queue dies while the queue is being created,
// before it prepared: the queue cannot activate without it. Once the
// metadata has held it down for ReplaceAfter, the queue is placed on a
// live node in its stead, and the creation completes.
func TestAQueueWhoseReplicaDiesWhileItIsCreatedMovesOn(t *testing.T) {
	nodes := []node.NodeID{1, 2, 3, 4, 5}
	c := newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096, ReplaceAfter: time.Second})
	c.advance(time.Second)
	placed := node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet("orders")
	// The replica that dies is not the metadata leader, which would take
	// the create's proposal down with it.
	leader, _ := c.node(1).n.MetaLeader()
	asked, dead := placed[0], placed[1]
	if dead == leader {
		dead = placed[2]
	}
	c.request(asked, 50, &wire.CreateQueue{ReqID: 100, Queue: "orders", Policy: wire.PolicyAll})
	c.node(dead).crash()
	for step := 0; !c.saw(event.QueueOpen, onQueue("orders"), by(asked)); step++ {
		if step > 300 {
			t.Fatalf("%s never opened its replica; events:\n%v", asked, c.events)
		}
		c.advance(10 * time.Millisecond)
	}
	if r := c.reply(100); r != nil {
		t.Fatalf("the create was answered %v while a replica of a policy-all queue had not prepared", r)
	}
	if v := viewOf(t, c.node(asked).n, "orders"); !slices.Contains(v.Replicas, dead) {
		t.Fatalf("the queue was placed on %v, without %s: the test proves nothing", v.Replicas, dead)
	}
	c.advance(4 * time.Second)
	c.mustReply(100, wire.StatusOK)
	v := viewOf(t, c.node(asked).n, "orders")
	if slices.Contains(v.Replicas, dead) || len(v.Replicas) != 3 || v.State != "active" {
		t.Fatalf("after the replacement the queue is %s on %v, want active on three nodes without %s", v.State, v.Replicas, dead)
	}
	if !c.saw(event.MetaReplicaReplaced, onQueue("orders")) {
		t.Fatalf("no replacement was reported; events:\n%v", c.events)
	}
	c.request(v.Owner, 1, &wire.Publish{ReqID: 200, Queue: "orders", ID: msgID(1), Payload: []byte("after")})
	c.settle()
	c.mustReply(200, wire.StatusOK)
}
