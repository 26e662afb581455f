package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
)

const testSecret = "cli-test-secret-0123"

// startNode serves a one-node cluster for the duration of the test and
// returns the connection flags that reach it.
func startNode(t *testing.T) []string {
	t.Helper()
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1}},
		DataDir: t.TempDir(), ClientListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		Secret: []byte(testSecret), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return []string{"--addrs", rt.ClientAddr(), "--secret", testSecret, "--timeout", "20s"}
}

// cli runs one command line and returns its status and output.
func cli(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(args, env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errs})
	return code, out.String() + errs.String()
}

func TestPublishAndConsume(t *testing.T) {
	conn := startNode(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, out := cli(t, "", append([]string{"queue", "create", "work", "--policy", "all"}, conn...)...)
		if code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue create: %d\n%s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // the metadata group is electing its leader
	}
	if code, out := cli(t, "one\ntwo\nthree\n", append([]string{"publish", "work"}, conn...)...); code != exitOK || strings.Count(out, "\n") != 3 {
		t.Fatalf("publish from stdin: %d\n%s", code, out)
	}
	if code, out := cli(t, "", append(conn, "publish", "work", "four")...); code != exitOK {
		t.Fatalf("publish with flags first: %d\n%s", code, out)
	}
	code, out := cli(t, "", append([]string{"consume", "work", "--ack", "--count", "4"}, conn...)...)
	if code != exitOK {
		t.Fatalf("consume: %d\n%s", code, out)
	}
	var payloads []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Split(line, "\t")
		payloads = append(payloads, fields[len(fields)-1])
	}
	// Publishes are sent in order, but one refused while the new queue
	// was still activating is retried later, so only the set is certain.
	slices.Sort(payloads)
	if !slices.Equal(payloads, []string{"four", "one", "three", "two"}) {
		t.Fatalf("consumed %q, want the four messages:\n%s", payloads, out)
	}
	if code, out := cli(t, "", append([]string{"queue", "create", "work"}, conn...)...); code != exitFailed || !strings.Contains(out, "queue-exists") {
		t.Fatalf("creating an existing queue: %d\n%s", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"queue"}, {"frobnicate"}, {"queue", "create"}, {"queue", "create", "q", "--policy", "most"},
		{"consume"}, {"--nope", "queue", "list"},
		{"cluster", "add-node", "--id", "0", "--addr", "h:1"}, {"cluster", "add-node", "--id", "4", "--addr", "nowhere"},
		{"cluster", "remove-node"}, {"cluster", "remove-node", "x3"}, {"cluster", "remove-node", "3", "--wait", "-1s"},
		{"cluster", "members", "extra"},
	} {
		if code, _ := cli(t, "", args...); code != exitUsage {
			t.Errorf("%q: status %d, want %d", args, code, exitUsage)
		}
	}
}

func TestFlagsMayFollowArguments(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	policy := fs.String("policy", "", "")
	pos, err := parse(fs, []string{"a", "--policy", "all", "b"})
	if err != nil || *policy != "all" || !slices.Equal(pos, []string{"a", "b"}) {
		t.Fatalf("parse: %v %q %q", err, *policy, pos)
	}
}
