package live

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
)

// At the default level an operator's log tells the story of a failover
// and nothing of routine traffic, and a warning that repeats every tick
// costs a few lines, then says how many it left out.
func TestEventLevels(t *testing.T) {
	var buf bytes.Buffer
	l := newEventLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	now := time.Unix(1000, 0)
	l.emit(now, event.NewQueueDeliver("orders", "p1.1", 3))
	l.emit(now, event.NewRecoveryDone(event.Recovery{Queue: "orders", Epoch: 2, Took: 40 * time.Millisecond, Attempt: 1}))
	refused := event.NewQueueRefusedTruncation("orders", 3, 2, errors.New("refusing to drop a confirmed record"))
	for range logBurst + 3 {
		l.emit(now, refused)
	}
	l.emit(now.Add(logEvery), refused)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if strings.Contains(buf.String(), string(event.QueueDeliver)) {
		t.Errorf("a delivery was logged at info:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "msg="+string(event.RecoveryDone)) {
		t.Errorf("recovery.done was logged at info beside its summary:\n%s", buf.String())
	}
	if len(lines) == 0 || !strings.Contains(lines[0], "level=INFO msg="+recoverySummaryMsg) || !strings.Contains(lines[0], "q=orders") {
		t.Fatalf("first line %q, want the recovery's summary at info with its queue", lines[0])
	}
	warnings := lines[1:]
	if len(warnings) != logBurst+1 {
		t.Fatalf("%d warning lines for %d refusals, want %d:\n%s", len(warnings), logBurst+4, logBurst+1, buf.String())
	}
	for _, w := range warnings {
		if !strings.Contains(w, "level=WARN msg="+string(event.QueueRefusedTruncation)) {
			t.Errorf("warning line %q", w)
		}
	}
	if last := warnings[len(warnings)-1]; !strings.Contains(last, "suppressed=3") {
		t.Errorf("the line after the burst does not count the 3 left out: %q", last)
	}
}

// A queue's creation, a metadata election, a replica replacement, a
// replica retired (its queue deleted), a certified checkpoint and a
// failure-detector suspicion and its confirmation each leave exactly one
// line at info, named by its event.
func TestOneInfoLinePerChange(t *testing.T) {
	var buf bytes.Buffer
	l := newEventLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	now := time.Unix(1000, 0)
	changes := []event.Event{
		event.NewMetaActivated("orders", 1),
		event.NewMetaLeader(4, 2),
		event.NewMetaReplicaReplaced("orders", 3, []uint32{1, 2, 4}),
		event.NewQueueRetired("orders", 1),
		event.NewCheckpointCertified("orders", 1, 5000, 3, []uint32{1, 2, 4}),
		event.NewDetectSuspect(3, 900*time.Millisecond),
		event.NewDetectConfirm(3),
	}
	for _, ev := range changes {
		l.emit(now, ev)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(changes) {
		t.Fatalf("%d lines for %d changes:\n%s", len(lines), len(changes), buf.String())
	}
	for i, ev := range changes {
		if !strings.Contains(lines[i], "level=INFO msg="+string(ev.Name)+" ") {
			t.Errorf("line %d is %q, want %s at info", i, lines[i], ev.Name)
		}
	}
}

// A subject's repeats use its own budget, never another's: a peer
// suspected again and again does not silence the first suspicion of
// the next peer to fail.
func TestEachSubjectHasItsOwnLogBudget(t *testing.T) {
	var buf bytes.Buffer
	l := newEventLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	now := time.Unix(1000, 0)
	for range logBurst + 3 {
		l.emit(now, event.NewDetectSuspect(2, 300*time.Millisecond))
	}
	l.emit(now, event.NewDetectSuspect(3, 300*time.Millisecond))
	out := buf.String()
	if n := strings.Count(out, "node=2"); n != logBurst {
		t.Errorf("%d lines suspect node 2 of %d suspicions, want the burst of %d:\n%s", n, logBurst+3, logBurst, out)
	}
	if !strings.Contains(out, "node=3") {
		t.Errorf("node 3's first suspicion was left out, node 2's repeats having spent the budget:\n%s", out)
	}
}
