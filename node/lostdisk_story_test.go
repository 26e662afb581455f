package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// loseDisk takes m down and gives it an empty disk, as a machine whose
// data directory was lost or replaced would come back.
func (m *member) loseDisk() {
	m.crash()
	m.fs = vfs.NewCrashableMem()
}

// followerLosesDisk creates queue orders with five confirmed messages,
// then takes the disk of its i-th follower, which is to start again with
// Rejoin set, as the documented procedure asks.
func followerLosesDisk(c *cluster, i int) (owner node.NodeID, lost *member) {
	owner = c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 5)
	lost = c.node(followers[i])
	lost.loseDisk()
	lost.rejoin = true
	return owner, lost
}

// A follower's disk is lost and the node starts over an empty data
// directory without anyone saying so. The metadata leader counts it as
// holding entries it no longer has (raft would panic on the first
// heartbeat): the node stops voting, tells the leader, which hands
// leadership on so the next leader probes it from scratch, and catches
// up. Its queue replica comes back empty and suspect, so when the owner
// dies next, the recovery does not take the empty replica's word alone.
func TestANodeThatLostItsDiskRejoinsSafely(t *testing.T) {
	c := newCluster(t)
	owner := c.createQueue("orders", wire.PolicyMajority)
	_, followers := roles("orders")
	c.publishConfirmed(owner, "orders", 5)
	lost := followers[0]
	c.node(lost).loseDisk()
	c.node(lost).start()
	c.advance(3 * time.Second)
	if !c.saw(event.MetaCatchingUp, by(lost)) {
		t.Fatalf("%s did not notice that its metadata log lost acknowledged entries; events:\n%v", lost, c.events)
	}
	if !c.saw(event.MetaCaughtUp, by(lost)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost, c.events)
	}
	if v := viewOf(t, c.node(lost).n, "orders"); v.Role != "follower" || v.LastIndex == 0 {
		t.Fatalf("%s's replica is %+v after rejoining, want a follower that caught up", lost, v)
	}
	c.node(owner).crash()
	c.advance(5 * time.Second)
	newOwner := recoveredOwner(t, c)
	c.mustDeliverAll(newOwner, "orders", 5, "after a node lost its disk and then the owner died")
}

// The documented procedure: the node is started with Rejoin over its empty
// data directory, so it grants no vote even before a leader has told it
// anything, and still catches up.
func TestRejoinAfterALostDisk(t *testing.T) {
	c := newCluster(t)
	_, lost := followerLosesDisk(c, 1)
	lost.start()
	c.advance(3 * time.Second)
	rejoined := func(e emission) bool { return strings.HasPrefix(e.Why(), "started over an empty data directory") }
	if !c.saw(event.MetaCatchingUp, by(lost.id), rejoined) {
		t.Fatalf("%s did not start catching up for its empty data directory; events:\n%v", lost.id, c.events)
	}
	if !c.saw(event.MetaCaughtUp, by(lost.id)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost.id, c.events)
	}
	if v := viewOf(t, lost.n, "orders"); v.LastIndex == 0 {
		t.Fatalf("the rejoined replica holds nothing: %+v", v)
	}
}

// Five nodes; a queue's records are confirmed by its owner and one
// follower while the other follower hears nothing. Then the owner dies
// and the follower that holds the records loses its disk and rejoins. Its
// metadata comes back by replaying the log, in which the queue is first
// still being created, so the replica it prepares looks like a new one;
// but this node once reported those records durable, so the replica must
// be suspect: a seal of it and the follower that never heard anything
// would otherwise choose an empty history and lose confirmed messages.
func TestARejoinedReplicaPreparedFromAReplayedLogIsSuspect(t *testing.T) {
	nodes := []node.NodeID{1, 2, 3, 4, 5}
	c := newClusterOf(t, node.Config{Nodes: nodes, Tick: 10 * time.Millisecond, SegmentSize: 4096})
	set := node.Placement{Nodes: nodes, Replicas: 3}.ReplicaSet("orders")
	owner, holder, deaf := set[0], set[1], set[2]
	c.request(owner, 99, &wire.CreateQueue{ReqID: 99, Queue: "orders", Policy: wire.PolicyMajority})
	c.advance(500 * time.Millisecond)
	c.mustReply(99, wire.StatusOK)
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		_, appendMsg := msg.(*wire.Append)
		return !(appendMsg && to == deaf)
	}
	c.publishConfirmed(owner, "orders", 5)
	c.node(owner).crash()
	h := c.node(holder)
	h.loseDisk()
	h.rejoin = true
	h.start()
	c.intercept = nil
	c.advance(8 * time.Second)
	c.node(owner).start()
	c.advance(5 * time.Second)
	c.mustDeliverAll(recoveredOwner(t, c), "orders", 5, "after the holder of the records lost its disk and the owner died")
}

// A node starts over an empty data directory with Rejoin, but hears from
// no leader before it crashes. What it bootstrapped makes its directory
// look whole, so without a durable record of the rejoin its next process
// would vote at once, as if its empty log were all it had acknowledged,
// and could elect a leader that lacks committed entries (seed 118545:
// that is how one epoch was handed out twice). The next process, started
// without Rejoin as a restart after a crash would be, still catches up
// before it votes, and once it has, the process after it does not.
func TestARejoiningNodeThatRestartsBeforeCatchingUpStillCatchesUp(t *testing.T) {
	c := newCluster(t)
	_, lost := followerLosesDisk(c, 0)
	c.intercept = func(_, to node.NodeID, _ wire.Message) bool { return to != lost.id }
	lost.start()
	c.advance(time.Second)
	lost.crash()
	lost.rejoin = false
	c.intercept = nil
	lost.start()
	c.advance(10 * time.Millisecond)
	restarted := func(e emission) bool { return strings.HasPrefix(e.Why(), "restarted before catching up") }
	if !c.saw(event.MetaCatchingUp, by(lost.id), restarted) {
		t.Fatalf("%s, restarted before it caught up, did not know it was still catching up; events:\n%v", lost.id, c.events)
	}
	c.advance(3 * time.Second)
	if !c.saw(event.MetaCaughtUp, by(lost.id)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost.id, c.events)
	}
	c.events, c.emitted = nil, nil
	lost.crash()
	lost.start()
	c.advance(time.Second)
	if c.saw(event.MetaCatchingUp, by(lost.id)) {
		t.Fatalf("%s caught up, yet its next process started catching up again; events:\n%v", lost.id, c.events)
	}
}

// A follower loses its disk while the leader has entries in flight to it
// and no other voter is up to take the leadership. The follower refuses
// the leader's probe at the entry it had acknowledged, and raft, which
// never lowers a follower's match, would probe that same entry again at
// once, and again after each refusal, without end; with a network that
// duplicates messages, the exchanges multiplied into a storm (seed
// 172470 of the long sweep). The leader probes it at most once per
// heartbeat instead, and once the other voter is back it catches up.
func TestALeaderDoesNotProbeAFollowerThatLostItsLogWithoutRest(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	others := othersThan(leader)
	down, lost := c.node(others[0]), c.node(others[1])
	// The lost follower's acknowledgments vanish, so the leader counts
	// entries in flight to it beyond its match.
	c.intercept = func(from, _ node.NodeID, msg wire.Message) bool {
		return from != lost.id || raftType(t, msg) != raftpb.MessageType_MsgAppResp
	}
	c.createQueue("orders", wire.PolicyMajority)
	down.crash()
	lost.loseDisk()
	probes, heartbeats := 0, 0
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		if from == leader && to == lost.id {
			switch raftType(t, msg) {
			case raftpb.MessageType_MsgApp:
				probes++
			case raftpb.MessageType_MsgHeartbeat:
				heartbeats++
			}
			// One probe may follow the refusal of the entries that were in
			// flight; every other one waits for a heartbeat's answer. Failing
			// here, not after the second, stops an exchange that never ends.
			if probes > heartbeats+1 {
				t.Fatalf("%s probed %s %d times after %d heartbeats", leader, lost.id, probes, heartbeats)
			}
		}
		return true
	}
	lost.start()
	c.advance(time.Second)
	if !c.saw(event.MetaFollowerLostLog, by(leader)) {
		t.Fatalf("%s never heard that %s lost its log; events:\n%v", leader, lost.id, c.events)
	}
	c.intercept = nil
	down.start()
	c.advance(3 * time.Second)
	if !c.saw(event.MetaCaughtUp, by(lost.id)) {
		t.Fatalf("%s never caught up with the metadata; events:\n%v", lost.id, c.events)
	}
}

// raftType is the type of the metadata raft message msg carries, or -1
// for any other message.
func raftType(t *testing.T, msg wire.Message) raftpb.MessageType {
	r, ok := msg.(*wire.Raft)
	if !ok {
		return -1
	}
	m := &raftpb.Message{}
	if err := proto.Unmarshal(r.Data, m); err != nil {
		t.Fatalf("a raft message does not decode: %v", err)
	}
	return m.GetType()
}

// A follower's report that its log lost entries makes the leader hand the
// leadership away, since raft never lowers a follower's match; a report
// the leader's count already agrees with (a copy the network duplicated,
// or one sent again) changes nothing, and the leadership stays.
func TestALeaderIgnoresALostLogReportItAlreadyAgreesWith(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	c.createQueue("orders", wire.PolicyMajority)
	follower := node.NodeID(1)
	if follower == leader {
		follower = 2
	}
	l := c.node(leader)
	term, match := node.MetaProgress(l.n, follower)
	if match == 0 {
		t.Fatalf("%s counts nothing of %s's log matching after a create", leader, follower)
	}
	l.run(func() { l.n.OnMessage(follower, &wire.MetaLostLog{Term: term, Last: match, Commit: match}) })
	c.advance(time.Second)
	if c.saw(event.MetaFollowerLostLog, by(leader)) || c.leader() != leader {
		t.Fatalf("a report of a log ending at %s's match %d moved the leadership from %s to %s; events:\n%v", follower, match, leader, c.leader(), c.events)
	}
	l.run(func() { l.n.OnMessage(follower, &wire.MetaLostLog{Term: term, Last: match - 1, Commit: match - 1}) })
	c.advance(time.Second)
	if !c.saw(event.MetaFollowerLostLog, by(leader)) {
		t.Fatalf("a report of a log ending below %s's match %d went unheard; events:\n%v", follower, match, c.events)
	}
}

// A follower loses its disk and rejoins, so its replica comes back
// suspect: it once reported records durable that it no longer holds.
// Cut off from the owner, it stays suspect until the owner dies; the
// queue then waits for the old owner's process, whose replica, reopened
// after a crash, is suspect too, and the recovery seals all three. The
// sealed replicas adopt the new epoch durably before the candidate's
// installing appends reach them, and those carry a commit of zero, since
// the new owner has confirmed nothing in its epoch yet: such an append
// proves nothing about a suspect replica's log, so it must not end the
// suspicion. A replica is trusted only once the new owner has confirmed
// records and its log agrees that far, and it says through which index.
func TestASuspectReplicaIsNotTrustedOnACommitOfZero(t *testing.T) {
	c := newCluster(t)
	owner, lost := followerLosesDisk(c, 0)
	c.intercept = func(from, to node.NodeID, msg wire.Message) bool {
		_, isAppend := msg.(*wire.Append)
		return !(isAppend && from == owner && to == lost.id)
	}
	lost.start()
	c.advance(3 * time.Second)
	if v := viewOf(t, lost.n, "orders"); !v.Suspect {
		t.Fatalf("%s's replica after rejoining, cut off from the owner: %+v, want it suspect", lost.id, v)
	}
	// With one of the two survivors suspect, no seal of them can be
	// trusted to find every confirmed record, so the queue waits for the
	// old owner's process to come back.
	c.node(owner).crash()
	c.intercept = nil
	c.advance(2 * time.Second)
	c.node(owner).start()
	c.advance(5 * time.Second)
	newOwner := recoveredOwner(t, c)
	throughZero := func(e emission) bool { return strings.HasSuffix(e.Why(), " through 0") }
	if c.saw(event.QueueTrusted, throughZero) {
		t.Fatalf("a suspect replica was trusted on a commit of zero; events:\n%v", c.events)
	}
	if !c.saw(event.QueueTrusted, by(lost.id)) {
		t.Fatalf("%s's replica was never trusted after the recovery; events:\n%v", lost.id, c.events)
	}
	c.mustDeliverAll(newOwner, "orders", 5, "after the recovery past a suspect replica")
}
