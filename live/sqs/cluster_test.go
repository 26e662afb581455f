package sqs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// oneNode runs a one-node cluster for the test and returns its runtime.
func oneNode(t *testing.T) *live.Runtime {
	t.Helper()
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1}},
		DataDir: t.TempDir(), ClientListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		ClientSecret: []byte("sqs-test-client-secret"), PeerSecret: []byte("sqs-test-peer-secret"), AdminSecret: []byte("sqs-test-admin-secret"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Exit:   func(code int) { t.Errorf("node exited with status %d", code) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for rt.Status().MetaLeader == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the node did not lead its metadata within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return rt
}

func backendFor(t *testing.T, rt *live.Runtime) *ClusterBackend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := NewClusterBackend(ctx, ClusterConfig{
		Addrs: []string{rt.ClientAddr()}, Client: client.Options{Secret: []byte("sqs-test-client-secret")},
		Admin:     &client.Options{Secret: []byte("sqs-test-admin-secret")},
		Status:    func(context.Context) (status.Node, error) { return rt.Status(), nil },
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		IdleAfter: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestClusterBackend drives the backend against a real node: create,
// send, a long poll, delete, a lapsed visibility timeout and a release.
func TestClusterBackend(t *testing.T) {
	b, ctx := backendWithJobs(t)
	if err := b.CreateQueue(ctx, "jobs", QueueOptions{}); !errors.Is(err, ErrQueueExists) {
		t.Fatalf("second create: %v, want ErrQueueExists", err)
	}
	if _, err := b.Send(ctx, "nope", []byte("x"), 0); !errors.Is(err, ErrNoQueue) {
		t.Fatalf("send to a missing queue: %v, want ErrNoQueue", err)
	}
	// A long poll started before the send returns when it arrives.
	got := make(chan []Received, 1)
	go func() {
		r, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := b.Send(ctx, "jobs", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	first := <-got
	if len(first) != 1 || string(first[0].Payload) != "one" || first[0].Attempt != 1 {
		t.Fatalf("long poll got %+v", first)
	}
	// Not deleted, it comes back once its 2 s visibility runs out.
	again, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 10*time.Second)
	if err != nil || len(again) != 1 || again[0].Attempt != 2 || again[0].ID != first[0].ID {
		t.Fatalf("redelivery: %+v, %v", again, err)
	}
	// Released, it is delivered again at once.
	if err := b.Release(ctx, "jobs", receiptOf(again[0])); err != nil {
		t.Fatal(err)
	}
	third, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 5*time.Second)
	if err != nil || len(third) != 1 || third[0].Attempt != 3 {
		t.Fatalf("after release: %+v, %v", third, err)
	}
	if err := b.Delete(ctx, "jobs", receiptOf(third[0])); err != nil {
		t.Fatal(err)
	}
	// Deleting it again succeeds, as in SQS: the owner settled it. A
	// hand-back or extension of its lease finds the lease gone.
	if err := b.Delete(ctx, "jobs", receiptOf(third[0])); err != nil {
		t.Fatalf("a second delete: %v", err)
	}
	if err := b.Release(ctx, "jobs", receiptOf(third[0])); !errors.Is(err, ErrLeaseGone) {
		t.Fatalf("release of a deleted message: %v, want ErrLeaseGone", err)
	}
	if err := b.Extend(ctx, "jobs", receiptOf(third[0]), time.Minute); !errors.Is(err, ErrLeaseGone) {
		t.Fatalf("extension of a deleted message: %v, want ErrLeaseGone", err)
	}
	if r, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 3*time.Second); err != nil || len(r) != 0 {
		t.Fatalf("after delete: %+v, %v", r, err)
	}
	st, err := b.Stats(ctx, "jobs")
	if err != nil || !st.Known || st.Ready+st.Leased+st.Delayed != 0 {
		t.Fatalf("stats after delete: %+v, %v", st, err)
	}
	if err := b.DeleteQueue(ctx, "jobs", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stats(ctx, "jobs"); !errors.Is(err, ErrNoQueue) {
		t.Fatalf("stats of a deleted queue: %v", err)
	}
}

// TestReceiveAfterQueueRecreated: a queue deleted and made again under
// its name while consumers poll it gets its messages to them.
func TestReceiveAfterQueueRecreated(t *testing.T) {
	rt := oneNode(t)
	b := backendFor(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.CreateQueue(ctx, "again", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Receive(ctx, "again", 10, 5*time.Second, 0); err != nil || len(r) != 0 {
		t.Fatalf("receive on an empty queue: %+v, %v", r, err)
	}
	if err := b.DeleteQueue(ctx, "again", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := b.CreateQueue(ctx, "again", QueueOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating the queue again: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := b.Send(ctx, "again", []byte("second life"), 0); err != nil {
		t.Fatal(err)
	}
	var got []Received
	for len(got) == 0 && time.Now().Before(deadline.Add(10*time.Second)) {
		r, err := b.Receive(ctx, "again", 10, 5*time.Second, time.Second)
		if err != nil && !errors.Is(err, ErrNoQueue) {
			t.Fatal(err)
		}
		got = r
	}
	if len(got) != 1 || string(got[0].Payload) != "second life" {
		t.Fatalf("after the queue was made again: %+v", got)
	}
}

// TestAReceiveTakesWhatAnotherVisibilitysBufferHolds: a message that
// went to the buffer of a visibility timeout nobody receives with any
// more goes to a receive under another, with that receive's visibility,
// rather than waiting there for a quarter of the first timeout.
func TestAReceiveTakesWhatAnotherVisibilitysBufferHolds(t *testing.T) {
	b, ctx := backendWithJobs(t)
	// A receive under 60 s subscribes that buffer and finds nothing.
	if r, err := b.Receive(ctx, "jobs", 10, time.Minute, 0); err != nil || len(r) != 0 {
		t.Fatalf("first receive: %+v, %v", r, err)
	}
	if _, err := b.Send(ctx, "jobs", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	waitBuffered(t, b.existingBuffer(bufferKey{"jobs", time.Minute}), "the message to reach the buffer under 60 s")
	began := time.Now()
	got, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 5*time.Second)
	if err != nil || len(got) != 1 || string(got[0].Payload) != "one" {
		t.Fatalf("a receive under 2 s: %+v, %v", got, err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the receive under 2 s took %v to find the message the other buffer held", took)
	}
	// Its lease is the receive's 2 s, not the other buffer's minute.
	again, err := b.Receive(ctx, "jobs", 10, 2*time.Second, 10*time.Second)
	if err != nil || len(again) != 1 || again[0].ID != got[0].ID || again[0].Attempt != 2 {
		t.Fatalf("after 2 s: %+v, %v", again, err)
	}
	if err := b.Delete(ctx, "jobs", receiptOf(again[0])); err != nil {
		t.Fatal(err)
	}
}

// receiptOf is the receipt the endpoint that received r reads from its
// handle.
func receiptOf(r Received) Receipt {
	return Receipt{Lease: r.Lease, Local: true, ID: r.ID, Grant: r.Grant}
}

// TestAnotherBackendActsOnAReceipt: two endpoints' backends on one
// cluster, as behind a load balancer. The one that did not hand a
// delivery out extends it, hands it back and deletes it, through the
// queue's owner, by the message and the owner's lease; the one that did
// finds its own record of it stale and follows the owner too.
func TestAnotherBackendActsOnAReceipt(t *testing.T) {
	a, b, ctx, got := twoBackendsOneReceived(t)
	foreign := receiptOf(got)
	foreign.Local = false
	// b extends the 2 s lease to 6 s: past the 2 s, nothing comes back.
	if err := b.Extend(ctx, "jobs", foreign, 6*time.Second); err != nil {
		t.Fatalf("extension at b: %v", err)
	}
	if r, err := a.Receive(ctx, "jobs", 1, 2*time.Second, 3*time.Second); err != nil || len(r) != 0 {
		t.Fatalf("within the extended lease the message came back: %+v, %v", r, err)
	}
	// b hands it back; it comes again at once, with a new lease.
	if err := b.Release(ctx, "jobs", foreign); err != nil {
		t.Fatalf("release at b: %v", err)
	}
	again, err := a.Receive(ctx, "jobs", 1, 30*time.Second, 5*time.Second)
	if err != nil || len(again) != 1 || again[0].ID != got.ID || again[0].Attempt != 2 {
		t.Fatalf("after the release at b: %+v, %v", again, err)
	}
	// The old lease is gone at the owner, whoever asks.
	if err := b.Extend(ctx, "jobs", foreign, time.Minute); !errors.Is(err, ErrLeaseGone) {
		t.Fatalf("extension of the released lease: %v, want ErrLeaseGone", err)
	}
	// b deletes the new delivery; a's record of it is then stale, and
	// its own delete still succeeds.
	second := receiptOf(again[0])
	second.Local = false
	if err := b.Delete(ctx, "jobs", second); err != nil {
		t.Fatalf("delete at b: %v", err)
	}
	if err := a.Delete(ctx, "jobs", receiptOf(again[0])); err != nil {
		t.Fatalf("a's delete after b's: %v", err)
	}
	if r, err := a.Receive(ctx, "jobs", 1, 2*time.Second, 3*time.Second); err != nil || len(r) != 0 {
		t.Fatalf("after the delete at b: %+v, %v", r, err)
	}
	if st, err := a.Stats(ctx, "jobs"); err != nil || !st.Known || st.Ready+st.Leased+st.Delayed != 0 {
		t.Fatalf("stats after the delete at b: %+v, %v", st, err)
	}
}

// backendWithJobs starts a node and a backend on it with the queue
// "jobs" made, and a context for the test's 30 s.
func backendWithJobs(t *testing.T) (*ClusterBackend, context.Context) {
	t.Helper()
	b := backendFor(t, oneNode(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := b.CreateQueue(ctx, "jobs", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	return b, ctx
}

// TestADeleteDropsABufferedRedelivery: a message whose visibility ran
// out went out again and waits in the endpoint's buffer; a delete with
// its first receipt settles it, and the buffered delivery is not handed
// out after the delete.
func TestADeleteDropsABufferedRedelivery(t *testing.T) {
	b, ctx := backendWithJobs(t)
	b.cfg.IdleAfter = time.Minute
	if _, err := b.Send(ctx, "jobs", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	first, err := b.Receive(ctx, "jobs", 1, 2*time.Second, 5*time.Second)
	if err != nil || len(first) != 1 {
		t.Fatalf("receive: %+v, %v", first, err)
	}
	waitBuffered(t, b.existingBuffer(bufferKey{"jobs", 2 * time.Second}), "the message to come back to the buffer once its 2 s ran out")
	if err := b.Delete(ctx, "jobs", receiptOf(first[0])); err != nil {
		t.Fatalf("a delete with the first receipt: %v", err)
	}
	if r, err := b.Receive(ctx, "jobs", 1, 2*time.Second, time.Second); err != nil || len(r) != 0 {
		t.Fatalf("after the delete the buffer handed out %+v, %v", r, err)
	}
}

// TestARedeliveryDeletedElsewhereIsNotHandedOut: a message whose
// visibility ran out waits, sent again, in one endpoint's buffer, and the
// application deletes it through another endpoint with the handle of its
// first delivery. The first endpoint's next receive finds the buffered
// delivery's lease gone and does not hand out a deleted message.
func TestARedeliveryDeletedElsewhereIsNotHandedOut(t *testing.T) {
	a, b, ctx, first := twoBackendsOneReceived(t)
	waitBuffered(t, a.existingBuffer(bufferKey{"jobs", 2 * time.Second}), "the message to come back to a's buffer once its 2 s ran out")
	foreign := receiptOf(first)
	foreign.Local = false
	if err := b.Delete(ctx, "jobs", foreign); err != nil {
		t.Fatalf("delete at b: %v", err)
	}
	if r, err := a.Receive(ctx, "jobs", 1, 2*time.Second, time.Second); err != nil || len(r) != 0 {
		t.Fatalf("a handed out %+v, %v after b deleted the message", r, err)
	}
}

// twoBackendsOneReceived starts a node and two endpoints' backends on it,
// a and b, as behind a load balancer, with the queue "jobs" made and one
// message in it received at a under a visibility of 2 s.
func twoBackendsOneReceived(t *testing.T) (a, b *ClusterBackend, ctx context.Context, got Received) {
	t.Helper()
	rt := oneNode(t)
	a, b = backendFor(t, rt), backendFor(t, rt)
	// An endpoint whose buffer is idle with nothing it knows of handed
	// out ends the buffer's subscription, and the owner takes back the
	// leases it held: keep a's for the tests' waits.
	a.cfg.IdleAfter = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	if err := a.CreateQueue(ctx, "jobs", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctx, "jobs", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	r, err := a.Receive(ctx, "jobs", 1, 2*time.Second, 5*time.Second)
	if err != nil || len(r) != 1 {
		t.Fatalf("receive at a: %+v, %v", r, err)
	}
	return a, b, ctx, r[0]
}

// waitBuffered waits up to 10 s for buf to hold a delivery; what names
// what the test waits for.
func waitBuffered(t *testing.T, buf *buffer, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		buf.mu.Lock()
		n := len(buf.waiting)
		buf.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}
