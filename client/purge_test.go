package client

import (
	"errors"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// Purge sends the queue's name to its owner and reports the answer: OK,
// or a refusal as a StatusError.
func TestPurgeNamesTheQueueAndReportsARefusal(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		p, ok := m.(*wire.Purge)
		switch {
		case !ok:
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
		case p.Queue == "orders":
			return &wire.Reply{ReqID: p.ReqID, Status: wire.StatusOK, Index: 9}
		}
		return &wire.Reply{ReqID: p.ReqID, Status: wire.StatusNoQueue, Detail: "no queue " + p.Queue}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := c.Purge(ctx, "orders"); err != nil {
		t.Fatalf("Purge of an existing queue: %v", err)
	}
	var se *StatusError
	if err := c.Purge(ctx, "missing"); !errors.As(err, &se) || se.Status != StatusNoQueue || se.Op != "purge" {
		t.Fatalf("Purge of a missing queue: %v, want a StatusError with no-queue", err)
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	var sent []string
	for _, m := range nodes[0].seen {
		if p, ok := m.(*wire.Purge); ok {
			sent = append(sent, p.Queue)
		}
	}
	if len(sent) != 2 || sent[0] != "orders" || sent[1] != "missing" {
		t.Fatalf("the node saw purges of %v, want orders then missing", sent)
	}
}
