package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// An owner loses only its link to the metadata leader: its followers go
// on taking its appends, so it goes on serving, while the leader finds it
// silent and plans a recovery. The candidate's seal does not reach the
// old owner, which serves on; it seals both followers, and the one that
// is not the candidate took the old owner's appends until its seal, so
// the old owner's quorum stays fresh for up to the silence limit (60ms)
// after that. The metadata activates the candidate well within that
// time. The new owner admits publishes at once, since the sealed
// witnesses refuse the old owner's appends and it alone can confirm
// anything now. But delivering or taking acks then would make two owners
// of the recovered messages at once (in the long sweep, seed 374216: a
// stalled older candidate activated its epoch after the newer one had,
// on such a quorum). So for the rest it outwaits the old owner: a
// subscription waits, an ack is refused as unavailable, and its status
// says it is still a candidate, until the limit and a quarter have passed
// since the latest acceptance a sealed witness gave, no sooner and not
// much later, after the old owner stepped back.
func TestARecoveredOwnerOutwaitsTheOldOwnersQuorum(t *testing.T) {
	c := newCluster(t)
	owner, newOwner := recoveredOwnerOutwaiting(t, c)
	var sealed emission
	for _, e := range c.emitted {
		if e.Name == event.RecoveryStage && sealedOK(e) && e.node == newOwner {
			sealed = e
		}
	}
	if sealed.at.IsZero() || !c.saw(event.MetaRecoveryActivated, by(newOwner), inEpoch(2)) {
		t.Fatalf("%s outwaits before its seal stage ended or before the metadata activated it; events:\n%v", newOwner, c.events)
	}
	c.request(newOwner, 7, &wire.Publish{ReqID: 60, Queue: "orders", ID: msgID(60)})
	c.request(newOwner, 8, &wire.Subscribe{ReqID: 61, Queue: "orders", Window: 10, Lease: time.Second})
	c.request(newOwner, 8, &wire.Settle{ReqID: 62, Queue: "orders", ID: msgID(1)})
	c.settle()
	c.mustReply(60, wire.StatusOK)
	c.noReply(61)
	c.mustReply(62, wire.StatusUnavailable)
	if c.saw(event.QueueActive, by(newOwner)) {
		t.Fatal("the recovered owner served in full before it outwaited the old owner's quorum")
	}
	if v := viewOf(t, c.node(newOwner).n, "orders"); v.Role != "candidate" {
		t.Fatalf("an owner that outwaits an older one says its role is %q, want candidate", v.Role)
	}

	c.advance(200 * time.Millisecond)
	var active, stepped emission
	for _, e := range c.emitted {
		switch {
		case e.Name == event.QueueActive && e.node == newOwner && active.at.IsZero():
			active = e
		case e.node == owner && (e.Name == event.QueueQuorumLost || e.Name == event.QueueRole && e.From() == "owner") && stepped.at.IsZero():
			stepped = e
		}
	}
	if active.at.IsZero() {
		t.Fatalf("the recovered owner does not serve 200ms after it began to outwait; events:\n%v", c.events)
	}
	if e, ok := c.last(event.QueueOutwaited); !ok || e.node != newOwner || e.Admitted() != 1 {
		t.Fatalf("the end of the wait was reported as %v (%v), want one publish admitted meanwhile by %s", e, ok, newOwner)
	}
	// The witness's last acceptance came after the seal stage began and
	// before its quorum formed.
	if wait := active.at.Sub(sealed.at); wait > 75*time.Millisecond || wait < 75*time.Millisecond-sealed.Elapsed() {
		t.Fatalf("the new owner served %v after its seal quorum formed (the stage took %v): want the silence limit and a quarter (75ms) after the last acceptance", wait, sealed.Elapsed())
	}
	if stepped.at.IsZero() || !stepped.at.Before(active.at) {
		t.Fatalf("the old owner stepped back at %v (zero: never), and the new one served at %v", stepped.at, active.at)
	}
	c.mustReply(61, wire.StatusOK)
	got, want := c.deliveries(8), []wire.MessageID{msgID(1), msgID(2), msgID(3), msgID(60)}
	if len(got) != len(want) {
		t.Fatalf("once it served, the new owner delivered %d messages, want %d: the recovered ones and the one confirmed while it outwaited", len(got), len(want))
	}
	for i, d := range got {
		if d.ID != want[i] {
			t.Fatalf("delivery %d is %s, want %s", i, d.ID, want[i])
		}
	}
}

// A recovered owner's node holds replicas of other queues too: here it
// owns one and follows another, both serving since before the failover.
// Its outwait timer ends the wait of the owners that outwait and leaves
// every other replica as it is: the owner that never outwaited says
// nothing new, and the follower is not looked at as an owner.
func TestAnOutwaitEndsOnlyForTheOwnersThatOutwait(t *testing.T) {
	c := newCluster(t)
	others := []string{"billing", "invoices", "refunds", "audit"}
	ownerOf := map[string]node.NodeID{}
	for _, name := range others {
		ownerOf[name] = c.createQueue(name, wire.PolicyMajority)
	}
	owner, newOwner := recoveredOwnerOutwaiting(t, c)
	owns, follows := "", ""
	for _, name := range others {
		o := ownerOf[name]
		switch {
		case o == newOwner && owns == "":
			owns = name
		case o != newOwner && o != owner && follows == "":
			follows = name
		}
	}
	if owns == "" || follows == "" {
		t.Fatalf("the story needs %s to own one queue and follow another of %v", newOwner, others)
	}
	actives := c.count(event.QueueActive, onQueue(owns))
	c.advance(200 * time.Millisecond)
	if !c.saw(event.QueueOutwaited, by(newOwner), onQueue("orders")) {
		t.Fatalf("%s's outwait of the old owner never ended; events:\n%v", newOwner, c.events)
	}
	if n := c.count(event.QueueActive, onQueue(owns)); n != actives {
		t.Fatalf("%s, which never outwaited, said it serves %s %d more times when another owner's outwait ended", newOwner, owns, n-actives)
	}
	if c.saw(event.QueueOutwaited, onQueue(owns)) || c.saw(event.QueueOutwaited, onQueue(follows)) {
		t.Fatalf("an outwait ended for a queue that never outwaited; events:\n%v", c.events)
	}
}

// The recovered owner's monotonic clock, which its lease arithmetic
// reads, runs a fifth slower than its timers from the moment it begins
// to outwait (a drifting clock source, as the simulator's skew draws).
// Its outwait timer, set for the span left on that clock, fires before
// the clock got there; the owner sets it again for what is left, and
// ends its wait once its own clock has passed the mark, not before.
func TestAnOutwaitTimerThatFiresEarlyIsSetAgain(t *testing.T) {
	c := newCluster(t)
	_, newOwner := recoveredOwnerOutwaiting(t, c)
	m := c.node(newOwner)
	m.setSlow(0.8)
	began := c.now
	c.advance(300 * time.Millisecond)
	e, ok := c.last(event.QueueOutwaited)
	if !ok || e.node != newOwner {
		t.Fatalf("%s, its clock slow, never ended its outwait; events:\n%v", newOwner, c.events)
	}
	// At a fifth slow, the 75ms the wait lasts at most on its own clock
	// take at most about 94ms of the cluster's time.
	if waited := e.at.Sub(began); waited > 100*time.Millisecond {
		t.Fatalf("%s ended its outwait %v after it began, want within 100ms", newOwner, waited)
	}
}

// The same recovered owner is cut off from every peer just after it
// begins to outwait the old one, and stays cut off past the silence
// limit, as a paused process is. Its outwait timer fires while it has
// heard from no quorum: by then its peers may have sealed a newer epoch
// and activated it, so it must not say it serves (in the long sweep,
// seed 521082: paused 2.4 s, it woke and said it served epoch 4 after
// epoch 5 had begun). Once its quorum takes its appends again, which no
// quorum sealed at a newer epoch would, it says it serves, in the same
// epoch, and delivers.
func TestAnOwnerWhoseOutwaitEndsWhileCutOffServesOnlyOnceItsQuorumAnswers(t *testing.T) {
	c := newCluster(t)
	_, newOwner := recoveredOwnerOutwaiting(t, c)
	c.cut[newOwner] = true
	c.advance(100 * time.Millisecond)
	if !c.saw(event.QueueOutwaited, by(newOwner)) || !c.saw(event.QueueQuorumLost, by(newOwner)) {
		t.Fatalf("100ms cut off, %s neither ended its outwait nor found its quorum lost; events:\n%v", newOwner, c.events)
	}
	if c.saw(event.QueueActive, by(newOwner)) {
		t.Fatalf("%s said it served while it had heard from no quorum for the silence limit; events:\n%v", newOwner, c.events)
	}

	delete(c.cut, newOwner)
	c.advance(100 * time.Millisecond)
	if !c.saw(event.QueueQuorumRegained, by(newOwner)) || !c.saw(event.QueueActive, by(newOwner), inEpoch(2)) {
		t.Fatalf("reconnected, %s did not regain its quorum and say it serves epoch 2; events:\n%v", newOwner, c.events)
	}
	c.request(newOwner, 8, &wire.Subscribe{ReqID: 61, Queue: "orders", Window: 10, Lease: time.Second})
	c.settle()
	c.mustReply(61, wire.StatusOK)
	if got := len(c.deliveries(8)); got != 3 {
		t.Fatalf("once it served, the new owner delivered %d messages, want the 3 it recovered", got)
	}
}

// recoveredOwnerOutwaiting cuts the owner of orders off from the metadata
// leader only, keeps the candidate's seal from reaching it, and advances
// until a recovered owner begins to outwait the old owner's quorum. It
// returns the old owner and the new one.
func recoveredOwnerOutwaiting(t *testing.T, c *cluster) (owner, newOwner node.NodeID) {
	t.Helper()
	leader, owner := ordersApartFromLeader(t, c)
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		if _, seal := m.(*wire.Seal); seal && to == owner {
			return false // it serves on, not knowing of the seal
		}
		return !(from == owner && to == leader || from == leader && to == owner)
	}
	for step := 0; step <= 400; step++ {
		c.advance(5 * time.Millisecond)
		if e, ok := c.last(event.QueueActivationOutwaits); ok {
			return owner, e.node
		}
	}
	t.Fatalf("no recovered owner outwaited the old one in 2s; events:\n%v", c.events)
	return 0, 0
}
