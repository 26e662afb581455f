package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower's node runs short of space while its owner has plenty. The
// follower stores every message its owner takes, so the owner refuses
// new messages with disk-full, naming the follower, as it would for its
// own disk; acks go on. Once the follower has room again, publishes are
// taken again without anyone stepping in.
func TestAFollowersFullDiskStopsPublishesToItsQueues(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 5)
	full := node.NodeID(1 + owner%3)
	f := c.node(full)
	f.crash()
	f.tweak = func(cfg *node.Config) { cfg.DataBytesMax = 1 } // anything held is past the quota
	f.start()
	c.advance(time.Second)
	if !c.saw(event.NodeDiskFull, by(full)) || !c.saw(event.QueueFollowerFull, by(owner)) {
		t.Fatalf("the owner %s did not hear that %s is full; events:\n%v", owner, full, c.events)
	}

	c.request(owner, 1, &wire.Publish{ReqID: 100, Queue: "orders", ID: msgID(100), Payload: []byte("one too many")})
	c.settle()
	if r := c.mustReply(100, wire.StatusDiskFull); !strings.Contains(r.Detail, full.String()) {
		t.Fatalf("the refusal %q does not name the full follower %s", r.Detail, full)
	}
	c.mustDeliverAll(owner, "orders", 5, "while a follower is full")

	f.crash()
	f.tweak = nil
	f.start()
	c.advance(time.Second)
	if !c.saw(event.QueueFollowerRoom, by(owner)) {
		t.Fatalf("the owner %s did not hear that %s has room again; events:\n%v", owner, full, c.events)
	}
	c.request(owner, 1, &wire.Publish{ReqID: 101, Queue: "orders", ID: msgID(101), Payload: []byte("room again")})
	c.settle()
	c.mustReply(101, wire.StatusOK)
}

// A purge empties a queue whose checkpoint holds every message it took
// and more than the quota allows. Only a checkpoint gives that space
// back, and with publishes refused the queue confirms too few records
// to reach the checkpoint cadence: the owner checkpoints at once because
// a replica is short of space and the queue's state is a fraction of
// what it keeps, so each node has room again in a moment and takes
// messages (seed 290617 of the long sweep: a purge left a 199 KB
// checkpoint of purged messages over a 96 KB quota, and the queue's
// dead-letter queue could not be created for the rest of the run).
func TestAPurgeOnAFullDiskGivesTheSpaceBackWithoutWaitingForTheCadence(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20, DataBytesMax: 16 << 10})
	owner := c.createQueue("orders", wire.PolicyMajority)
	payload := make([]byte, 1000)
	for i := uint64(1); i <= 24; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: payload})
	}
	c.settle()
	for i := uint64(1); i <= 24; i++ {
		c.mustReply(i, wire.StatusOK)
	}
	c.advance(time.Second)
	for _, id := range []node.NodeID{1, 2, 3} {
		if !c.saw(event.NodeDiskFull, by(id)) {
			t.Fatalf("n%d did not run short of space with 24 KB over a 16 KB quota; events:\n%v", id, c.events)
		}
	}

	c.request(owner, 6, &wire.Purge{ReqID: 30, Queue: "orders"})
	c.settle()
	c.mustReply(30, wire.StatusOK)
	c.advance(time.Second)
	for _, id := range []node.NodeID{1, 2, 3} {
		if !c.saw(event.NodeDiskOK, by(id)) {
			t.Fatalf("n%d still holds the purged messages a second after the purge; events:\n%v", id, c.events)
		}
	}
	c.request(owner, 1, &wire.Publish{ReqID: 31, Queue: "orders", ID: msgID(31), Payload: payload})
	c.settle()
	c.mustReply(31, wire.StatusOK)
}
