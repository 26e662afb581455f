package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// firstLogged returns the earliest time at or after since at which one of
// nodes logged the event name with attribute key=value. The node's log
// records wall-clock time to the millisecond, so since is truncated to
// the millisecond too.
func firstLogged(t *testing.T, nodes []*procNode, name string, since time.Time, key, value string) time.Time {
	t.Helper()
	since = since.Truncate(time.Millisecond)
	var first time.Time
	for _, nd := range nodes {
		b, err := os.ReadFile(nd.log)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			at, ok := eventAt(line, name, key, value)
			if ok && !at.Before(since) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	if first.IsZero() {
		t.Fatalf("no node of %v logged %s with %s=%s after %v", ids(nodes), name, key, value, since)
	}
	return first
}

// eventAt parses one text log line and, if it records the event name with
// key=value among its attributes, returns its time. Attribute keys may
// repeat (the runtime tags each line with node=nN, and an event may carry
// its own node attribute), so every occurrence is compared.
func eventAt(line, name, key, value string) (time.Time, bool) {
	fields := logFields(line)
	var at time.Time
	var named, matched bool
	for _, f := range fields {
		switch {
		case f[0] == "time":
			at, _ = time.Parse(time.RFC3339Nano, f[1])
		case f[0] == "msg":
			named = f[1] == name
		case f[0] == key && f[1] == value:
			matched = true
		}
	}
	return at, named && matched && !at.IsZero()
}

// logFields splits a log line written by slog's text handler into
// key/value pairs, unquoting quoted values.
func logFields(line string) [][2]string {
	var out [][2]string
	rest := strings.TrimSpace(line)
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			quoted, err := strconv.QuotedPrefix(after)
			if err != nil {
				break
			}
			value, _ = strconv.Unquote(quoted)
			after = after[len(quoted):]
		} else {
			value, after, _ = strings.Cut(after, " ")
		}
		out = append(out, [2]string{key, value})
		rest = strings.TrimLeft(after, " ")
	}
	return out
}

func TestEventAtReadsTheNodeLogFormat(t *testing.T) {
	line := `time=2026-01-02T03:04:05.678Z level=DEBUG msg=detect.suspect node=n3 node=2 silent-ms=410`
	at, ok := eventAt(line, "detect.suspect", "node", "2")
	if want := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC); !ok || !at.Equal(want) {
		t.Fatalf("eventAt = %v, %v; want %v, true", at, ok, want)
	}
	if _, ok := eventAt(line, "detect.suspect", "node", "3"); ok {
		t.Fatal("eventAt took the logging node's tag for the suspected node")
	}
	quoted := `time=2026-01-02T03:04:05.678Z level=DEBUG msg=queue.stale node=n1 q=failover why="a newer epoch"`
	if _, ok := eventAt(quoted, "queue.stale", "why", "a newer epoch"); !ok {
		t.Fatal("eventAt did not unquote a quoted value")
	}
}
