package main

import (
	"strings"
	"testing"
	"time"
)

// A name the nodes refuse is refused with the rule it breaks, by every
// command that takes a queue name, not with a bare "bad-request"; so are
// a negative delay and a lease that is not positive, which the client
// would refuse without a reason.
func TestBadQueueNamesSayWhy(t *testing.T) {
	conn := startNode(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "create", ""}, "is 0 bytes long; a name is 1 to 200 bytes of ASCII letters, digits"},
		{[]string{"queue", "create", strings.Repeat("q", 201)}, "is 201 bytes long"},
		{[]string{"queue", "create", "a/b"}, `has "/" at byte 1`},
		{[]string{"queue", "delete", ".hidden"}, "starts with '.'"},
		{[]string{"publish", "caf\xc3\xa9", "m"}, `has "\xc3" at byte 3`},
		{[]string{"consume", "two words"}, `has " " at byte 3`},
		{[]string{"publish", "q", "m", "--delay", "-1s"}, "--delay -1s is negative"},
		{[]string{"consume", "q", "--lease", "0s"}, "usage: cairn consume"},
	} {
		code, out := cli(t, "", append(c.args, conn...)...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%q: status %d, output %q; want status %d and %q", c.args[:2], code, out, exitUsage, c.want)
		}
		if strings.Contains(out, "bad-request") {
			t.Errorf("%q: the refusal is the bare status: %q", c.args[:2], out)
		}
	}
}

// --dedup-window reaches the node, and a window outside the bounds is
// refused before anything is sent, with the bounds.
func TestQueueCreateTakesADedupWindow(t *testing.T) {
	conn := startNode(t)
	code, out := cli(t, "", append([]string{"queue", "create", "short", "--dedup-window", "500ms"}, conn...)...)
	if code != exitUsage || !strings.Contains(out, "--dedup-window 500ms is outside [1s, 24h0m0s]") {
		t.Fatalf("a 500ms window: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "create", "short", "--dedup-window", "5m"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "deduplication window 5m0s") {
		t.Fatalf("a 5m window: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "create", "plain"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "the nodes' default deduplication window") {
		t.Fatalf("no window: status %d, output %q", code, out)
	}
}

// --dead-letter and --max-deliveries reach the node together; one
// without the other, or a limit out of range, is refused before anything
// is sent.
func TestQueueCreateTakesADeadLetterQueue(t *testing.T) {
	conn := startNode(t)
	for _, args := range [][]string{
		{"--dead-letter", "parked"},
		{"--max-deliveries", "3"},
		{"--dead-letter", "parked", "--max-deliveries", "1001"},
		{"--dead-letter", "parked", "--max-deliveries", "-1"},
	} {
		code, out := cli(t, "", append(append([]string{"queue", "create", "orders"}, args...), conn...)...)
		if code != exitUsage || !strings.Contains(out, "--dead-letter and --max-deliveries go together") {
			t.Errorf("%q: status %d, output %q", args, code, out)
		}
	}
	if code, out := cli(t, "", append([]string{"queue", "create", "parked"}, conn...)...); code != exitOK {
		t.Fatalf("creating the dead-letter queue: status %d, output %q", code, out)
	}
	code, out := cli(t, "", append([]string{"queue", "create", "orders", "--dead-letter", "parked", "--max-deliveries", "3"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "to parked after 3 deliveries") {
		t.Fatalf("a dead-letter queue: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "create", "loop", "--dead-letter", "loop", "--max-deliveries", "3"}, conn...)...)
	if code == exitOK || !strings.Contains(out, "cannot be its own dead-letter queue") {
		t.Fatalf("a queue that is its own dead-letter queue: status %d, output %q", code, out)
	}
}

// queue purge removes what the queue held and leaves what is published
// after it: a consumer then gets only the later message.
func TestQueuePurgeLeavesOnlyLaterMessages(t *testing.T) {
	conn := startNode(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, out := cli(t, "", append([]string{"queue", "create", "jobs"}, conn...)...)
		if code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue create: %d\n%s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // the metadata group is electing its leader
	}
	if code, out := cli(t, "", append([]string{"publish", "jobs", "old1", "old2"}, conn...)...); code != exitOK {
		t.Fatalf("publish: %d\n%s", code, out)
	}
	if code, out := cli(t, "", append([]string{"queue", "purge", "jobs"}, conn...)...); code != exitOK || !strings.Contains(out, "purged queue jobs") {
		t.Fatalf("queue purge: %d\n%s", code, out)
	}
	if code, out := cli(t, "", append([]string{"publish", "jobs", "new"}, conn...)...); code != exitOK {
		t.Fatalf("publish after the purge: %d\n%s", code, out)
	}
	code, out := cli(t, "", append([]string{"consume", "jobs", "--ack", "--count", "1"}, conn...)...)
	if code != exitOK || !strings.HasSuffix(strings.TrimSpace(out), "new") {
		t.Fatalf("consume after the purge: %d\n%s", code, out)
	}
}

// queue set gives an existing queue a delivery limit and takes it away;
// flags that do not make one setting are refused before anything is
// sent, and a queue that does not exist is the node's refusal.
func TestQueueSetChangesTheDeliveryLimit(t *testing.T) {
	conn := startNode(t)
	for _, args := range [][]string{
		{},
		{"--dead-letter", "parked"},
		{"--max-deliveries", "3"},
		{"--dead-letter", "parked", "--max-deliveries", "1001"},
		{"--no-dead-letter", "--dead-letter", "parked", "--max-deliveries", "3"},
	} {
		code, out := cli(t, "", append(append([]string{"queue", "set", "orders"}, args...), conn...)...)
		if code != exitUsage || !strings.Contains(out, "--no-dead-letter") {
			t.Errorf("%q: status %d, output %q", args, code, out)
		}
	}
	for _, q := range []string{"parked", "orders"} {
		if code, out := cli(t, "", append([]string{"queue", "create", q}, conn...)...); code != exitOK {
			t.Fatalf("creating %s: status %d, output %q", q, code, out)
		}
	}
	code, out := cli(t, "", append([]string{"queue", "set", "orders", "--dead-letter", "parked", "--max-deliveries", "3"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "moves a message to parked after 3 deliveries") {
		t.Fatalf("setting a limit: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "set", "orders", "--no-dead-letter"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "no delivery limit") {
		t.Fatalf("removing the limit: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "set", "missing", "--no-dead-letter"}, conn...)...)
	if code != exitFailed || !strings.Contains(out, "no-queue") {
		t.Fatalf("a queue that does not exist: status %d, output %q", code, out)
	}
	code, out = cli(t, "", append([]string{"queue", "set", "orders", "--dead-letter", "orders", "--max-deliveries", "3"}, conn...)...)
	if code == exitOK || !strings.Contains(out, "cannot be its own dead-letter queue") {
		t.Fatalf("a queue that is its own dead-letter queue: status %d, output %q", code, out)
	}
}
