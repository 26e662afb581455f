package node_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// strandedTail is how the stories below leave a replica holding a tail
// of its log that the queue's next owner does not have.
type strandedTail struct {
	// old is the first owner, cut off from everyone, whose log ends in
	// records no other replica holds; agreed is the last record of its
	// log that the next owner's history shares, tail how many follow it.
	old    node.NodeID
	agreed uint64
	tail   int
	// owner is the next owner, serving in epoch 2.
	owner node.NodeID
}

// strandATail creates a queue and publishes messages 1..5, confirmed.
// Then the owner is cut off from everyone. Three more publishes reach it
// (IDs 101..103): it appends them to its own log and syncs them, but no
// follower hears of them, so none is confirmed. The metadata confirms
// the cut-off owner down and a follower recovers the queue in epoch 2
// without those records, and confirms messages 6 and 7 with the other
// follower. The old owner stays cut off.
func strandATail(t *testing.T, c *cluster) strandedTail {
	t.Helper()
	old := c.createQueue("orders", wire.PolicyMajority)
	c.publishConfirmed(old, "orders", 5)
	agreed := viewOf(t, c.node(old).n, "orders").Commit
	c.cut[old] = true
	for i := uint64(101); i <= 103; i++ {
		c.request(old, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	if v := viewOf(t, c.node(old).n, "orders"); v.LastIndex != agreed+3 {
		t.Fatalf("the cut-off owner's log ends at %d, want its three unconfirmed records after %d", v.LastIndex, agreed)
	}
	c.advance(5 * time.Second)
	owner := recoveredOwner(t, c)
	if owner == old {
		t.Fatalf("the cut-off owner %s recovered its own queue", old)
	}
	for i := uint64(6); i <= 7; i++ {
		c.request(owner, 1, &wire.Publish{ReqID: i, Queue: "orders", ID: msgID(i), Payload: []byte{byte(i)}})
	}
	c.settle()
	c.mustReply(6, wire.StatusOK)
	c.mustReply(7, wire.StatusOK)
	return strandedTail{old: old, agreed: agreed, tail: 3, owner: owner}
}

// rotBeforeTail flips one bit in the last record of m's log of queue that
// precedes its tail of tail records, as a decaying disk would while the
// replica is open. Dropping the tail cuts the segment right after that
// record and rereads the records the segment keeps, so the truncation
// meets the damage; nothing else reads the record before then.
func (c *cluster) rotBeforeTail(m *member, queue string, tail int, want uint64) {
	c.t.Helper()
	dir := m.fs.PathJoin("queues", fmt.Sprintf("%s.%016x", queue, currentIncarnation(c.t, m, queue)), "log")
	// RotSyncedFrame asks, in turn, whether to aim at the newest segment
	// (yes: the tail is at the end of the log), which of its last frames
	// to damage (the one just before the tail), which byte of the frame
	// (its last, in the record's body) and which bit of it.
	picks := 0
	pick := func(n int) int {
		picks++
		switch picks {
		case 1:
			return 1
		case 2:
			return n - 1 - tail
		case 3:
			return n - 1
		}
		return 0
	}
	rot, ok, err := storage.RotSyncedFrame(m.fs, m.fs.CrashClone(vfs.CrashCloneCfg{}), dir, pick)
	if err != nil || !ok {
		c.t.Fatalf("rotting a record of %s on %s: rotted %v, %v", queue, m.id, ok, err)
	}
	if rot.Index != want {
		c.t.Fatalf("the bit flipped in record %d of %s's log, want %d (the last before its tail)", rot.Index, m.id, want)
	}
}

// A cut-off owner holds a stranded tail, and a bit rots in the record
// just before it. When the owner is reconnected, it learns of epoch 2 and
// follows the new owner, whose appends conflict with the tail: dropping
// it rereads the damaged record. The replica fences itself and the
// metadata holds it lost. It does not go on refusing the owner's appends
// while it still counts as a healthy replica, and the queue keeps serving
// every confirmed message.
func TestAFollowerWhoseTruncationMeetsDamageIsFenced(t *testing.T) {
	c := newCluster(t)
	s := strandATail(t, c)
	c.rotBeforeTail(c.node(s.old), "orders", s.tail, s.agreed)

	delete(c.cut, s.old)
	c.advance(3 * time.Second)
	if !c.saw(event.QueueTruncate, by(s.old), onQueue("orders")) {
		t.Fatalf("%s never tried to drop its stranded tail; events:\n%v", s.old, c.events)
	}
	refused := 0
	for _, e := range c.emitted {
		if e.node == s.old && e.Name == event.QueueBadAppend {
			refused++
		}
	}
	if !c.saw(event.QueueFenced, by(s.old), onQueue("orders")) || refused > 0 {
		t.Fatalf("%s met damage dropping its stranded tail and was not fenced (fenced: %v): it refused %d appends of %s instead, still counted as a healthy replica",
			s.old, c.saw(event.QueueFenced, by(s.old)), refused, s.owner)
	}
	if v := viewOf(t, c.node(s.old).n, "orders"); !strings.Contains(v.Fenced, "while truncating") {
		t.Fatalf("%s's view is %+v, want it fenced for the damage its truncation met", s.old, v)
	}
	if lost := node.LostReplicas(c.node(s.owner).n, "orders"); !slices.Contains(lost, s.old) {
		t.Fatalf("the metadata holds %v lost, want the fenced replica on %s among them", lost, s.old)
	}

	// The owner confirms on with the last healthy follower, and every
	// confirmed message is there.
	c.request(s.owner, 1, &wire.Publish{ReqID: 8, Queue: "orders", ID: msgID(8), Payload: []byte{8}})
	c.settle()
	c.mustReply(8, wire.StatusOK)
	c.mustDeliverAll(s.owner, "orders", 8, "after the follower whose truncation met damage was fenced")
}

// A cut-off owner holds a stranded tail, and a bit rots in the record
// just before it. Then the owner of epoch 2 crashes just as the old owner
// is reconnected: the old owner, first in placement order, is the
// candidate of epoch 3. Its seal finds the remaining follower's history
// of epoch 2 the one to keep, so its recovery drops the stranded tail,
// which rereads the damaged record. The candidate fences its replica at
// once, rather than wait for a Truncated that never comes and start over
// into the same damage for good; the metadata holds it lost and hands
// the recovery to a healthy replica, which completes it with every
// confirmed message once the crashed owner is back to make a quorum.
func TestARecoveryWhoseTruncationMeetsDamageFencesTheCandidate(t *testing.T) {
	c := newCluster(t)
	s := strandATail(t, c)
	c.rotBeforeTail(c.node(s.old), "orders", s.tail, s.agreed)

	c.node(s.owner).crash()
	delete(c.cut, s.old)
	c.advance(5 * time.Second)
	if !c.saw(event.RecoveryStart, by(s.old), onQueue("orders"), inEpoch(3)) || !c.saw(event.QueueTruncate, by(s.old), onQueue("orders")) {
		t.Fatalf("%s did not recover epoch 3 by dropping its stranded tail; events:\n%v", s.old, c.events)
	}
	attempts := 0
	for _, e := range c.emitted {
		if e.node == s.old && e.Name == event.RecoveryStart {
			attempts++
		}
	}
	if !c.saw(event.QueueFenced, by(s.old), onQueue("orders")) {
		v := viewOf(t, c.node(s.old).n, "orders")
		t.Fatalf("%s met damage dropping its stranded tail in a recovery and was not fenced: it made %d recovery attempts and is still the %s of epoch %d",
			s.old, attempts, v.Role, v.Epoch)
	}
	if attempts != 1 {
		t.Fatalf("%s made %d recovery attempts, want the one that met the damage", s.old, attempts)
	}
	if lost := node.LostReplicas(c.node(s.old).n, "orders"); !slices.Contains(lost, s.old) {
		t.Fatalf("the metadata holds %v lost, want the fenced replica on %s among them", lost, s.old)
	}

	// The crashed owner of epoch 2 returns; with the last follower it
	// makes a quorum of healthy replicas, and the queue serves again.
	c.node(s.owner).start()
	c.advance(5 * time.Second)
	next := recoveredOwner(t, c)
	if next == s.old {
		t.Fatalf("the fenced replica on %s finished a recovery", s.old)
	}
	c.request(next, 1, &wire.Publish{ReqID: 8, Queue: "orders", ID: msgID(8), Payload: []byte{8}})
	c.settle()
	c.mustReply(8, wire.StatusOK)
	c.mustDeliverAll(next, "orders", 8, "after the candidate whose truncation met damage was fenced")
}
