package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// consume --count N --timeout D on a queue holding fewer than N messages
// prints them, exits once D has passed (not much later) with exitShort,
// and says how many it consumed; the acked messages are gone.
func TestConsumeCountHonoursTimeout(t *testing.T) {
	conn := startNode(t)
	createQueue(t, conn, "work")
	if code, out := cli(t, "a\nb\n", append([]string{"publish", "work"}, conn...)...); code != exitOK {
		t.Fatalf("publish: %d\n%s", code, out)
	}
	start := time.Now()
	code, out := cliWithin(t, 10*time.Second, append([]string{"consume", "work", "--ack", "--count", "5"}, withTimeout(conn, "1s")...)...)
	took := time.Since(start)
	if code != exitShort || !strings.Contains(out, "consumed 2 of 5 message(s) before the timeout") {
		t.Fatalf("consume of 5 with 2 queued: status %d\n%s", code, out)
	}
	if took < time.Second || took > 4*time.Second {
		t.Fatalf("consume --timeout 1s took %v", took)
	}
	if strings.Count(out, "attempt=1\t") != 2 {
		t.Fatalf("consume printed %q, want the two messages", out)
	}
	code, out = cliWithin(t, 10*time.Second, append([]string{"consume", "work", "--count", "1"}, withTimeout(conn, "500ms")...)...)
	if code != exitShort || !strings.Contains(out, "consumed 0 of 1") {
		t.Fatalf("consume after everything was acked: status %d\n%s", code, out)
	}
}

// consume --count N exits as soon as N were consumed, well inside its
// timeout, with status 0, and the node sends it no more than N: the
// messages after them are left for the next consumer at once.
func TestConsumeCountStopsAtCount(t *testing.T) {
	conn := startNode(t)
	createQueue(t, conn, "work")
	if code, out := cli(t, "a\nb\nc\n", append([]string{"publish", "work"}, conn...)...); code != exitOK {
		t.Fatalf("publish: %d\n%s", code, out)
	}
	start := time.Now()
	code, out := cli(t, "", append([]string{"consume", "work", "--count", "2"}, conn...)...)
	if code != exitOK || strings.Count(out, "\n") != 2 || time.Since(start) > 5*time.Second {
		t.Fatalf("consume of 2 with 3 queued: status %d after %v\n%s", code, time.Since(start), out)
	}
	code, out = cli(t, "", append([]string{"consume", "work", "--count", "3"}, withTimeout(conn, "2s")...)...)
	if code != exitOK || strings.Count(out, "\n") != 3 {
		t.Fatalf("the next consumer: status %d\n%s", code, out)
	}
}

// withTimeout is conn with its --timeout replaced by d.
func withTimeout(conn []string, d string) []string {
	out := slices.Clone(conn)
	i := slices.Index(out, "--timeout")
	out[i+1] = d
	return out
}

// cliWithin runs one command line with empty stdin, failing the test if
// it has not exited within limit.
func cliWithin(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		code := run(args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out})
		done <- result{code, out.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out
	case <-time.After(limit):
		t.Fatalf("%q still running after %v", args, limit)
		return 0, ""
	}
}
