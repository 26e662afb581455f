package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// createQueue creates a queue on the node behind conn, retrying while the
// metadata group elects its leader.
func createQueue(t *testing.T, conn []string, name string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, out := cli(t, "", append([]string{"queue", "create", name}, conn...)...)
		if code == exitOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue create %s: %d\n%s", name, code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A line over the message size limit stops the publish with a non-zero
// status and an error naming the limit and how many lines went out
// before it; no later line is published.
func TestPublishStopsAtALineOverTheLimit(t *testing.T) {
	conn := startNode(t)
	createQueue(t, conn, "lines")
	input := "one\ntwo\n" + strings.Repeat("x", wire.MaxPayloadSize+1) + "\nfour\n"
	code, out := cli(t, input, append([]string{"publish", "lines"}, conn...)...)
	if code == exitOK {
		t.Fatalf("publish with an overlong line exited 0:\n%s", out)
	}
	for _, want := range []string{"line 3", "1048576-byte (1 MiB) limit", "published the 2 line(s) before it", "nothing from line 3 on"} {
		if !strings.Contains(out, want) {
			t.Errorf("publish output lacks %q:\n%s", want, out)
		}
	}
	// A marker published afterwards comes after anything the first
	// command published, so the first three deliveries show whether
	// "four" slipped through.
	if code, out := cli(t, "", append([]string{"publish", "lines", "marker"}, conn...)...); code != exitOK {
		t.Fatalf("publishing the marker: %d\n%s", code, out)
	}
	code, out = cli(t, "", append([]string{"consume", "lines", "--ack", "--count", "3"}, conn...)...)
	if code != exitOK {
		t.Fatalf("consume: %d\n%s", code, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Split(line, "\t")
		got = append(got, fields[len(fields)-1])
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"marker", "one", "two"}) {
		t.Fatalf("consumed %q, want one, two and the marker (nothing after the overlong line)", got)
	}
}

// The line reader splits on "\n" and "\r\n", keeps empty lines and a last
// line without a newline, and refuses a line over the limit, counting
// lines from one.
func TestLineReader(t *testing.T) {
	big := strings.Repeat("y", 100<<10) // longer than the reader's buffer
	for _, c := range []struct {
		input   string
		limit   int
		want    []string
		tooLong int // the line refused, or 0
	}{
		{"ab\ncd\n", 4, []string{"ab", "cd"}, 0},
		{"ab\r\ncd", 4, []string{"ab", "cd"}, 0},
		{"\n\nz", 4, []string{"", "", "z"}, 0},
		{"", 4, nil, 0},
		{"abcd\nabcd\r\nabcd", 4, []string{"abcd", "abcd", "abcd"}, 0},
		{"abcde\nx\n", 4, nil, 1},
		{"a\nabcde", 4, []string{"a"}, 2},
		{"a\nabcd\r\r\n", 4, []string{"a"}, 2},
		{big + "\n" + big + "\r\n", len(big), []string{big, big}, 0},
		{"a\n" + big + "y\n", len(big), []string{"a"}, 2},
		{"a\n" + big, len(big) - 1, []string{"a"}, 2},
	} {
		lr := newLineReader(strings.NewReader(c.input), c.limit)
		var got []string
		var err error
		for {
			var msg []byte
			if msg, err = lr.next(); err != nil {
				break
			}
			got = append(got, string(msg))
		}
		name := c.input[:min(len(c.input), 12)]
		switch {
		case !slices.Equal(got, c.want):
			t.Errorf("%q (limit %d): lines %q, want %q", name, c.limit, got, c.want)
		case c.tooLong == 0 && !errors.Is(err, io.EOF):
			t.Errorf("%q (limit %d): ended with %v, want EOF", name, c.limit, err)
		case c.tooLong != 0 && (!errors.Is(err, errLineTooLong) || lr.line != c.tooLong):
			t.Errorf("%q (limit %d): ended with %v at line %d, want line %d too long", name, c.limit, err, lr.line, c.tooLong)
		}
	}
}

// --from-file publishes each line of the file, as stdin's lines would be.
func TestPublishFromFile(t *testing.T) {
	conn := startNode(t)
	createQueue(t, conn, "work")
	path := filepath.Join(t.TempDir(), "lines")
	if err := os.WriteFile(path, []byte("x\ny\nz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := cli(t, "ignored\n", append([]string{"publish", "work", "--from-file", path}, conn...)...); code != exitOK || strings.Count(out, "\n") != 3 {
		t.Fatalf("publish --from-file: %d\n%s", code, out)
	}
	code, out := cli(t, "", append([]string{"consume", "work", "--count", "3"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "\tx\n") || !strings.Contains(out, "\tz\n") || strings.Contains(out, "ignored") {
		t.Fatalf("consume after publish --from-file: %d\n%s", code, out)
	}
	if code, _ := cli(t, "", append([]string{"publish", "work", "--from-file", filepath.Join(t.TempDir(), "none")}, conn...)...); code != exitFailed {
		t.Fatalf("publish --from-file of a missing file: status %d, want %d", code, exitFailed)
	}
}
