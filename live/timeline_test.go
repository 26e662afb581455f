package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/wire"
)

// A recovery that retried once and then succeeded is two attempts on the
// timeline: the first ended in a retry at its failed stage, the second
// has its three stages placed back to back and the counts recovery.done
// reports.
func TestTimelineFollowsAttempts(t *testing.T) {
	tl := newTimeline(2)
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	stage := func(name string, took time.Duration) event.StageEnd {
		return event.StageEnd{Queue: "orders", Epoch: 3, Stage: name, Took: took}
	}
	tl.observe(at(0), event.NewDetectSuspect(1, 200*time.Millisecond))
	tl.observe(at(5), event.NewRecoveryStart("orders", 3, 1))
	tl.observe(at(25), event.NewRecoveryStageRetry(stage("seal", 20*time.Millisecond), "no quorum"))
	tl.observe(at(30), event.NewRecoveryStart("orders", 3, 2))
	tl.observe(at(40), event.NewRecoveryStageSealed(stage("seal", 10*time.Millisecond), 2, 3, 9, 2))
	tl.observe(at(45), event.NewRecoveryStageFetched(stage("fetch", 5*time.Millisecond), 100))
	tl.observe(at(52), event.NewRecoveryStageInstalled(stage("install", 7*time.Millisecond), 10))
	tl.observe(at(52), event.NewRecoveryDone(event.Recovery{Queue: "orders", Epoch: 3, Took: 22 * time.Millisecond, RPCs: 6, Bytes: 100, Attempt: 2}))
	tl.observe(at(53), event.NewQueueActive("orders", 3, 1, 10))

	recs, marks := tl.snapshot()
	if len(marks) != 1 || marks[0].Kind != status.MarkSuspect || marks[0].Node != 1 || marks[0].By != 2 {
		t.Errorf("marks %+v, want one suspicion of n1 by n2", marks)
	}
	if len(recs) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(recs), recs)
	}
	first, second := recs[0], recs[1]
	if first.Outcome != stageRetry || first.Why != "no quorum" || !first.End.Equal(at(25)) {
		t.Errorf("first attempt %+v, want a retry ending at +25ms, why no quorum", first)
	}
	if second.Outcome != outcomeOK || second.Attempt != 2 || second.RPCs != 6 || second.Bytes != 100 || !second.End.Equal(at(52)) {
		t.Errorf("second attempt %+v, want ok, attempt 2, 6 RPCs, 100 bytes, ending at +52ms", second)
	}
	var names string
	for _, s := range second.Stages {
		names += fmt.Sprintf("%s@%d+%g ", s.Name, s.Start.Sub(t0).Milliseconds(), s.TookSeconds*1e3)
	}
	if want := "seal@30+10 fetch@40+5 install@45+7 "; names != want {
		t.Errorf("stages %q, want %q", names, want)
	}
}

// The timeline stays bounded: a queue keeps its last attemptsPerQueue
// attempts, the table its maxTimelineQueues newest queues, and the marks
// their last maxMarks.
func TestTimelineIsBounded(t *testing.T) {
	tl := newTimeline(1)
	now := time.Unix(1000, 0)
	for i := range attemptsPerQueue + 3 {
		now = now.Add(time.Millisecond)
		tl.observe(now, event.NewRecoveryStart("orders", uint64(i+1), 1))
	}
	for i := range maxTimelineQueues + 5 {
		now = now.Add(time.Millisecond)
		tl.observe(now, event.NewRecoveryStart(fmt.Sprintf("q%04d", i), 1, 1))
	}
	for range maxMarks + 10 {
		tl.observe(now, event.NewDetectConfirm(3))
	}
	recs, marks := tl.snapshot()
	queues := map[string]int{}
	for _, r := range recs {
		queues[r.Queue]++
	}
	if len(queues) != maxTimelineQueues || queues["orders"] != 0 || queues["q0000"] != 0 || queues[fmt.Sprintf("q%04d", maxTimelineQueues+4)] != 1 {
		t.Errorf("the table holds %d queues (orders %d, q0000 %d), want the newest %d", len(queues), queues["orders"], queues["q0000"], maxTimelineQueues)
	}
	if len(marks) != maxMarks {
		t.Errorf("%d marks kept, want %d", len(marks), maxMarks)
	}
	tl = newTimeline(1)
	for i := range attemptsPerQueue + 3 {
		tl.observe(now, event.NewRecoveryStart("orders", uint64(i+1), 1))
	}
	recs, _ = tl.snapshot()
	if len(recs) != attemptsPerQueue || recs[0].Epoch != 4 {
		t.Errorf("one queue kept %d attempts from epoch %d, want the last %d from epoch 4", len(recs), recs[0].Epoch, attemptsPerQueue)
	}
}

// Traffic counts publishes, acks and nacks (one by one or batched) and
// deliveries per queue, and forgets queues no longer listed.
func TestTrafficCounts(t *testing.T) {
	var c trafficCounts
	c.request(&wire.Publish{Queue: "orders"})
	c.request(&wire.Publish{Queue: "orders"})
	c.request(&wire.Settle{Queue: "orders"})
	c.request(&wire.Settle{Queue: "orders", Nack: true})
	c.request(&wire.SettleBatch{Queue: "orders", Items: []wire.SettleItem{{}, {}, {Nack: true}}})
	c.reply(&wire.Delivery{Queue: "orders"})
	c.reply(&wire.Reply{})
	c.request(&wire.Publish{Queue: "gone"})
	got := c.read("orders")
	if want := (status.Traffic{Published: 2, Delivered: 1, Acked: 3, Nacked: 2}); got == nil || *got != want {
		t.Fatalf("orders: %+v, want %+v", got, want)
	}
	c.prune(map[string]bool{"orders": true})
	if c.read("gone") != nil || c.read("orders") == nil {
		t.Error("prune kept a queue not listed, or dropped one listed")
	}
}
