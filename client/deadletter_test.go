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
