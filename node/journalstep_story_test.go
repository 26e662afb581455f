package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A checkpoint of a busy queue carries a window of many thousand IDs into
// the journal. Appended in one go, they held the node's loop for 50 ms at
// 5,000 msg/s; now a finished build appends a few thousand a tick. Here
// 9,000 publishes fill the window past several steps of 1,024: some replica is
// seen part way through its journal after a tick, with publishes still
// confirmed meanwhile and its base rolling forward past the cut (the
// journal writes a copy of the window, so the base need not stand still
// and catch up in one long step after), and every replica's checkpoint is
// then built, certified and holds the whole window.
func TestAJournalIsWrittenAStepATick(t *testing.T) {
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: 10 * time.Millisecond, CheckpointRecords: 8000, JournalStepEntries: 1024})
	owner := c.createQueue("orders", wire.PolicyMajority)
	const n = 9000
	publishInTurns(c, owner, 1, n)
	midway, rolled, extra := false, false, uint64(n+1)
	baseAtFirstStep := map[node.NodeID]uint64{}
	for range 200 {
		c.advance(10 * time.Millisecond)
		for _, id := range []node.NodeID{1, 2, 3} {
			if pending, left := node.Journaling(c.node(id).n, "orders"); pending && left > 0 {
				midway = true
				applied, _ := node.BaseApplied(c.node(id).n, "orders")
				if first, seen := baseAtFirstStep[id]; !seen {
					baseAtFirstStep[id] = applied
				} else if applied > first {
					rolled = true
				}
				// The loop serves between steps.
				c.request(owner, 1, &wire.Publish{ReqID: extra, Queue: "orders", ID: msgID(extra), Payload: []byte{1}})
				c.settle()
				c.mustReply(extra, wire.StatusOK)
				extra++
			}
		}
		if c.saw(event.CheckpointCertified, onQueue("orders")) {
			break
		}
	}
	if !midway {
		t.Fatalf("no replica was ever seen part way through its journal: the window went in at once; events:\n%v", c.events)
	}
	if !rolled {
		t.Fatalf("no replica's base rolled forward while its journal was written (bases at the first step seen: %v)", baseAtFirstStep)
	}
	if !c.saw(event.CheckpointCertified, onQueue("orders")) {
		t.Fatalf("no checkpoint was certified; events:\n%v", c.events)
	}
	for _, id := range []node.NodeID{1, 2, 3} {
		if pending, _ := node.Journaling(c.node(id).n, "orders"); pending {
			t.Errorf("%s is still journaling after the certificate", id)
		}
		if kept, err := node.CheckpointStateMatches(c.node(id).n, "orders"); kept && err != nil {
			t.Errorf("%s's checkpoint state: %v", id, err)
		}
	}
}

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
	seq := uint64(1)
	publish := func(n uint64) {
		publishInTurns(c, owner, seq, n)
		seq += n
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

// publishInTurns publishes n messages to orders on owner, with IDs and
// request IDs from first on, a hundred to a turn, and lets the cluster
// settle after each turn.
func publishInTurns(c *cluster, owner node.NodeID, first, n uint64) {
	for i := first; i < first+n; i += 100 {
		var turn []wire.Message
		for j := i; j < min(i+100, first+n); j++ {
			turn = append(turn, &wire.Publish{ReqID: j, Queue: "orders", ID: msgID(j), Payload: []byte{byte(j)}})
		}
		c.requestTurn(owner, 1, turn...)
		c.settle()
	}
}
