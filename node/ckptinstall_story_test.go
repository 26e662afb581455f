package node_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// chunkedCluster is a cluster that checkpoints every 20 records and sends
// checkpoints in 256-byte chunks, with one queue whose 200 confirmed
// messages are all live and whose owner has compacted its log. It returns
// the owner and the follower that will lose its disk.
func chunkedCluster(t *testing.T) (*cluster, node.NodeID, node.NodeID) {
	c, owner, followers := checkpointingCluster(t, 256, 200)
	if !c.saw(event.QueueCompacted, onQueue("orders"), by(owner)) {
		t.Fatalf("the owner never compacted its log; events:\n%v", c.events)
	}
	return c, owner, followers[1]
}

// checkpointingCluster is a three-node cluster that checkpoints every 20
// records (sending checkpoints in chunks of chunkBytes, 0 for the
// default), with one majority queue holding n confirmed messages, given
// two seconds to checkpoint them.
func checkpointingCluster(t *testing.T, chunkBytes int, n uint64) (c *cluster, owner node.NodeID, followers []node.NodeID) {
	c = newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20, CheckpointChunkBytes: chunkBytes})
	owner = c.createQueue("orders", wire.PolicyMajority)
	_, followers = roles("orders")
	c.publishConfirmed(owner, "orders", n)
	c.advance(2 * time.Second)
	return c, owner, followers
}

// rejoinEmpty starts lost over an empty data directory, as an operator
// does after losing a disk, and gives it three seconds to catch up.
func rejoinEmpty(c *cluster, lost node.NodeID) {
	c.node(lost).loseDisk()
	c.node(lost).rejoin = true
	c.node(lost).start()
	c.resetPeers(lost)
	c.advance(3 * time.Second)
}

// checkpointChunks counts the checkpoint chunks delivered from one node to
// another, and drops the ones drop picks.
type checkpointChunks struct {
	sent, resumed int
	drop          func(m *wire.Checkpoint, n int) bool
}

func (cc *checkpointChunks) watch(c *cluster) {
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		m, ok := msg.(*wire.Checkpoint)
		if !ok {
			return true
		}
		cc.sent++
		if m.Offset == 0 && cc.sent > 1 {
			cc.resumed++
		}
		return cc.drop == nil || !cc.drop(m, cc.sent)
	}
}

// A follower that lost its disk after the owner compacted its log can
// only catch up from the checkpoint, which is larger than a message may
// be: it arrives in chunks, each asked for by the follower, and the
// follower ends up holding what the owner holds, so the owner's death
// loses nothing.
func TestARejoinedFollowerTakesTheCheckpointInChunks(t *testing.T) {
	c, owner, lost := chunkedCluster(t)
	var cc checkpointChunks
	cc.watch(c)
	rejoinEmpty(c, lost)
	if !c.saw(event.CheckpointInstalled, by(lost), onQueue("orders")) {
		t.Fatalf("%s never installed the owner's checkpoint; events:\n%v", lost, c.events)
	}
	ov, lv := viewOf(t, c.node(owner).n, "orders"), viewOf(t, c.node(lost).n, "orders")
	if cc.sent < 4 || lv.CheckpointBytes <= 3*256 {
		t.Fatalf("the checkpoint (%d bytes) came in %d messages, want several chunks of 256 bytes", lv.CheckpointBytes, cc.sent)
	}
	if lv.LastIndex != ov.LastIndex || lv.CheckpointIndex > ov.LastIndex || lv.CheckpointBytes == 0 {
		t.Fatalf("after the transfer the follower holds %+v, the owner %+v", lv, ov)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 200, "after the owner died, with a follower rebuilt from a chunked checkpoint")
}

// A chunk lost on the way (here the third, twice) stalls the transfer
// only until the owner, having heard nothing, sends the first chunk again:
// the follower answers with where it stands and the transfer goes on from
// there, not from the start.
func TestALostCheckpointChunkIsSentAgain(t *testing.T) {
	c, owner, lost := chunkedCluster(t)
	dropped := 0
	cc := checkpointChunks{drop: func(m *wire.Checkpoint, n int) bool {
		if m.Offset == 512 && dropped < 2 {
			dropped++
			return true
		}
		return false
	}}
	cc.watch(c)
	rejoinEmpty(c, lost)
	if !c.saw(event.CheckpointInstalled, by(lost), onQueue("orders")) {
		t.Fatalf("%s never installed the owner's checkpoint after a lost chunk; events:\n%v", lost, c.events)
	}
	if cc.resumed == 0 {
		t.Fatalf("no transfer resumed after the lost chunk (%d chunks)", cc.sent)
	}
	lv := viewOf(t, c.node(lost).n, "orders")
	if whole := (lv.CheckpointBytes + 255) / 256; dropped != 2 || cc.sent > whole+6 {
		t.Fatalf("%d chunks for a %d-byte checkpoint: the transfer started over instead of resuming", cc.sent, lv.CheckpointBytes)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 200, "after a chunk was lost and the owner died")
}

// Checkpoint chunks can outlive the replica they were sent to: the queue
// is gone from the node, or its replica there was dropped and made anew
// under another incarnation. A follower that lost its disk is sent the
// owner's checkpoint; just before the first chunk, it is handed one for a
// queue it does not hold and a whole, garbled one for another incarnation
// of its replica. It ignores both, installs the owner's, and loses
// nothing when the owner dies.
func TestCheckpointChunksForAnotherReplicaAreIgnored(t *testing.T) {
	c, owner, lost := chunkedCluster(t)
	strays := 0
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		m, ok := msg.(*wire.Checkpoint)
		if !ok || to != lost || m.Offset != 0 || strays > 0 {
			return true
		}
		elsewhere := *m
		elsewhere.Queue = "elsewhere"
		garbled := *m
		garbled.Incarnation++
		garbled.State = []byte("not a checkpoint of any queue")
		garbled.Total = uint64(len(garbled.State))
		l := c.node(lost)
		for _, stray := range []*wire.Checkpoint{&elsewhere, &garbled} {
			l.run(func() { l.n.OnMessage(from, stray) })
			strays++
		}
		return true
	}
	rejoinEmpty(c, lost)
	if strays != 2 {
		t.Fatalf("%d stray checkpoints handed over, want 2", strays)
	}
	if c.saw(event.QueueFenced, by(lost)) {
		t.Fatalf("%s fenced a replica over a checkpoint meant for another; events:\n%v", lost, c.events)
	}
	if !c.saw(event.CheckpointInstalled, by(lost), onQueue("orders")) {
		t.Fatalf("%s never installed the owner's checkpoint; events:\n%v", lost, c.events)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 200, "after stray checkpoints and the owner's death")
}

// TestALateCopyOfAReplicasOwnCheckpointLeavesItsLog: a follower that
// took the owner's checkpoint and has since appended past its cut gets a
// late copy of the same checkpoint (a resend that crossed its answer). It
// already holds that cut, so it keeps its log and says so: installed
// again, the cut
// would reset the log to the checkpoint and drop records past it that the
// follower had reported durable, which the owner may have counted toward
// a confirmation.
func TestALateCopyOfAReplicasOwnCheckpointLeavesItsLog(t *testing.T) {
	c, owner, followers := checkpointingCluster(t, 0, 200)
	lost := followers[1]
	var sent *wire.Checkpoint
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if m, ok := msg.(*wire.Checkpoint); ok && to == lost && sent == nil {
			copied := *m
			sent = &copied
		}
		return true
	}
	rejoinEmpty(c, lost)
	if sent == nil || sent.Offset != 0 || uint64(len(sent.State)) != sent.Total {
		t.Fatalf("the owner sent the rejoined follower no whole checkpoint in one message: %+v", sent)
	}
	c.intercept = nil
	for i := uint64(201); i <= 220; i++ {
		c.publishAt(owner, "orders", i, msgID(i))
	}
	before := viewOf(t, c.node(lost).n, "orders").LastIndex
	if before <= sent.Cut {
		t.Fatalf("the follower's log ends at %d, not past the checkpoint's cut %d", before, sent.Cut)
	}
	installs := c.count(event.CheckpointInstalled, by(lost), onQueue("orders"))
	l := c.node(lost)
	l.run(func() { l.n.OnMessage(owner, sent) })
	c.settle()
	if after := viewOf(t, l.n, "orders").LastIndex; after < before {
		t.Fatalf("a late copy of its own checkpoint cut the follower's log from %d back to %d", before, after)
	}
	if n := c.count(event.CheckpointInstalled, by(lost), onQueue("orders")); n != installs {
		t.Fatalf("the follower installed its own checkpoint again (%d installs, %d before)", n, installs)
	}
	// Nor is the copy refused as below what the follower knows was
	// confirmed: its log starts past the cut now, but the checkpoint is
	// the one it holds, and the owner is told it has it.
	if c.saw(event.CheckpointRefused, by(lost), onQueue("orders")) {
		t.Fatalf("the follower refused a late copy of the checkpoint it holds; events:\n%v", c.events)
	}
}

// TestACheckpointThatDoesNotDecodeIsRefused: a rejoined follower is sent
// the owner's checkpoint, and the one copy it receives carries a state
// that does not decode, though its digest has the right length (a sender
// with a bug, or bytes changed on the way past a checksum). The follower
// refuses it, says why, and keeps the log it has; the owner's next offer
// is installed, and the queue still holds everything.
func TestACheckpointThatDoesNotDecodeIsRefused(t *testing.T) {
	c, owner, followers := checkpointingCluster(t, 0, 200)
	lost := followers[1]
	var sent *wire.Checkpoint
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		m, ok := msg.(*wire.Checkpoint)
		if ok && to == lost && sent == nil {
			copied := *m
			sent = &copied
		}
		return !ok || to != lost
	}
	rejoinEmpty(c, lost)
	if sent == nil || sent.Offset != 0 || uint64(len(sent.State)) != sent.Total || len(sent.Digest) != 32 {
		t.Fatalf("the owner sent the rejoined follower no whole checkpoint in one message: %+v", sent)
	}
	garbled := *sent
	garbled.State = bytes.Repeat([]byte{0xff}, len(sent.State))
	before := viewOf(t, c.node(lost).n, "orders")
	l := c.node(lost)
	l.run(func() { l.n.OnMessage(owner, &garbled) })
	c.settle()
	e, ok := c.last(event.CheckpointRefused)
	if !ok || e.node != lost || !strings.Contains(e.String(), "does not decode") {
		t.Fatalf("the follower did not refuse a checkpoint that does not decode (last refusal %v); events:\n%v", e, c.events)
	}
	if after := viewOf(t, l.n, "orders"); after.CheckpointIndex != before.CheckpointIndex || after.LastIndex != before.LastIndex {
		t.Fatalf("the refused checkpoint changed the follower: checkpoint %d → %d, log end %d → %d",
			before.CheckpointIndex, after.CheckpointIndex, before.LastIndex, after.LastIndex)
	}
	c.intercept = nil
	c.advance(3 * time.Second)
	if !c.saw(event.CheckpointInstalled, by(lost), onQueue("orders")) {
		t.Fatalf("%s never installed the owner's next offer; events:\n%v", lost, c.events)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 200, "after a checkpoint that did not decode was refused")
}

// A follower that lost its disk takes the owner's checkpoint, and its
// disk refuses to set its old log aside for the checkpoint's fresh one.
// Its replica holds no log then, neither the old nor a new one, and
// could take no append again: the node halts rather than go on as a
// member that never catches up, and the queue goes on with the other
// two.
func TestAFollowerThatCannotResetItsLogForACheckpointHalts(t *testing.T) {
	c, owner, lost := chunkedCluster(t)
	c.node(lost).fault = errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename && strings.HasSuffix(op.Path, "log") {
			return errors.New("injected: the rename failed")
		}
		return nil
	})
	rejoinEmpty(c, lost)
	want := fmt.Sprintf("%s halted: queue orders: resetting its log after a checkpoint: ", lost)
	if !c.logged(want) {
		t.Fatalf("%s went on without a log; want %q; events:\n%v", lost, want, c.events)
	}
	if c.saw(event.CheckpointInstalled, by(lost), onQueue("orders")) {
		t.Fatalf("%s reported a checkpoint installed over a log it could not reset", lost)
	}
	c.mustDeliverAll(owner, "orders", 200, "after a follower halted resetting its log")
}
