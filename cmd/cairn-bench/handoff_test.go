package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseHandoffValidates(t *testing.T) {
	c, err := parseHandoff(nil, io.Discard)
	if err != nil || c.trials != 30 || c.kills != 10 || c.rate != 1000 || c.settle != 500*time.Millisecond {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--trials", "0"}, {"--kills", "-1"}, {"--fault", "pause"}, {"--rate", "0"}, {"--in-flight", "0"}, {"--settle", "0s"}, {"extra"},
	} {
		if _, err := parseHandoff(args, io.Discard); err == nil {
			t.Errorf("parseHandoff(%q) accepted", args)
		}
	}
}

// The gap that spans the window's start counts whole; gaps wholly
// before or after the window do not.
func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(msecs ...int) []time.Time {
		var ts []time.Time
		for _, m := range msecs {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	from, to := t0.Add(100*time.Millisecond), t0.Add(500*time.Millisecond)
	cases := []struct {
		ts   []time.Time
		want time.Duration
	}{
		{at(0, 50, 90, 110, 120, 400, 410, 480), 280 * time.Millisecond},  // 120 -> 400, inside
		{at(0, 10, 20, 390, 400, 410, 420), 370 * time.Millisecond},       // 20 -> 390 spans the start
		{at(0, 300, 110, 120, 130), 170 * time.Millisecond},               // out of order: 130 -> 300
		{at(0, 60, 110, 120, 130, 490, 1500), 1010 * time.Millisecond},    // 490 -> 1500 spans the end
		{at(0, 95, 105, 115, 125, 135, 145, 600), 455 * time.Millisecond}, // 145 -> 600 spans the end
		{at(0, 10, 20, 30, 1000, 1010), 970 * time.Millisecond},           // nothing confirmed inside
		{at(600, 1600), 0}, // wholly after
	}
	for i, c := range cases {
		if got := longestGap(c.ts, from, to); got != c.want {
			t.Errorf("case %d: gap %v, want %v", i, got, c.want)
		}
	}
}

func TestHandoffReportCodesAndSummary(t *testing.T) {
	ok := phaseResult{name: "move", trials: 2, confirmed: 100,
		outcomes: []trialOutcome{{gap: 40 * time.Millisecond, call: 20 * time.Millisecond}, {gap: 60 * time.Millisecond, call: 30 * time.Millisecond}}}
	kill := phaseResult{name: "kill", trials: 1, confirmed: 50, failed: 3, outcomes: []trialOutcome{{gap: 400 * time.Millisecond}}}
	var out strings.Builder
	if code := handoffReport(&out, 5*time.Millisecond, ok, kill); code != exitOK {
		t.Errorf("report = %d, want %d (a failover may fail publishes)\n%s", code, exitOK, out.String())
	}
	s, err := parseSummary(out.String(), "move")
	if err != nil || s["trials"] != 2 || s["completed"] != 2 || s["gap_median_ms"] != 40 || s["gap_max_ms"] != 60 || s["call_max_ms"] != 30 {
		t.Errorf("move summary %v, %v\n%s", s, err, out.String())
	}
	if !strings.Contains(out.String(), "median gap 10.0x") {
		t.Errorf("no ratio of the median gaps:\n%s", out.String())
	}
	unknown, lost := ok, ok
	unknown.unknown = 1
	lost.lost = 1
	for _, c := range []struct {
		p    phaseResult
		want int
	}{{unknown, exitIncomplete}, {lost, exitLost}} {
		if code := handoffReport(io.Discard, 0, c.p, kill); code != c.want {
			t.Errorf("report of %+v = %d, want %d", c.p, code, c.want)
		}
	}
}

// TestHandoffBenchmarkRuns runs two moves and one failover on real
// processes: the report must parse, and nothing confirmed be lost.
func TestHandoffBenchmarkRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cairn-node processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errs strings.Builder
	code := run(ctx, []string{"handoff", "--trials", "2", "--kills", "1", "--settle", "200ms"}, &out, &errs)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	for phase, trials := range map[string]int{"move": 2, "kill": 1} {
		s, err := parseSummary(out.String(), phase)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if s["completed"] != trials || s["lost"] != 0 || s["confirmed"] == 0 || s["gap_max_ms"] <= 0 {
			t.Errorf("%s summary %v: want %d completed, some confirmed, a gap and none lost\n%s", phase, s, trials, out.String())
		}
		if phase == "move" && (s["failed"] != 0 || s["unknown"] != 0 || s["call_max_ms"] <= 0) {
			t.Errorf("move summary %v: want no failed or unknown publish and a timed call", s)
		}
	}
}

// A roll that left a publish unknown did not go as a rolling restart
// with handoffs must; its summary carries the latency figures.
func TestHandoffReportRoll(t *testing.T) {
	c, err := parseHandoff([]string{"--roll", "--trials", "2"}, io.Discard)
	if err != nil || !c.roll || c.trials != 2 {
		t.Fatalf("--roll --trials 2: %+v, %v", c, err)
	}
	roll := phaseResult{name: "roll", trials: 1, confirmed: 10,
		outcomes: []trialOutcome{{gap: 50 * time.Millisecond, latency: 70 * time.Millisecond, handoffs: 2}}}
	var out strings.Builder
	if code := handoffReport(&out, 0, roll); code != exitOK {
		t.Errorf("report = %d, want %d\n%s", code, exitOK, out.String())
	}
	if s, err := parseSummary(out.String(), "roll"); err != nil || s["latency_max_ms"] != 70 || s["gap_max_ms"] != 50 {
		t.Errorf("roll summary %v, %v\n%s", s, err, out.String())
	}
	roll.unknown = 1
	if code := handoffReport(io.Discard, 0, roll); code != exitIncomplete {
		t.Errorf("a roll with an unknown publish: report = %d, want %d", code, exitIncomplete)
	}
}

// TestHandoffRollRuns runs one rolling restart on real processes: every
// stop hands off, no publish fails and nothing confirmed is lost.
func TestHandoffRollRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cairn-node processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errs strings.Builder
	code := run(ctx, []string{"handoff", "--roll", "--trials", "1", "--rate", "300", "--settle", "200ms"}, &out, &errs)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	s, err := parseSummary(out.String(), "roll")
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if s["completed"] != 1 || s["lost"] != 0 || s["failed"] != 0 || s["unknown"] != 0 || s["confirmed"] == 0 || s["latency_max_ms"] <= 0 {
		t.Errorf("roll summary %v: want 1 completed, some confirmed, a latency, none failed, unknown or lost\n%s", s, out.String())
	}
	t.Logf("%s%s", errs.String(), out.String())
}
