package client

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// Extend sends the delivery's lease and the span to the node that
// delivered it, waits for the answer, and reports a lost lease as a
// StatusError with StatusNotLeased; a span out of range is refused
// without being sent.
func TestExtendWaitsForTheLeaseNodeAndReportsALostLease(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		x, ok := m.(*wire.Extend)
		if !ok {
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
		}
		if x.Lease == 1 {
			return &wire.Reply{ReqID: x.ReqID, Status: wire.StatusOK}
		}
		return &wire.Reply{ReqID: x.ReqID, Status: wire.StatusNotLeased, Detail: "lease is no longer held"}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := delivery(c, 1).Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend of a held lease: %v", err)
	}
	var se *StatusError
	if err := delivery(c, 2).Extend(ctx, time.Minute); !errors.As(err, &se) || se.Status != StatusNotLeased || se.Op != "extend" {
		t.Fatalf("Extend of a lost lease: %v, want a StatusError with not-leased", err)
	}
	if err := delivery(c, 1).Extend(ctx, 13*time.Hour); !errors.As(err, &se) || se.Status != StatusBadRequest {
		t.Fatalf("Extend by 13h: %v, want a StatusError with bad-request", err)
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	var sent []*wire.Extend
	for _, m := range nodes[0].seen {
		if x, ok := m.(*wire.Extend); ok {
			sent = append(sent, x)
		}
	}
	if len(sent) != 2 || sent[0].Lease != 1 || sent[0].For != time.Minute || sent[0].ID.Seq != 1 || sent[1].Lease != 2 {
		t.Fatalf("the node saw extensions %v, want leases 1 and 2 for a minute each", sent)
	}
}
