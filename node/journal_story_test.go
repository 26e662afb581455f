package node_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A queue's replicas keep the IDs they still deduplicate in the window
// journal, beside checkpoints that only name them. Here every message is
// published, delivered and acked, the replicas checkpoint and compact,
// the followers restart from their checkpoints and journals, and then the
// owner dies. The recovered owner's log no longer holds the first
// publish, so only the journal can tell it that message's ID: a retry of
// it must be answered with its original index and stored nothing twice.
func TestTheWindowSurvivesInTheJournal(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20})
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	const consumer node.ConnID = 5
	c.request(owner, consumer, &wire.Subscribe{ReqID: 5000, Queue: "orders", Window: 200, Lease: 10 * time.Second})
	const n = 100
	index := map[wire.MessageID]uint64{}
	for i := uint64(1); i <= n; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	for i := uint64(1); i <= n; i++ {
		index[msgID(i)] = c.mustReply(i, wire.StatusOK).Index
	}
	c.mustReply(5000, wire.StatusOK)
	deliveries := c.deliveries(consumer)
	if len(deliveries) != n {
		t.Fatalf("%d deliveries of %d messages", len(deliveries), n)
	}
	for i, d := range deliveries {
		c.request(owner, consumer, &wire.Settle{ReqID: 6000 + uint64(i), Queue: "orders", ID: d.ID, Lease: d.Lease})
	}
	c.settle()
	for i := range deliveries {
		c.mustReply(6000+uint64(i), wire.StatusOK)
	}
	c.advance(2 * time.Second)

	for _, f := range followers {
		if !c.saw(event.QueueCompacted, onQueue("orders"), by(f)) {
			t.Fatalf("%s never compacted its log; events:\n%v", f, c.events)
		}
		// What its last build left in memory, acked IDs and all, is what
		// its checkpoint holds: a new owner would serve from it.
		if kept, err := node.CheckpointStateMatches(c.node(f).n, "orders"); !kept || err != nil {
			t.Fatalf("%s's checkpoint state in memory (kept %v): %v", f, kept, err)
		}
		c.node(f).crash()
		c.node(f).start()
		c.resetPeers(f)
	}
	c.advance(time.Second)
	c.node(owner).crash()
	c.advance(5 * time.Second)
	next := recoveredOwner(t, c)
	if v := viewOf(t, c.node(next).n, "orders"); v.FirstIndex <= index[msgID(1)] {
		t.Fatalf("the recovered owner's log starts at %d, before the first publish at %d: the test proves nothing", v.FirstIndex, index[msgID(1)])
	}
	c.request(next, 1, &wire.Publish{ReqID: 9001, Queue: "orders", ID: msgID(1), Payload: []byte{1}})
	c.settle()
	if got := c.mustReply(9001, wire.StatusOK).Index; got != index[msgID(1)] {
		t.Fatalf("a retry of an acked message was answered with index %d, want its original %d: the window was lost", got, index[msgID(1)])
	}
}

// A follower's disk refuses to make the directory of its window journal
// when its first checkpoint is built. Its replica could not checkpoint
// then, nor ever after (a build stays under way until its journal is
// written), so its log would grow for good while its peers compact:
// the node halts instead, and the queue goes on with the other two.
func TestAFollowerThatCannotStartItsWindowJournalHalts(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20})
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	f := followers[0]
	refused := errors.New("injected: no room for a directory")
	c.node(f).fault = errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.Contains(op.Path, "window") {
			return refused
		}
		return nil
	})
	c.publishConfirmed(owner, "orders", 60)
	c.advance(2 * time.Second)
	want := fmt.Sprintf("%s halted: queue orders: starting its window journal: ", f)
	if !c.logged(want) {
		t.Fatalf("%s went on without its window journal; want %q; events:\n%v", f, want, c.events)
	}
	if c.saw(event.CheckpointBuilt, onQueue("orders"), by(f)) {
		t.Fatalf("%s reported a checkpoint it could not journal", f)
	}
	c.mustDeliverAll(owner, "orders", 60, "after a follower halted on its journal")
}

// A follower restarts over a checkpoint whose window lives in the
// journal, and its disk fails to read the journal's files: an I/O error,
// not damage. It must not take the error for damage and fence a sound
// replica (in a cluster of three with no node to replace it on, a queue
// that confirms on every replica would stop for good); it halts, and once
// the disk answers again its restart opens the replica and serves on.
func TestAJournalThatCannotBeReadAtARestartHaltsRatherThanFences(t *testing.T) {
	c, owner, followers := checkpointingCluster(t, 0, 60)
	f := followers[0]
	if !c.saw(event.CheckpointBuilt, onQueue("orders"), by(f)) {
		t.Fatalf("%s built no checkpoint; events:\n%v", f, c.events)
	}
	c.node(f).crash()
	// The disk answers the journal's first two reads of its records,
	// which open it (a scan, then a look at its tail), and fails those
	// after, which read the window. Should opening take more reads, the
	// halt names the open instead and the test fails, never passes idle.
	reads := 0
	c.node(f).fault = errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.Contains(op.Path, "window") || op.Kind != errorfs.OpFileReadAt || op.Offset == 0 {
			return nil
		}
		if reads++; reads > 2 {
			return errors.New("injected: the device did not answer")
		}
		return nil
	})
	c.node(f).start()
	c.advance(time.Second)
	want := fmt.Sprintf("%s halted: opening queue orders: reading the checkpoint of orders: ", f)
	if !c.logged(want) {
		t.Fatalf("%s opened its replica without reading its journal; want %q; events:\n%v", f, want, c.events)
	}
	if c.saw(event.QueueFenced, onQueue("orders"), by(f)) {
		t.Fatalf("%s fenced a sound replica on an I/O error; events:\n%v", f, c.events)
	}

	c.node(f).fault = nil
	c.node(f).start()
	c.resetPeers(f)
	c.advance(2 * time.Second)
	if c.saw(event.QueueFenced, onQueue("orders"), by(f)) {
		t.Fatalf("%s fenced its replica once the disk answered; events:\n%v", f, c.events)
	}
	// With the other follower down, only the restarted one can make a
	// majority with the owner.
	c.node(followers[1]).crash()
	for i := uint64(61); i <= 70; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	for i := uint64(61); i <= 70; i++ {
		c.mustReply(i, wire.StatusOK)
	}
	c.mustDeliverAll(owner, "orders", 70, "with the restarted follower the owner's only peer")
}
