package node_test

import (
	"testing"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// TestAReplicaStateOfTheFirstFormatOpens: a replica state file written
// before it carried the known commit index (the identity and the epoch,
// 32 bytes) still opens. A dump reads its epoch, and the follower
// restarted over it keeps its replica, catches up and is trusted again,
// rather than fencing it as damaged.
func TestAReplicaStateOfTheFirstFormatOpens(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	f := c.node(followers[0])
	c.publishConfirmed(owner, "orders", 5)
	inc := currentIncarnation(t, c.node(owner), "orders")
	f.crash()
	var dir string
	names, _ := f.fs.List("queues")
	for _, name := range names {
		if q, i, ok := node.ParseReplicaDir(name); ok && q == "orders" && i == inc {
			dir = f.fs.PathJoin("queues", name)
		}
	}
	sf, data, err := storage.OpenStateFile(f.fs, dir, "replica", node.SyncAtOnce{})
	if err != nil || len(data) <= 32 {
		t.Fatalf("the follower's replica state in %q: %d bytes, %v", dir, len(data), err)
	}
	written := false
	sf.Write(data[:32], func(err error) {
		if err != nil {
			t.Fatalf("writing the first format: %v", err)
		}
		written = true
	})
	if !written {
		t.Fatal("the state file was not written")
	}
	want := wire.NewDecoder(data[24:]).Uint64()
	if d, ok := node.DumpReplica(f.fs, "", "orders", inc, 64, 1<<20); !ok || d.Err != nil || d.Epoch != want || want == 0 {
		t.Fatalf("a dump of the first format read epoch %d (err %v, found %v), want %d", d.Epoch, d.Err, ok, want)
	}
	f.start()
	c.resetPeers(f.id)
	c.settle()
	for i := uint64(6); i <= 10; i++ {
		c.publishAt(owner, "orders", i, msgID(i))
	}
	if c.saw(event.QueueFenced, by(f.id)) {
		t.Fatalf("the follower fenced a replica whose state file had the first format; events:\n%v", c.events)
	}
	if !c.saw(event.QueueTrusted, by(f.id), onQueue("orders")) {
		t.Fatalf("the owner never verified the restarted follower; events:\n%v", c.events)
	}
}
