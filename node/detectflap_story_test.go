package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// A peer whose process stalls, and so falls silent without its
// connections resetting, is confirmed down the first time; each time it
// answers again with no reset it is allowed a longer silence, so stalls
// that recur stop moving its queues to and fro. On a busy machine with
// thousands of queues, the failovers each false confirmation set off
// stalled the nodes again, and three nodes kept confirming one another
// down for minutes. The story stalls a follower for 500 ms three times:
// the first two stalls are confirmed, the third is waited out.
func TestAPeerThatStallsAgainAndAgainIsGivenLongerToAnswer(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	peer := leader%3 + 1
	var stalledUntil time.Time
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		return from != peer || !c.now.Before(stalledUntil)
	}
	confirms := func() int {
		count := 0
		for _, e := range c.emitted {
			if e.Name == event.DetectConfirm && e.node == leader {
				count++
			}
		}
		return count
	}
	for i, want := range []int{1, 2, 2} {
		stalledUntil = c.now.Add(500 * time.Millisecond)
		c.advance(time.Second)
		if got := confirms(); got != want {
			t.Fatalf("after stall %d of 500 ms the leader confirmed %s down %d times, want %d", i+1, peer, got, want)
		}
		if !c.saw(event.DetectRecovered) {
			t.Fatalf("the leader never heard %s again after stall %d", peer, i+1)
		}
	}
	if e, ok := c.last(event.DetectFlapped); !ok || e.Flaps() != 2 {
		t.Fatalf("the leader's last detect.flapped says %d flaps (seen %v), want the two confirmations", e.Flaps(), ok)
	}
}

// A peer whose process is killed resets its connections: confirmed down
// and back after a restart, it did not flap, and its next silence is
// judged as strictly as before.
func TestARestartedPeerDidNotFlap(t *testing.T) {
	c := newCluster(t)
	leader := c.leader()
	peer := leader%3 + 1
	c.node(peer).crash()
	c.resetPeers(peer)
	c.advance(time.Second)
	if !c.saw(event.DetectConfirm) {
		t.Fatalf("the leader never confirmed the killed %s down; events:\n%v", peer, c.events)
	}
	c.node(peer).start()
	c.advance(time.Second)
	if !c.saw(event.DetectRecovered) {
		t.Fatalf("the leader never heard the restarted %s again; events:\n%v", peer, c.events)
	}
	if c.saw(event.DetectFlapped) {
		t.Fatalf("a peer that was killed and restarted counted as a flap")
	}
}
