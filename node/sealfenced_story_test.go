package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower is sealed at a new epoch, and while the epoch is being
// written its storage is found damaged and the replica fenced. It must
// not answer the seal once the write lands: the answer is its word that
// it holds the epoch and its log durably, and a fenced replica holds
// nothing it can vouch for. Answered, the candidate would count a
// witness whose history is gone.
func TestAReplicaFencedWhileWritingItsSealedEpochDoesNotAnswer(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(owner, "orders", 3)
	_, followers := roles("orders")
	f, candidate := c.node(followers[0]), followers[1]
	inc := currentIncarnation(t, f, "orders")
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == f.id && err == nil && st.Name() == "replica.tmp"
	}
	var answers int
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if _, ok := msg.(*wire.SealReply); ok && from == f.id && to == candidate {
			answers++
		}
		return true
	}
	f.run(func() { f.n.OnMessage(candidate, &wire.Seal{Queue: "orders", Incarnation: inc, Epoch: 9}) })
	c.settle()
	if answers != 0 {
		t.Fatalf("%s answered the seal before its epoch was durable", f.id)
	}
	f.run(func() { node.FenceReplica(f.n, "orders") })
	c.hold = nil
	c.advance(100 * time.Millisecond)
	if answers != 0 {
		t.Fatalf("%s, fenced while its sealed epoch was written, answered the seal %d times", f.id, answers)
	}
}
