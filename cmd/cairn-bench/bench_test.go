package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A line as a node writes it: the runtime's node=nN tag comes first, the
// event's own node attribute after it.
const suspectLine = `time=2026-01-02T03:04:05.678Z level=DEBUG msg=detect.suspect node=n3 node=2 silent-ms=410`

func TestEventAtComparesEveryOccurrenceOfAKey(t *testing.T) {
	at, ok := eventAt(suspectLine, logEvent{name: "detect.suspect", key: "node", value: "2"})
	want := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	if !ok || !at.Equal(want) {
		t.Fatalf("eventAt = %v, %v; want %v, true", at, ok, want)
	}
	for _, ev := range []logEvent{
		{name: "detect.suspect", key: "node", value: "3"},
		{name: "detect.confirm", key: "node", value: "2"},
		{name: "detect.suspect", key: "q", value: "2"},
	} {
		if _, ok := eventAt(suspectLine, ev); ok {
			t.Errorf("eventAt matched %+v", ev)
		}
	}
}

func TestLogFieldsUnquotesValues(t *testing.T) {
	got := logFields(`time=x level=INFO msg="peer connected" remote="a b=c" n=1`)
	want := [][2]string{{"time", "x"}, {"level", "INFO"}, {"msg", "peer connected"}, {"remote", "a b=c"}, {"n", "1"}}
	if len(got) != len(want) {
		t.Fatalf("logFields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logFields = %q, want %q", got, want)
		}
	}
}

func TestFirstLoggedTakesTheEarliestAtOrAfterSince(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.log",
		`time=2026-01-02T03:04:04.000Z level=DEBUG msg=detect.suspect node=n1 node=2`, // before since
		`time=2026-01-02T03:04:06.500Z level=DEBUG msg=detect.suspect node=n1 node=2`)
	b := write("b.log",
		`time=2026-01-02T03:04:05.900Z level=DEBUG msg=detect.suspect node=n3 node=1`, // another node
		`time=2026-01-02T03:04:06.100Z level=DEBUG msg=detect.suspect node=n3 node=2`)
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at, ok, err := firstLogged([]string{a, b}, logEvent{name: "detect.suspect", key: "node", value: "2"}, since)
	if err != nil || !ok || !at.Equal(since.Add(1100*time.Millisecond)) {
		t.Fatalf("firstLogged = %v, %v, %v; want %v", at, ok, err, since.Add(1100*time.Millisecond))
	}
	if _, ok, _ := firstLogged([]string{a, b}, logEvent{name: "queue.active", key: "q", value: "bench"}, since); ok {
		t.Fatal("firstLogged found an event no log records")
	}
}

func TestSummarizeUsesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 30; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := summarize(ds)
	if d.n != 30 || d.median != 15*time.Millisecond || d.p95 != 29*time.Millisecond || d.high != 30*time.Millisecond {
		t.Fatalf("summarize(1..30ms) = %+v", d)
	}
	if one := summarize(ds[:1]); one.median != 30*time.Millisecond || one.p95 != one.median {
		t.Fatalf("summarize of one value = %+v", one)
	}
}

func TestParseFailoverValidates(t *testing.T) {
	c, err := parseFailover(nil, io.Discard)
	if err != nil || c.trials != 30 || c.backlog != 0 || c.traffic != "idle" || c.rate != 500 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--traffic", "hot"}, {"--backlog", "-1"}, {"--trials", "0"}, {"--rate", "0"}, {"--keep", "some"}, {"extra"},
	} {
		if _, err := parseFailover(args, io.Discard); err == nil {
			t.Errorf("parseFailover(%q) accepted", args)
		}
	}
}

func TestReportExitCodes(t *testing.T) {
	done := trialResult{confirmed: 5}
	for i := range numInstants {
		done.set(i, time.Duration(i+1)*time.Millisecond)
	}
	slow, lost := done, done
	slow.failure = "no activation within 20s"
	lost.lost = 1
	for _, c := range []struct {
		results []trialResult
		want    int
	}{
		{[]trialResult{done, done}, exitOK},
		{[]trialResult{done, slow}, exitIncomplete},
		{[]trialResult{slow, lost}, exitLost},
	} {
		var out strings.Builder
		if got := report(&out, c.results); got != c.want {
			t.Errorf("report = %d, want %d\n%s", got, c.want, out.String())
		}
	}
}
