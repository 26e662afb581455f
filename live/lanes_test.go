package live

import (
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// The metadata group's raft traffic and the failure detector's messages
// are control traffic; queue replication and recovery are not.
func TestControlTrafficIsRaftAndFailureDetection(t *testing.T) {
	for _, c := range []struct {
		m    wire.Message
		want bool
	}{
		{&wire.Raft{}, true},
		{&wire.Ping{}, true},
		{&wire.Pong{}, true},
		{&wire.Probe{}, true},
		{&wire.ProbeAck{}, true},
		{&wire.MetaLostLog{}, true},
		{&wire.MetaCommitted{}, true},
		{&wire.Append{}, false},
		{&wire.AppendReply{}, false},
		{&wire.Seal{}, false},
		{&wire.FetchReply{}, false},
	} {
		if got := isControl(c.m); got != c.want {
			t.Errorf("isControl(%s) = %v, want %v", c.m.Kind(), got, c.want)
		}
	}
}

// A loop behind on its inbox drops a peer's queue traffic that finds no
// room, and still takes control traffic, ahead of what waits: a reader
// that waited for room would leave the pings behind it unread.
func TestAFullInboxDropsQueueTrafficButTakesControlFirst(t *testing.T) {
	r := &Runtime{inbox: make(chan func(), 2), urgent: make(chan func(), 2), loopStop: make(chan struct{}), loopDone: make(chan struct{})}
	var order []string
	queued := func(name string) func() { return func() { order = append(order, name) } }
	if !r.offer(queued("append 1")) || !r.offer(queued("append 2")) {
		t.Fatal("an inbox with room refused queue traffic")
	}
	if r.offer(queued("append 3")) {
		t.Fatal("a full inbox took more queue traffic")
	}
	r.postFirst(queued("ping"))
	for len(r.inbox)+len(r.urgent) > 0 {
		ev, ok := r.next()
		if !ok {
			t.Fatal("the loop stopped")
		}
		ev()
	}
	if len(order) != 3 || order[0] != "ping" {
		t.Fatalf("the loop took %v, want the ping first and the two queued appends after", order)
	}
}
