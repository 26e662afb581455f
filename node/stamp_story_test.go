package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A node started on a copy of another node's data directory refuses to
// start and says whose directory it is, instead of claiming raft entries
// and replicas it never held.
func TestANodeRefusesAnotherNodesDataDirectory(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	a, b := c.node(1), c.node(2)
	a.crash()
	a.fs = b.fs.CrashClone(vfsCfg)
	a.start()
	c.advance(time.Second)
	if !c.logged("n1 halted: the data directory \"\" belongs to node 2 of cluster \"\", but this is node 1") {
		t.Fatalf("n1 started on n2's data directory; events:\n%v", c.events)
	}
}

// A directory stamped for another cluster is refused the same way.
func TestANodeRefusesAnotherClustersDataDirectory(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096, Cluster: "east"})
	m := c.node(3)
	m.crash()
	c.cfg.Cluster = "west"
	m.start()
	c.advance(time.Second)
	if !c.logged("n3 halted: the data directory \"\" belongs to node 3 of cluster \"east\", but this is node 3 of cluster \"west\"") {
		t.Fatalf("n3 started on another cluster's data directory; events:\n%v", c.events)
	}
}
