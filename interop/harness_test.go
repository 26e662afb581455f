package interop

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// logger discards the nodes' logs unless INTEROP_LOGS is set.
func logger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("INTEROP_LOGS") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startCluster runs a three-node cluster with an SQS endpoint beside
// each node until the test ends, and waits until every endpoint serves.
func startCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := StartCluster(t.TempDir(), logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
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
	return c
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

// freeAddrs reserves n loopback ports.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs, err := loopbackAddrs(n)
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
