package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTracePrefixMatchesFmt holds appendPrefix to the format it replaces,
// over times that exercise rounding, padding and widths past twelve, and
// names shorter, as long as and longer than four characters.
func TestTracePrefixMatchesFmt(t *testing.T) {
	times := []time.Duration{0, 1, 499, 500, 501, 999_999, time.Millisecond, 1_234_567_891, 3*time.Second + 500,
		16 * time.Second, 99_999_999_999_500, 123_456_789_012_345_678, -1500 * time.Microsecond}
	for _, now := range times {
		for _, who := range []string{"", "n1", "sim", "c12", "n123", "client-7", "né"} {
			want := fmt.Sprintf("%12.6f %-4s ", now.Seconds(), who)
			if got := string(appendPrefix(nil, now, who)); got != want {
				t.Errorf("appendPrefix(%d, %q) = %q, want %q", now, who, got, want)
			}
		}
	}
}

// TestTraceHashCoversEveryPart holds the hash to each part of a line: a
// change of time, who, format or any argument changes it, and so does
// moving a byte from one argument to the next.
func TestTraceHashCoversEveryPart(t *testing.T) {
	hashOf := func(now time.Duration, who, format string, args ...any) uint64 {
		tr := newTrace(nil)
		tr.line(now, who, format, args...)
		return tr.Hash()
	}
	base := hashOf(time.Second, "n1", "send to=%s %s copies=%d", "n2", frameText{1, 2, 3}, 1)
	variants := map[string]uint64{
		"time":         hashOf(time.Second+1, "n1", "send to=%s %s copies=%d", "n2", frameText{1, 2, 3}, 1),
		"who":          hashOf(time.Second, "n3", "send to=%s %s copies=%d", "n2", frameText{1, 2, 3}, 1),
		"format":       hashOf(time.Second, "n1", "recv to=%s %s copies=%d", "n2", frameText{1, 2, 3}, 1),
		"string":       hashOf(time.Second, "n1", "send to=%s %s copies=%d", "n3", frameText{1, 2, 3}, 1),
		"frame":        hashOf(time.Second, "n1", "send to=%s %s copies=%d", "n2", frameText{1, 2, 4}, 1),
		"number":       hashOf(time.Second, "n1", "send to=%s %s copies=%d", "n2", frameText{1, 2, 3}, 2),
		"boundary":     hashOf(time.Second, "n1", "%s%s", "ab", "c"),
		"boundary-too": hashOf(time.Second, "n1", "%s%s", "a", "bc"),
	}
	for name, h := range variants {
		if h == base {
			t.Errorf("changing the %s left the hash unchanged", name)
		}
	}
	if variants["boundary"] == variants["boundary-too"] {
		t.Errorf("\"ab\"+\"c\" and \"a\"+\"bc\" hash alike")
	}
}

// TestTraceHashSameWrittenOrNot runs a seed with its trace written and
// without, and requires the same hash and line count: the hash must not
// depend on whether anyone reads the text.
func TestTraceHashSameWrittenOrNot(t *testing.T) {
	sc := QueueScenario(7)
	var text strings.Builder
	quiet := NewWorld(sc, NewQueueSystem(sc), nil).Run()
	written := NewWorld(sc, NewQueueSystem(sc), &text).Run()
	if quiet.TraceHash != written.TraceHash || quiet.Lines != written.Lines {
		t.Fatalf("untraced run: hash %016x, %d lines; traced: hash %016x, %d lines", quiet.TraceHash, quiet.Lines, written.TraceHash, written.Lines)
	}
	if got := strings.Count(text.String(), "\n"); got != written.Lines {
		t.Fatalf("the trace holds %d lines, the run counted %d", got, written.Lines)
	}
}
