package interop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/loopback"
)

// nodeLog keeps the latest warnings the nodes logged, so that a failed
// test can show them and a test can ask whether an owner stepped back.
// The nodes' logs also go to stderr when INTEROP_LOGS is set.
type nodeLog struct {
	mu    sync.Mutex
	lines []string
}

// nodeLogLines bounds what nodeLog keeps.
const nodeLogLines = 2000

// Write keeps one record; slog's text handler writes each in one call.
func (l *nodeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == nodeLogLines {
		l.lines = append(l.lines[:0], l.lines[1:]...)
	}
	l.lines = append(l.lines, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// contains reports whether a kept record holds every one of parts.
func (l *nodeLog) contains(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if containsAll(line, parts) {
			return true
		}
	}
	return false
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func (l *nodeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// logger writes the nodes' warnings to l.
func (l *nodeLog) logger() *slog.Logger {
	var w io.Writer = l
	if os.Getenv("INTEROP_LOGS") != "" {
		w = io.MultiWriter(w, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startCluster runs a three-node cluster with an SQS endpoint beside
// each node until the test ends, and waits until every endpoint serves.
// It returns the cluster and the warnings its nodes log.
func startCluster(t *testing.T) (*Cluster, *nodeLog) {
	t.Helper()
	log := &nodeLog{}
	c, err := StartCluster(t.TempDir(), log.logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("the nodes' warnings:\n%s", log)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for i := range c.Endpoints {
		api := sdkFor(c, i, AppKeyID, AppSecret)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := api.ListQueues(ctx, &sqs.ListQueuesInput{})
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("endpoint of node %d not serving after 30s: %v", i+1, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c, log
}

// sdkFor is an AWS SDK client for node i's endpoint, with only the
// endpoint URL, region and keys changed from a stock client.
func sdkFor(c *Cluster, i int, keyID, secret string) *sqs.Client {
	return sdkAt(c.Endpoints[i], keyID, secret)
}

func sdkAt(addr, keyID, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String("http://" + addr),
		Credentials:  credentials.NewStaticCredentialsProvider(keyID, secret, ""),
	})
}

// freeAddrs reserves n loopback addresses outside the ephemeral port
// range, so the members can name each other before any node starts.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs, err := loopback.Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// ctxFor bounds one test step.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestNodeLogFindsAWarningByItsParts logs a warning as the nodes' event
// logger does and finds it by message and queue, and not by the name of
// a queue the first is a prefix of.
func TestNodeLogFindsAWarningByItsParts(t *testing.T) {
	l := &nodeLog{}
	l.logger().LogAttrs(context.Background(), slog.LevelWarn, string(event.QueueQuorumLost), slog.String("q", "visible2"), slog.Uint64("epoch", 1))
	if l.contains("msg="+string(event.QueueQuorumLost), "q=visible ") {
		t.Fatalf("a warning for visible2 was taken for one for visible:\n%s", l)
	}
	l.logger().LogAttrs(context.Background(), slog.LevelWarn, string(event.QueueQuorumLost), slog.String("q", "visible"), slog.Uint64("epoch", 1))
	if !l.contains("msg="+string(event.QueueQuorumLost), "q=visible ") {
		t.Fatalf("the warning for visible was not found:\n%s", l)
	}
}

// sdkBehind is an SQS client behind a round-robin load balancer over
// addrs: each request goes to the next address, and to the one after it
// if that one refuses the connection (a dead node). The client signs for
// the balancer's name, which every request carries as its Host, as a
// proxy in front of the nodes would pass it on.
func sdkBehind(addrs []string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String("http://sqs.balancer.test"),
		Credentials:  credentials.NewStaticCredentialsProvider(AppKeyID, AppSecret, ""),
		HTTPClient:   &http.Client{Transport: &roundRobin{addrs: addrs}},
	})
}

// roundRobin is the load balancer of sdkBehind.
type roundRobin struct {
	addrs []string
	next  atomic.Uint64
}

// RoundTrip sends req to the next address that takes the connection.
func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	var err error
	for range rr.addrs {
		addr := rr.addrs[rr.next.Add(1)%uint64(len(rr.addrs))]
		out := req.Clone(req.Context())
		out.URL.Host, out.Host = addr, host
		out.Body = io.NopCloser(bytes.NewReader(body))
		var resp *http.Response
		resp, err = http.DefaultTransport.RoundTrip(out)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return resp, err
		}
	}
	return nil, err
}
