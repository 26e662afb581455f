package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A follower's checkpoint file takes long to land (its sync is held), so
// the owner gives up on that cut and asks for a newer one while the
// follower is still writing. The follower's base rolls forward while it
// writes, but not past the cut now asked for: a base rolled past a cut
// cannot be built from, and the build would decode the whole checkpoint
// instead, a stall as long as the window is big.
func TestABaseDoesNotRollPastACutAskedWhileACheckpointIsWritten(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, CheckpointRecords: 2000, JournalStepEntries: 256})
	owner := c.createQueue("orders", wire.PolicyMajority)
	f := node.NodeID(1)
	if f == owner {
		f = 2
	}
	c.hold = func(s pendingSync) bool {
		st, err := s.f.Stat()
		return s.m.id == f && err == nil && st.Name() == "checkpoint.tmp"
	}
	seq := uint64(0)
	publish := func(n int) {
		for i := 0; i < n; i += 100 {
			var turn []wire.Message
			for range 100 {
				seq++
				turn = append(turn, &wire.Publish{ReqID: seq, Queue: "orders", ID: msgID(seq), Payload: []byte{byte(seq)}})
			}
			c.requestTurn(owner, 1, turn...)
			c.settle()
		}
	}
	publish(2100)
	var first uint64
	for range 300 {
		c.advance(10 * time.Millisecond)
		if want, cut, busy := node.CheckpointAsked(c.node(f).n, "orders"); busy && want > cut {
			first = want
			break
		}
	}
	if first == 0 {
		t.Fatalf("%s never began writing a checkpoint; events:\n%v", f, c.events)
	}
	// The owner gives up on the cut f cannot finish and asks again.
	var second uint64
	for range 60 {
		publish(100)
		c.advance(100 * time.Millisecond)
		if want, _, busy := node.CheckpointAsked(c.node(f).n, "orders"); !busy {
			t.Fatalf("%s stopped writing its checkpoint while its sync was held", f)
		} else if want > first {
			second = want
			break
		}
	}
	if second == 0 {
		t.Fatalf("the owner never asked for a newer cut than %d while %s wrote it; events:\n%v", first, f, c.events)
	}
	publish(500)
	c.advance(200 * time.Millisecond)
	if applied, kept := node.BaseApplied(c.node(f).n, "orders"); !kept || applied > second {
		t.Fatalf("while its checkpoint at %d was written, %s's base rolled to %d (kept %v), past the cut %d asked meanwhile", first, f, applied, kept, second)
	} else if applied <= first {
		t.Fatalf("%s's base stood at %d, the cut being written, instead of rolling toward %d", f, applied, second)
	}
	c.hold = nil
	c.advance(time.Second)
	if _, cut, _ := node.CheckpointAsked(c.node(f).n, "orders"); cut < second {
		t.Fatalf("once its sync landed, %s's checkpoint is at %d, want the cut %d asked meanwhile or later", f, cut, second)
	}
}
