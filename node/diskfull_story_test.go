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
