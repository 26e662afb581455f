package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A replica hands its history only to the owner of the epoch it follows:
// a recovery's fetch comes from the candidate that sealed it, in that
// candidate's epoch. A fetch from any other node, or from its owner in
// another epoch (a candidate whose attempt the replica has since been
// sealed past, or one not yet heard of), is answered with a hint and no
// records: a stale or early candidate must not install what it was never
// entitled to read.
func TestAReplicaServesAFetchOnlyToItsEpochsOwner(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 10)
	_, followers := roles("orders")
	f, other := followers[0], followers[1]
	v := viewOf(t, c.node(f).n, "orders")

	cases := []struct {
		why   string
		from  node.NodeID
		epoch uint64
		serve bool
	}{
		{"the owner, in the epoch the replica follows", owner, v.Epoch, true},
		{"another follower, in that epoch", other, v.Epoch, false},
		{"the owner, in a later epoch", owner, v.Epoch + 1, false},
		{"another follower, in a later epoch", other, v.Epoch + 1, false},
	}
	for _, tc := range cases {
		c.msgs = nil
		m := c.node(f)
		m.run(func() {
			m.n.OnMessage(tc.from, &wire.Fetch{Queue: "orders", Incarnation: v.Incarnation, Epoch: tc.epoch})
		})
		reply := fetchReplyTo(t, c, f, tc.from)
		if served := len(reply.Entries) > 0; served != tc.serve {
			t.Errorf("a fetch from %s: %d records sent (ok %t, hint %d), want served %t",
				tc.why, len(reply.Entries), reply.OK, reply.Hint, tc.serve)
		}
	}
}

// fetchReplyTo finds the one fetch reply from sent to to among the
// messages in flight.
func fetchReplyTo(t *testing.T, c *cluster, from, to node.NodeID) *wire.FetchReply {
	t.Helper()
	var found *wire.FetchReply
	for _, e := range c.msgs {
		if e.from != from || e.to != to {
			continue
		}
		msg, err := wire.Decode(e.frame)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := msg.(*wire.FetchReply); ok {
			if found != nil {
				t.Fatalf("%s sent %s two fetch replies", from, to)
			}
			found = r
		}
	}
	if found == nil {
		t.Fatalf("%s answered %s's fetch with nothing", from, to)
	}
	return found
}

// A sealed replica also hands its checkpoint, chunk by chunk, to the
// owner of its epoch alone: an ack asking for the next chunk is answered
// only when it names this replica's incarnation and epoch. One for
// another incarnation of the queue (a replica dropped and made again) or
// another epoch gets nothing.
func TestAReplicaSendsCheckpointChunksOnlyForItsIncarnationAndEpoch(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, SegmentSize: 4096,
		CheckpointRecords: 20})
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 60)
	c.advance(2 * time.Second)
	_, followers := roles("orders")
	f := followers[0]
	if !c.saw(event.CheckpointBuilt, onQueue("orders"), by(f)) {
		t.Fatalf("%s built no checkpoint; events:\n%v", f, c.events)
	}
	v := viewOf(t, c.node(f).n, "orders")

	cases := []struct {
		why        string
		inc, epoch uint64
		send       bool
	}{
		{"its incarnation and epoch", v.Incarnation, v.Epoch, true},
		{"another incarnation", v.Incarnation + 1, v.Epoch, false},
		{"another epoch", v.Incarnation, v.Epoch + 1, false},
	}
	for _, tc := range cases {
		c.msgs = nil
		m := c.node(f)
		m.run(func() {
			m.n.OnMessage(owner, &wire.CheckpointAck{Queue: "orders", Incarnation: tc.inc, Epoch: tc.epoch})
		})
		sent := 0
		for _, e := range c.msgs {
			if msg, err := wire.Decode(e.frame); err == nil && e.from == f && e.to == owner {
				if _, ok := msg.(*wire.Checkpoint); ok {
					sent++
				}
			}
		}
		if (sent > 0) != tc.send {
			t.Errorf("an ack for %s: %d chunks sent, want some %t", tc.why, sent, tc.send)
		}
	}
}
