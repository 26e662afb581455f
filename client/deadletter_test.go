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
