// Package eventlog reads node events back from the text logs cairn-node
// writes (slog's text format), for tools and tests that measure a live
// cluster from outside: when did a survivor first suspect the dead owner,
// when did the new owner activate.
package eventlog

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
)

// Event names a node event to look for: its name and one attribute it
// must carry, Key with Value as the log renders it (a node ID as its
// number, a string as itself).
type Event struct {
	Name  event.Name
	Key   event.Key
	Value string
}

// FirstLogged returns the earliest time, at or after since, at which one
// of the logs records ev, and whether any does. Nodes log wall-clock time
// to the millisecond, so since is truncated to the millisecond as well.
func FirstLogged(logs []string, ev Event, since time.Time) (time.Time, bool, error) {
	since = since.Truncate(time.Millisecond)
	var first time.Time
	for _, path := range logs {
		at, ok, err := firstInLog(path, ev, since)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero(), nil
}

// firstInLog scans one log for the first record of ev at or after since.
// Lines that cannot mention the event are passed over without parsing:
// a debug log of a large backlog runs to many megabytes.
func firstInLog(path string, ev Event, since time.Time) (time.Time, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false, err
	}
	defer f.Close()
	marker := "msg=" + string(ev.Name)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, marker) {
			continue
		}
		if at, ok := At(line, ev); ok && !at.Before(since) {
			return at, true, nil
		}
	}
	return time.Time{}, false, sc.Err()
}

// At parses one line of slog's text format and, if it records ev,
// returns the line's time. A key may appear twice (each line carries the
// logging node as node=nN, and an event may have a node attribute of its
// own), so every occurrence of the key is compared.
func At(line string, ev Event) (time.Time, bool) {
	var at time.Time
	var named, matched bool
	for _, f := range Fields(line) {
		switch {
		case f[0] == "time":
			at, _ = time.Parse(time.RFC3339Nano, f[1])
		case f[0] == "msg":
			named = f[1] == string(ev.Name)
		case f[0] == string(ev.Key) && f[1] == ev.Value:
			matched = true
		}
	}
	return at, named && matched && !at.IsZero()
}

// Fields splits a line of slog's text format into key/value pairs,
// unquoting quoted values. It stops at the first thing that is not a
// pair.
func Fields(line string) [][2]string {
	var out [][2]string
	rest := strings.TrimSpace(line)
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.Contains(key, " ") {
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
