package client

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/wire"
)

// delivery makes a Delivery as the client would have reported it from
// node 1.
func delivery(c *Client, seq uint64) *Delivery {
	id := wire.MessageID{Producer: 1, Seq: seq}
	return &Delivery{Queue: "q", c: c, d: core.Delivery{Queue: "q", ID: id, Lease: seq, From: 1}}
}

// settleReply answers a Settle with OK once release is closed, and
// anything else with OK at once.
func settleReply(release <-chan struct{}) func(uint32, wire.Message) wire.Message {
	return func(_ uint32, m wire.Message) wire.Message {
		if s, ok := m.(*wire.Settle); ok {
			<-release
			return &wire.Reply{ReqID: s.ReqID, Status: wire.StatusOK}
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	}
}

// Ack hands the ack over and returns while the owner has not answered;
// AckSync and Flush wait for the answer.
func TestAckReturnsBeforeTheSettleIsAnswered(t *testing.T) {
	release := make(chan struct{})
	nodes := fakeCluster(t, 1, settleReply(release))
	ctx, c := dialTest(t, nodes[0].addr())
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := delivery(c, 1).Ack(actx); err != nil {
		t.Fatalf("Ack with the settle unanswered: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := delivery(c, 2).AckSync(short); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("AckSync with the settle unanswered: %v, want an unknown outcome", err)
	}
	short, cancelShort = context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := c.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with an ack unanswered: %v, want the deadline", err)
	}
	close(release)
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush once the settles are answered: %v", err)
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	for _, m := range nodes[0].seen {
		if s, ok := m.(*wire.Settle); ok && s.ID.Seq == 1 {
			return
		}
	}
	t.Fatal("Flush returned, yet the node never saw the handed-over ack")
}

// Close gives the acks already handed over their answer before it closes
// the connections, so a consumer that acks its last message and exits
// does not get it delivered again.
func TestCloseWaitsForHandedOverAcks(t *testing.T) {
	var answered atomic.Bool
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		if s, ok := m.(*wire.Settle); ok {
			time.Sleep(50 * time.Millisecond)
			answered.Store(true)
			return &wire.Reply{ReqID: s.ReqID, Status: wire.StatusOK}
		}
		return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	if err := delivery(c, 1).Ack(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !answered.Load() {
		t.Fatal("Close returned before the handed-over ack was answered")
	}
	if err := delivery(c, 2).Ack(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ack on a closed client: %v, want ErrClosed", err)
	}
}

// AckSyncAll starts its acks together, so the node gets them in one
// frame, and reports each delivery's own outcome in its place: a lease
// the node no longer holds fails alone, and a delivery made by hand is
// refused without being sent.
func TestAckSyncAllSendsOneFrameAndReportsEachOutcome(t *testing.T) {
	nodes := fakeCluster(t, 1, func(_ uint32, m wire.Message) wire.Message {
		s, ok := m.(*wire.Settle)
		switch {
		case !ok:
			return &wire.Reply{ReqID: reqID(m), Status: wire.StatusOK}
		case s.ID.Seq == 3:
			return &wire.Reply{ReqID: s.ReqID, Status: wire.StatusNotLeased}
		}
		return &wire.Reply{ReqID: s.ReqID, Status: wire.StatusOK}
	})
	ctx, c := dialTest(t, nodes[0].addr())
	ds := []*Delivery{delivery(c, 1), delivery(c, 2), delivery(c, 3), {Queue: "q"}, delivery(c, 5)}
	errs := AckSyncAll(ctx, ds)
	for i, err := range errs {
		var se *StatusError
		switch i {
		case 2:
			if !errors.As(err, &se) || se.Status != StatusNotLeased {
				t.Errorf("delivery %d, whose lease the node lost: %v, want StatusNotLeased", i, err)
			}
		case 3:
			if !errors.As(err, &se) || se.Status != StatusBadRequest {
				t.Errorf("delivery %d, made by hand: %v, want StatusBadRequest", i, err)
			}
		default:
			if err != nil {
				t.Errorf("delivery %d: %v, want settled", i, err)
			}
		}
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	settles := 0
	for _, m := range nodes[0].seen {
		if _, ok := m.(*wire.Settle); ok {
			settles++
		}
	}
	if settles != 4 || nodes[0].settleFrames != 1 {
		t.Fatalf("the node got %d settles in %d frames, want 4 in one", settles, nodes[0].settleFrames)
	}
}
