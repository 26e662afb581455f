package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
)

func TestParseLogLine(t *testing.T) {
	at, e, ok := parseLogLine(`time=2026-12-02T03:30:22.664Z level=DEBUG msg=detect.suspect node=n1 node=2 silent-ms=100`)
	if !ok || e.Name != event.DetectSuspect || e.Node() != 2 || at.Format(time.RFC3339Nano) != "2026-12-02T03:30:22.664Z" {
		t.Errorf("detect.suspect: %v %+v %v", at, e, ok)
	}
	_, e, ok = parseLogLine(`time=2026-12-02T03:30:22.689Z level=DEBUG msg=queue.role node=n3 q=bench from=follower to=candidate epoch=1 why="the metadata names this node owner"`)
	if !ok || e.Queue() != "bench" || e.To() != "candidate" || e.Why() != "the metadata names this node owner" || e.Epoch() != 1 {
		t.Errorf("queue.role: %+v", e)
	}
	_, e, ok = parseLogLine(`time=2026-12-02T03:30:22.717Z level=DEBUG msg=recovery.stage node=n3 q=bench epoch=2 stage=seal outcome=ok us=4213 witnesses=2 source=n3`)
	if !ok || e.Stage() != "seal" || e.Outcome() != "ok" || e.Elapsed() != 4213*time.Microsecond || e.Source() != 3 {
		t.Errorf("recovery.stage: %+v", e)
	}
	// Lines that are not events: a message with spaces, a truncated line.
	if _, e, ok := parseLogLine(`time=2026-12-02T03:30:21.104Z level=INFO msg="node serving" node=n1 client=127.0.0.1:37615`); !ok || e.Name != "node serving" {
		t.Errorf("a plain log line: %+v %v", e, ok)
	}
	if _, _, ok := parseLogLine(`garbage without pairs`); ok {
		t.Error("a line without pairs parsed")
	}
}

// stageLog is a survivor's log of a failover: n2 is killed at
// 03:30:22.600, n3 recovers queue bench. Other queues' and other nodes'
// events, and events before the kill, must not count.
const stageLog = `time=2026-12-02T03:30:22.100Z level=DEBUG msg=queue.role node=n3 q=bench from=preparing to=candidate epoch=0 why=x
time=2026-12-02T03:30:22.606Z level=DEBUG msg=detect.reset node=n3 node=2
time=2026-12-02T03:30:22.650Z level=DEBUG msg=detect.suspect node=n3 node=1 silent-ms=100
time=2026-12-02T03:30:22.664Z level=DEBUG msg=detect.suspect node=n3 node=2 silent-ms=100
time=2026-12-02T03:30:22.664Z level=DEBUG msg=detect.confirm node=n3 node=2
time=2026-12-02T03:30:22.665Z level=INFO msg=meta.plan-recovery node=n3 q=other from=2 to=3 epoch=2
time=2026-12-02T03:30:22.666Z level=INFO msg=meta.plan-recovery node=n3 q=bench from=2 to=3 epoch=2
time=2026-12-02T03:30:22.683Z level=DEBUG msg=meta.node-down node=n3 node=2
time=2026-12-02T03:30:22.689Z level=DEBUG msg=queue.role node=n3 q=bench from=follower to=candidate epoch=1 why="the metadata names this node owner"
time=2026-12-02T03:30:22.712Z level=DEBUG msg=recovery.start node=n3 q=bench epoch=2 attempt=1
time=2026-12-02T03:30:22.715Z level=DEBUG msg=recovery.stage node=n3 q=bench epoch=2 stage=seal outcome=retry us=1000 why=lost
time=2026-12-02T03:30:22.716Z level=DEBUG msg=recovery.start node=n3 q=bench epoch=2 attempt=2
time=2026-12-02T03:30:22.717Z level=DEBUG msg=recovery.stage node=n3 q=bench epoch=2 stage=seal outcome=ok us=4213 witnesses=2
time=2026-12-02T03:30:22.720Z level=DEBUG msg=recovery.stage node=n3 q=bench epoch=2 stage=verify outcome=ok us=500
time=2026-12-02T03:30:22.729Z level=DEBUG msg=recovery.stage node=n3 q=bench epoch=2 stage=install outcome=ok us=12252 marker=2
time=2026-12-02T03:30:22.729Z level=INFO msg=recovery.done node=n3 q=bench epoch=2 us=16465 rpcs=2 bytes=0 syncs=2 attempt=2
time=2026-12-02T03:30:22.729Z level=INFO msg=queue.active node=n3 q=bench epoch=2 inc=1 last=2
time=2026-12-02T03:30:22.729Z level=INFO msg=queue.active node=n3 q=other epoch=2 inc=1 last=2
`

// leaderLog is another survivor's: it became metadata leader and
// confirmed n2 down before n3 did.
const leaderLog = `time=2026-12-02T03:30:22.640Z level=INFO msg=meta.leader node=n1 term=3 node=1
time=2026-12-02T03:30:22.660Z level=DEBUG msg=detect.confirm node=n1 node=2
`

func TestReadStages(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "n3.log"), filepath.Join(dir, "n1.log")
	if err := os.WriteFile(a, []byte(stageLog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(leaderLog), 0o644); err != nil {
		t.Fatal(err)
	}
	kill := time.Date(2026, 12, 2, 3, 30, 22, 600_400_000, time.UTC)
	st, err := readStages([]string{a, b}, 2, "bench", kill)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]time.Duration{
		markKill: 0, markReset: 6, markLeader: 40, markSuspect: 64, markConfirm: 60, markPlan: 66,
		markNodeDown: 83, markCandidate: 89, markStart: 112, markAdmit: 129, markActive: 129,
	}
	for i := range numMarks {
		w, ok := want[i]
		if st.seen[i] != ok || ok && st.mark[i] != w*time.Millisecond {
			t.Errorf("%s: got %v (seen %v), want %v ms (seen %v)", markEvents[i], st.mark[i], st.seen[i], w, ok)
		}
	}
	wantStages := []stageSpan{{"seal (retry)", time.Millisecond}, {"seal", 4213 * time.Microsecond},
		{"verify", 500 * time.Microsecond}, {"install", 12252 * time.Microsecond}}
	if len(st.recovery) != len(wantStages) {
		t.Fatalf("recovery stages %+v, want %+v", st.recovery, wantStages)
	}
	for i, s := range wantStages {
		if st.recovery[i] != s {
			t.Errorf("recovery stage %d: %+v, want %+v", i, st.recovery[i], s)
		}
	}
	if !st.totalSeen || st.total != 16465*time.Microsecond || st.attempts != 2 {
		t.Errorf("total %v (%v), attempts %d", st.total, st.totalSeen, st.attempts)
	}
}

func TestStageReport(t *testing.T) {
	var one, two trialResult
	for i, st := range []*stageTimes{&one.stages, &two.stages} {
		st.set(markKill, 0)
		st.set(markConfirm, time.Duration(40+i)*time.Millisecond)
		st.set(markPlan, time.Duration(45+i)*time.Millisecond)
		st.addStage("seal", 3*time.Millisecond)
		st.total, st.totalSeen = 10*time.Millisecond, true
	}
	two.stages.addStage("a-stage-from-the-future", 7*time.Millisecond)
	var out strings.Builder
	stageReport(&out, []trialResult{one, two}, "SIGKILL")
	text := out.String()
	if !strings.Contains(text, "from the SIGKILL to the first") {
		t.Errorf("stage report does not name the fault:\n%s", text)
	}
	for label, want := range map[string]string{
		"owner confirmed down (detect.confirm)":            "40.0 ms 41.0 ms 41.0 ms 2",
		"fault -> owner confirmed down":                    "40.0 ms 41.0 ms 41.0 ms 2",
		"confirmed down -> recovery planned by the leader": "5.0 ms 5.0 ms 5.0 ms 2",
		"plan applied -> recovery started":                 "- - - 0",
		"recovery.stage seal":                              "3.0 ms 3.0 ms 3.0 ms 2",
		"recovery.stage a-stage-from-the-future":           "7.0 ms 7.0 ms 7.0 ms 1",
		"the whole attempt (recovery.done)":                "10.0 ms 10.0 ms 10.0 ms 2",
	} {
		if got := reportRow(text, label); got != want {
			t.Errorf("row %q = %q, want %q\n%s", label, got, want, text)
		}
	}
}

// reportRow returns the figures of the report line that starts with label
// (after any indentation), single-spaced.
func reportRow(text, label string) string {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(line, " "), label+" "); ok {
			return strings.Join(strings.Fields(rest), " ")
		}
	}
	return "(no such row)"
}
