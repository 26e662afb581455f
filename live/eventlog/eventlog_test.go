package eventlog

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
)

// A line as a node writes it: the runtime's node=nN tag comes first, the
// event's own node attribute after it.
const suspectLine = `time=2026-01-02T03:04:05.678Z level=DEBUG msg=detect.suspect node=n3 node=2 silent-ms=410`

func TestEventAtComparesEveryOccurrenceOfAKey(t *testing.T) {
	at, ok := At(suspectLine, Event{Name: event.DetectSuspect, Key: event.KeyNode, Value: "2"})
	want := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	if !ok || !at.Equal(want) {
		t.Fatalf("At = %v, %v; want %v, true", at, ok, want)
	}
	for _, ev := range []Event{
		{Name: event.DetectSuspect, Key: event.KeyNode, Value: "3"},
		{Name: event.DetectConfirm, Key: event.KeyNode, Value: "2"},
		{Name: event.DetectSuspect, Key: event.KeyQueue, Value: "2"},
	} {
		if _, ok := At(suspectLine, ev); ok {
			t.Errorf("At matched %+v", ev)
		}
	}
}

func TestLogFieldsUnquotesValues(t *testing.T) {
	got := Fields(`time=x level=INFO msg="peer connected" remote="a b=c" n=1`)
	want := [][2]string{{"time", "x"}, {"level", "INFO"}, {"msg", "peer connected"}, {"remote", "a b=c"}, {"n", "1"}}
	if len(got) != len(want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fields = %q, want %q", got, want)
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
	at, ok, err := FirstLogged([]string{a, b}, Event{Name: event.DetectSuspect, Key: event.KeyNode, Value: "2"}, since)
	if err != nil || !ok || !at.Equal(since.Add(1100*time.Millisecond)) {
		t.Fatalf("FirstLogged = %v, %v, %v; want %v", at, ok, err, since.Add(1100*time.Millisecond))
	}
	if _, ok, _ := FirstLogged([]string{a, b}, Event{Name: event.QueueActive, Key: event.KeyQueue, Value: "bench"}, since); ok {
		t.Fatal("FirstLogged found an event no log records")
	}
}

func TestAtUnquotesAQuotedValue(t *testing.T) {
	quoted := `time=2026-01-02T03:04:05.678Z level=DEBUG msg=queue.stale node=n1 q=failover why="a newer epoch"`
	if _, ok := At(quoted, Event{Name: event.QueueStale, Key: event.KeyWhy, Value: "a newer epoch"}); !ok {
		t.Fatal("At did not unquote a quoted value")
	}
}

// A line written the way the runtime logs an event (live's Env.Emit, with
// its node=nN tag) is found by the event's name and attribute: the
// constructors and this reader agree on the rendering.
func TestAtReadsWhatTheRuntimeLogs(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})).With(slog.String("node", "n3"))
	for _, e := range []event.Event{
		event.NewDetectSuspect(2, 410*time.Millisecond),
		event.NewQueueStale("failover", 4, "a newer epoch"),
	} {
		log.LogAttrs(context.Background(), slog.LevelDebug, e.Name.String(), e.Attrs...)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if _, ok := At(lines[0], Event{Name: event.DetectSuspect, Key: event.KeyNode, Value: "2"}); !ok {
		t.Errorf("At did not find the suspicion of node 2 in %q", lines[0])
	}
	if _, ok := At(lines[1], Event{Name: event.QueueStale, Key: event.KeyWhy, Value: "a newer epoch"}); !ok {
		t.Errorf("At did not find the stale owner's reason in %q", lines[1])
	}
}
