package live

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testEvents is an event logger whose log lines (without their time, so
// a test can compare them whole) go to a buffer, and whose instruments
// are registered in a registry of the test's own.
type testEvents struct {
	*eventLogger
	buf bytes.Buffer
	reg *prometheus.Registry
}

// newTestEvents returns an event logger logging at level.
func newTestEvents(t *testing.T, level slog.Level) *testEvents {
	t.Helper()
	te := &testEvents{reg: prometheus.NewRegistry()}
	dropTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	te.eventLogger = newEventLogger(slog.New(slog.NewTextHandler(&te.buf, &slog.HandlerOptions{Level: level, ReplaceAttr: dropTime})))
	te.reg.MustRegister(te.metrics)
	return te
}

// lines returns the logged lines that carry msg, in order.
func (te *testEvents) lines(msg string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(te.buf.String()), "\n") {
		if strings.Contains(line, " msg="+msg+" ") || strings.HasSuffix(line, " msg="+msg) {
			out = append(out, line)
		}
	}
	return out
}

// family returns the gathered metric family called name, or nil when it
// has no series.
func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// series returns the metric of family name whose labels are exactly
// labels ("k=v" each), or nil.
func series(t *testing.T, g prometheus.Gatherer, name string, labels ...string) *dto.Metric {
	t.Helper()
	f := family(t, g, name)
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		var got []string
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if slices.Equal(got, labels) {
			return m
		}
	}
	return nil
}

// checkHistogram fails unless histogram name{labels} holds count samples
// summing to sum seconds.
func checkHistogram(t *testing.T, g prometheus.Gatherer, name string, count uint64, sum float64, labels ...string) {
	t.Helper()
	m := series(t, g, name, labels...)
	if m == nil {
		t.Errorf("%s%v: no series, want %d samples", name, labels, count)
		return
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != count || math.Abs(h.GetSampleSum()-sum) > 1e-9 {
		t.Errorf("%s%v: %d samples summing to %gs, want %d summing to %gs", name, labels, h.GetSampleCount(), h.GetSampleSum(), count, sum)
	}
}

// stageEnd is the common part of a stage event of orders' recovery into
// epoch 3.
func stageEnd(stage string, took time.Duration) event.StageEnd {
	return event.StageEnd{Queue: "orders", Epoch: 3, Stage: stage, Took: took}
}

// A recovery whose first attempt retries in its fetch stage and whose
// second succeeds: every stage is observed under its stage and outcome,
// each attempt under how it ended (the retried one timed from its start
// to its retry on the runtime's clock, the successful one as
// recovery.done reports it), and one info line sums the whole recovery
// up, stages in the order they ran.
func TestRecoverySummaryAndTimings(t *testing.T) {
	te := newTestEvents(t, slog.LevelInfo)
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	te.emit(at(0), event.NewRecoveryStart("orders", 3, 1))
	te.emit(at(1), event.NewRecoveryStageSealed(stageEnd("seal", time.Millisecond), 2, 2, 10, 2))
	te.emit(at(5), event.NewRecoveryStageRetry(stageEnd("fetch", 4*time.Millisecond), "the source stopped answering"))
	te.emit(at(5), event.NewRecoveryStart("orders", 3, 2))
	te.emit(at(6.2), event.NewRecoveryStageSealed(stageEnd("seal", 1200*time.Microsecond), 2, 2, 10, 2))
	te.emit(at(6.5), event.NewRecoveryStageFetched(stageEnd("fetch", 300*time.Microsecond), 1024))
	te.emit(at(8.6), event.NewRecoveryStageInstalled(stageEnd("install", 2100*time.Microsecond), 11))
	te.emit(at(8.6), event.NewRecoveryDone(event.Recovery{Queue: "orders", Epoch: 3, Took: 3600 * time.Microsecond,
		RPCs: 4, Bytes: 1024, Syncs: 2, Attempt: 2}))
	te.emit(at(8.6), event.NewQueueActive("orders", 3, 1, 11))

	const stages = "cairn_recovery_stage_seconds"
	checkHistogram(t, te.reg, stages, 2, 0.0022, "outcome=ok", "stage=seal")
	checkHistogram(t, te.reg, stages, 1, 0.004, "outcome=retry", "stage=fetch")
	checkHistogram(t, te.reg, stages, 1, 0.0003, "outcome=ok", "stage=fetch")
	checkHistogram(t, te.reg, stages, 1, 0.0021, "outcome=ok", "stage=install")
	checkHistogram(t, te.reg, "cairn_recovery_seconds", 1, 0.005, "outcome=retry")
	checkHistogram(t, te.reg, "cairn_recovery_seconds", 1, 0.0036, "outcome=ok")

	want := `level=INFO msg=recovery-summary q=orders epoch=3 took=8.6ms ` +
		`stages="seal=1ms fetch=4ms(retry) seal=1.2ms fetch=0.3ms install=2.1ms" outcome=ok retries=1 rpcs=4 bytes=1024 syncs=2`
	if got := te.lines(recoverySummaryMsg); len(got) != 1 || got[0] != want {
		t.Errorf("summary lines:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), want)
	}
	if n := len(te.recoveries.byQueue); n != 0 {
		t.Errorf("%d recoveries still followed after the only one ended", n)
	}
}

// A recovery that ends without recovery.done is still timed and summed
// up: one whose queue turned active (timed from its start, on the
// runtime's clock), one abandoned (with why), one whose replica went
// stale. Each outcome is its own series.
func TestRecoveryEndsWithoutDone(t *testing.T) {
	te := newTestEvents(t, slog.LevelInfo)
	t0 := time.Unix(1000, 0)
	te.emit(t0, event.NewRecoveryStart("a", 2, 1))
	te.emit(t0.Add(time.Millisecond), event.NewRecoveryStageSealed(event.StageEnd{Queue: "a", Epoch: 2, Stage: "seal", Took: time.Millisecond}, 2, 1, 0, 1))
	te.emit(t0.Add(3*time.Millisecond), event.NewQueueActive("a", 2, 1, 1))

	te.emit(t0, event.NewRecoveryStart("b", 5, 1))
	te.emit(t0.Add(1500*time.Millisecond), event.NewRecoveryAbandoned("b", 5, "the owner stopped"))

	te.emit(t0, event.NewRecoveryStart("c", 7, 1))
	te.emit(t0.Add(20*time.Millisecond), event.NewQueueStale("c", 8, "a replica was sealed at a newer epoch"))

	checkHistogram(t, te.reg, "cairn_recovery_seconds", 1, 0.003, "outcome=ok")
	checkHistogram(t, te.reg, "cairn_recovery_seconds", 1, 1.5, "outcome=abandoned")
	checkHistogram(t, te.reg, "cairn_recovery_seconds", 1, 0.02, "outcome=stale")
	want := []string{
		`level=INFO msg=recovery-summary q=a epoch=2 took=3ms stages="seal=1ms" outcome=ok retries=0`,
		`level=INFO msg=recovery-summary q=b epoch=5 took=1.5s stages="" outcome=abandoned retries=0 why="the owner stopped"`,
		`level=INFO msg=recovery-summary q=c epoch=7 took=20ms stages="" outcome=stale retries=0`,
	}
	if got := te.lines(recoverySummaryMsg); !slices.Equal(got, want) {
		t.Errorf("summary lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The table of followed recoveries stays bounded: a start in a newer
// epoch replaces the queue's older recovery, whose late events then join
// nothing, and beyond maxTrackedRecoveries queues the one started
// longest ago is forgotten. A forgotten recovery that completes is still
// summed up, without the stages nobody kept.
func TestRecoveryTableIsBounded(t *testing.T) {
	te := newTestEvents(t, slog.LevelInfo)
	now := time.Unix(1000, 0)
	te.emit(now, event.NewRecoveryStart("q0", 2, 1))
	te.emit(now, event.NewRecoveryStart("q0", 3, 1))
	te.emit(now, event.NewRecoveryStageSealed(event.StageEnd{Queue: "q0", Epoch: 2, Stage: "seal", Took: time.Millisecond}, 2, 1, 0, 1))
	if run := te.recoveries.run("q0"); run == nil || run.epoch != 3 || len(run.stages) != 0 {
		t.Fatalf("after a start in epoch 3, q0's run is %+v, want epoch 3 with no stage", run)
	}
	for i := 1; i <= maxTrackedRecoveries; i++ {
		te.emit(now, event.NewRecoveryStart(fmt.Sprintf("q%d", i), 2, 1))
	}
	if n, m := len(te.recoveries.byQueue), te.recoveries.order.Len(); n != maxTrackedRecoveries || m != n {
		t.Fatalf("%d queues followed (%d in order) after %d starts, want %d", n, m, maxTrackedRecoveries+1, maxTrackedRecoveries)
	}
	if te.recoveries.run("q0") != nil || te.recoveries.run("q1") == nil {
		t.Fatalf("the oldest recovery (q0) was not the one forgotten")
	}

	te.emit(now, event.NewRecoveryDone(event.Recovery{Queue: "q0", Epoch: 3, Took: 2 * time.Millisecond, Attempt: 3}))
	te.emit(now, event.NewRecoveryStageSealed(event.StageEnd{Queue: "q1", Epoch: 2, Stage: "seal", Took: time.Millisecond}, 2, 1, 0, 1))
	te.emit(now, event.NewRecoveryDone(event.Recovery{Queue: "q1", Epoch: 2, Took: time.Millisecond, Attempt: 1}))
	want := []string{
		`level=INFO msg=recovery-summary q=q0 epoch=3 took=2ms stages="" outcome=ok retries=2 rpcs=0 bytes=0 syncs=0`,
		`level=INFO msg=recovery-summary q=q1 epoch=2 took=1ms stages="seal=1ms" outcome=ok retries=0 rpcs=0 bytes=0 syncs=0`,
	}
	if got := te.lines(recoverySummaryMsg); !slices.Equal(got, want) {
		t.Errorf("summary lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(te.recoveries.byQueue); n != maxTrackedRecoveries-1 {
		t.Errorf("%d queues followed after q1's recovery ended, want %d", n, maxTrackedRecoveries-1)
	}
}

// A recovery that retries without end lists maxSummaryStages stages and
// counts the rest, so neither its memory nor its line grows with it.
func TestRecoverySummaryStagesAreBounded(t *testing.T) {
	te := newTestEvents(t, slog.LevelInfo)
	now := time.Unix(1000, 0)
	for attempt := 1; attempt <= maxSummaryStages+5; attempt++ {
		te.emit(now, event.NewRecoveryStart("orders", 3, attempt))
		te.emit(now, event.NewRecoveryStageRetry(stageEnd("seal", time.Millisecond), "no quorum"))
	}
	run := te.recoveries.run("orders")
	if run == nil || len(run.stages) != maxSummaryStages || run.omitted != 5 || run.retries != maxSummaryStages+5 {
		t.Fatalf("run %+v, want %d stages kept, 5 omitted, %d retries", run, maxSummaryStages, maxSummaryStages+5)
	}
	if s := run.renderStages(); !strings.HasSuffix(s, "seal=1ms(retry) +5 more") {
		t.Errorf("stages render as %q, want them to end with the count left out", s)
	}
}

// The failure detector's suspicions and confirmations are counted by
// peer, and this node's metadata elections in one counter; none of them
// depends on the log level.
func TestDetectorAndElectionCounters(t *testing.T) {
	te := newTestEvents(t, slog.LevelError)
	now := time.Unix(1000, 0)
	for _, ev := range []event.Event{
		event.NewDetectSuspect(3, time.Second), event.NewDetectSuspect(3, 2*time.Second), event.NewDetectSuspect(2, time.Second),
		event.NewDetectConfirm(3), event.NewDetectFlapped(3, 1), event.NewMetaLeader(4, 1), event.NewMetaLeader(6, 1),
	} {
		te.emit(now, ev)
	}
	for _, c := range []struct {
		name  string
		want  float64
		label []string
	}{
		{"cairn_detector_suspicions_total", 2, []string{"peer=n3"}},
		{"cairn_detector_suspicions_total", 1, []string{"peer=n2"}},
		{"cairn_detector_confirmations_total", 1, []string{"peer=n3"}},
		{"cairn_detector_flaps_total", 1, []string{"peer=n3"}},
		{"cairn_meta_leader_elections_total", 2, nil},
	} {
		m := series(t, te.reg, c.name, c.label...)
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.label, m.GetCounter().GetValue(), c.want)
		}
	}
	if te.buf.Len() != 0 {
		t.Errorf("logged at level error:\n%s", te.buf.String())
	}
}

// The summary's message is not an event name, so a tool that reads the
// log back for an event never mistakes a summary for it.
func TestRecoverySummaryIsNoEventName(t *testing.T) {
	if slices.Contains(event.Names(), event.Name(recoverySummaryMsg)) {
		t.Fatalf("%q is also an event name", recoverySummaryMsg)
	}
}

// Durations read plainly, to the microsecond the events carry.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		25 * time.Microsecond:    "0.025ms",
		1234 * time.Microsecond:  "1.234ms",
		250 * time.Millisecond:   "250ms",
		12500 * time.Millisecond: "12.5s",
		time.Second:              "1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
