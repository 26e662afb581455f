package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// Eager detection learns how long a peer's pings wait on a link that
// stalls, and must learn it from every ping, not only from the one it
// happened to be timing. Seed 133399: the leader n4 timed a ping to n2
// that was answered at once, while the ping it had sent just before
// that answer arrived waited 178 ms; forgetting that later ping, it
// timed only the next one sent, which went out after the stall and
// learned nothing. The next stall of 209 ms then outlasted an idle limit
// still sized for 130 ms waits: n4 confirmed the live n2 down, moved its
// queue dl away and abandoned the recovery replacing dl's lost replica.
//
// The story stalls the links between the leader and a peer so: a plain
// stall of the peer's answers (12 ticks), which both versions learn; then
// an answer released while the next ping is stuck for 18 ticks on the
// way out; then a stall of 25 ticks, which a leader that learned the 18
// ticks waits out and one that did not takes for a dead peer.
func TestEagerDetectionLearnsTheWaitOfAPingSentBeforeTheLastAnswer(t *testing.T) {
	const tick = 10 * time.Millisecond
	c := newClusterOf(t, node.Config{Nodes: []node.NodeID{1, 2, 3}, Tick: tick, SegmentSize: 4096,
		Detection: node.DetectionPolicy{Mode: node.DetectEager, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}})
	leader := c.leader()
	peer := leader%3 + 1

	// The links: a ping from the leader to the peer, or an answer back,
	// sent while its direction is stalled waits until the stall ends.
	type heldMsg struct {
		from, to node.NodeID
		msg      wire.Message
		until    time.Time
	}
	var held []heldMsg
	var pingStall, pongStall [2]time.Time // [from, until)
	var pinged time.Time
	holdUntil := func(stall [2]time.Time) (time.Time, bool) {
		if !c.now.Before(stall[0]) && c.now.Before(stall[1]) {
			return stall[1], true
		}
		return time.Time{}, false
	}
	c.intercept = func(from, to node.NodeID, m wire.Message) bool {
		var stall [2]time.Time
		switch m.(type) {
		case *wire.Ping:
			if from != leader || to != peer {
				return true
			}
			pinged, stall = c.now, pingStall
		case *wire.Pong:
			if from != peer || to != leader {
				return true
			}
			stall = pongStall
		default:
			return true
		}
		if until, ok := holdUntil(stall); ok {
			held = append(held, heldMsg{from, to, m, until})
			return false
		}
		return true
	}
	step := func(n int) {
		for range n {
			c.advance(tick)
			for {
				var due []heldMsg
				rest := held[:0:0]
				for _, h := range held {
					if h.until.After(c.now) {
						rest = append(rest, h)
					} else {
						due = append(due, h)
					}
				}
				if len(due) == 0 {
					break
				}
				held = rest
				for _, h := range due {
					to := c.node(h.to)
					to.run(func() { to.n.OnMessage(h.from, h.msg) })
				}
				c.settle()
			}
		}
	}
	// syncToPing advances until the leader has just pinged the peer.
	syncToPing := func() time.Time {
		for start := c.now; ; {
			step(1)
			if pinged.Equal(c.now) {
				return c.now
			}
			if c.now.Sub(start) > time.Second {
				t.Fatal("the leader sent the peer no ping for a second")
			}
		}
	}
	ticks := func(n int) time.Duration { return time.Duration(n) * tick }

	// The stalls begin a tick after a ping, so the next ping, five ticks
	// later, is the first they hold. A plain stall of the answers, 12
	// ticks: answered within the verification an idle interval starts,
	// and learned.
	t0 := syncToPing()
	pongStall = [2]time.Time{t0.Add(tick), t0.Add(ticks(5 + 12))}
	step(30)
	// The answer to the next ping is held 6 ticks, past the ping after
	// it, which alone waits 18 ticks on the way out.
	t1 := syncToPing()
	pongStall = [2]time.Time{t1.Add(tick), t1.Add(ticks(5 + 6))}
	pingStall = [2]time.Time{t1.Add(ticks(6)), t1.Add(ticks(10 + 18))}
	step(35)
	if c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader confirmed a node down while it learned the stalls; events:\n%v", c.events)
	}
	// A stall of the answers of 25 ticks: within the idle limit an
	// 18-tick wait sets, past the one a 12-tick wait sets and the
	// verification after it.
	t2 := syncToPing()
	pongStall = [2]time.Time{t2.Add(tick), t2.Add(ticks(5 + 25))}
	step(40)
	if c.saw(event.DetectConfirm, by(leader)) {
		t.Fatalf("the leader confirmed the live n%d down in a 250 ms stall after its pings had waited 180 ms; events:\n%v", peer, c.events)
	}
}
