package client

import (
	"errors"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// WithDeadLetter sends the dead-letter queue and the delivery limit with
// the create request; a limit out of range, or a queue that would be its
// own dead-letter queue, is refused without being sent.
func TestWithDeadLetterReachesTheCreateRequest(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := c.CreateQueue(ctx, "orders", PolicyMajority, WithDeadLetter("parked", 5)); err != nil {
		t.Fatalf("CreateQueue with a dead-letter queue: %v", err)
	}
	var se *StatusError
	for _, bad := range []CreateOption{WithDeadLetter("parked", 0), WithDeadLetter("parked", MaxDeliveriesLimit+1), WithDeadLetter("orders", 3)} {
		if err := c.CreateQueue(ctx, "orders", PolicyMajority, bad); !errors.As(err, &se) || se.Status != StatusBadRequest {
			t.Errorf("a bad delivery limit: %v, want a StatusError with bad-request", err)
		}
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	var sent []*wire.CreateQueue
	for _, m := range nodes[0].seen {
		if cq, ok := m.(*wire.CreateQueue); ok {
			sent = append(sent, cq)
		}
	}
	if len(sent) != 1 || sent[0].DeadLetter != "parked" || sent[0].MaxDeliveries != 5 {
		t.Fatalf("the node saw creates %v, want one naming parked after 5 deliveries", sent)
	}
}

// Depth asks the owner with a QueueInfo request and returns the counts
// its answer carries; an answer without them is an error, not zeros.
func TestDepthReadsTheOwnersCounts(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		q, ok := m.(*wire.QueueInfo)
		switch {
		case !ok:
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
		case q.Queue == "old":
			return &wire.Reply{ReqID: q.ReqID, Status: wire.StatusOK}
		}
		return &wire.Reply{ReqID: q.ReqID, Status: wire.StatusOK,
			Depth: &wire.QueueDepth{Ready: 5, Leased: 4, Delayed: 3, DeadLettering: 2, Consumers: 1}}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	d, err := c.Depth(ctx, "orders")
	if want := (QueueDepth{Ready: 5, Leased: 4, Delayed: 3, DeadLettering: 2, Consumers: 1}); err != nil || d != want || d.Backlog() != 14 {
		t.Fatalf("Depth: %+v, %v; want %+v", d, err, want)
	}
	if _, err := c.Depth(ctx, "old"); err == nil {
		t.Fatal("an answer without counts was taken as an empty queue")
	}
}

// SetDeadLetter sends the new setting in a SetQueueOptions request, an
// empty one to remove the limit; a bad setting is refused unsent, and a
// node's no-queue answer reaches the caller.
func TestSetDeadLetterSendsTheNewSetting(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		if so, ok := m.(*wire.SetQueueOptions); ok && so.Queue == "gone" {
			return &wire.Reply{ReqID: so.ReqID, Status: wire.StatusNoQueue, Detail: "no queue gone"}
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := c.SetDeadLetter(ctx, "orders", "parked", 4); err != nil {
		t.Fatalf("SetDeadLetter: %v", err)
	}
	if err := c.SetDeadLetter(ctx, "orders", "", 0); err != nil {
		t.Fatalf("SetDeadLetter removing the limit: %v", err)
	}
	var se *StatusError
	for _, bad := range []struct {
		dead  string
		limit int
	}{{"parked", 0}, {"parked", MaxDeliveriesLimit + 1}, {"orders", 3}, {"", 3}, {"parked", -1}} {
		if err := c.SetDeadLetter(ctx, "orders", bad.dead, bad.limit); !errors.As(err, &se) || se.Status != StatusBadRequest {
			t.Errorf("SetDeadLetter(%q, %d): %v, want a StatusError with bad-request", bad.dead, bad.limit, err)
		}
	}
	if err := c.SetDeadLetter(ctx, "gone", "parked", 2); !errors.As(err, &se) || se.Status != StatusNoQueue {
		t.Errorf("SetDeadLetter on a missing queue: %v, want a StatusError with no-queue", err)
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	var sent []wire.SetQueueOptions
	for _, m := range nodes[0].seen {
		if so, ok := m.(*wire.SetQueueOptions); ok {
			sent = append(sent, *so)
		}
	}
	want := []wire.SetQueueOptions{{Queue: "orders", DeadLetter: "parked", MaxDeliveries: 4}, {Queue: "orders"}, {Queue: "gone", DeadLetter: "parked", MaxDeliveries: 2}}
	if len(sent) != len(want) {
		t.Fatalf("the node saw %v, want %v", sent, want)
	}
	for i := range want {
		if sent[i].Queue != want[i].Queue || sent[i].DeadLetter != want[i].DeadLetter || sent[i].MaxDeliveries != want[i].MaxDeliveries {
			t.Fatalf("request %d was %+v, want %+v", i, sent[i], want[i])
		}
	}
}
