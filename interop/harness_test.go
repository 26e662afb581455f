package interop

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	cairnsqs "github.com/cairnmq/cairn/live/sqs"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// The cluster's role secrets and the endpoint's access keys.
var (
	clientSecret = []byte("interop-client-secret")
	peerSecret   = []byte("interop-peer-secret")
	adminSecret  = []byte("interop-admin-secret")
)

const (
	appKeyID     = "AKIDINTEROPAPP"
	appSecret    = "interop-app-secret-key"
	opsKeyID     = "AKIDINTEROPOPS"
	opsSecret    = "interop-ops-secret-key"
	region       = "eu-central-1"
	testLogLevel = slog.LevelWarn
)

// cluster is three cairn nodes in this process, each with its SQS
// endpoint.
type cluster struct {
	rts       []*live.Runtime
	endpoints []string // SQS endpoint addresses, by node
	cancels   []context.CancelFunc
	done      []chan struct{}
}

// freeAddrs reserves n loopback ports by binding and releasing them.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func logger() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("INTEROP_LOGS") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: testLogLevel}))
}

// startCluster runs a three-node cluster with an SQS endpoint beside
// each node until the test ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	const n = 3
	addrs := freeAddrs(t, 3*n)
	var members []live.Member
	for i := range n {
		members = append(members, live.Member{ID: node.NodeID(i + 1), PeerAddr: addrs[3*i], ClientAddr: addrs[3*i+1], HTTPAddr: addrs[3*i+2]})
	}
	c := &cluster{}
	for i := range n {
		rt, err := live.New(live.Config{
			Node: node.Config{ID: node.NodeID(i + 1), Replicas: n}, Members: members, DataDir: t.TempDir(),
			ClientListen: members[i].ClientAddr, PeerListen: members[i].PeerAddr, HTTPListen: members[i].HTTPAddr,
			ClientSecret: clientSecret, PeerSecret: peerSecret, AdminSecret: adminSecret, Logger: logger(),
			Exit: func(code int) { t.Errorf("node %d exited with status %d", i+1, code) },
		})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := cairnsqs.Listen(cairnsqs.EndpointConfig{
			Listen: "127.0.0.1:0", Logger: logger(),
			Server: cairnsqs.Config{Region: region, Keys: []cairnsqs.AccessKey{
				{ID: appKeyID, Secret: appSecret, Role: cairnsqs.RoleClient},
				{ID: opsKeyID, Secret: opsSecret, Role: cairnsqs.RoleAdmin},
			}},
			Client: client.Options{Secret: clientSecret}, Admin: &client.Options{Secret: adminSecret},
			StatusAuth: status.Auth{Secret: clientSecret}, IdleAfter: 5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			epDone := make(chan error, 1)
			go func() { epDone <- ep.Run(ctx, rt) }()
			if err := rt.Run(ctx); err != nil {
				t.Errorf("node %d: %v", i+1, err)
			}
			if err := <-epDone; err != nil {
				t.Errorf("endpoint %d: %v", i+1, err)
			}
		}()
		c.rts, c.endpoints = append(c.rts, rt), append(c.endpoints, ep.Addr())
		c.cancels, c.done = append(c.cancels, cancel), append(c.done, done)
	}
	t.Cleanup(c.stop)
	c.waitServing(t)
	return c
}

func (c *cluster) stop() {
	for _, cancel := range c.cancels {
		cancel()
	}
	for _, d := range c.done {
		<-d
	}
}

// waitServing waits until every endpoint answers ListQueues, which
// needs the node's metadata and the endpoint's connection.
func (c *cluster) waitServing(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := range c.endpoints {
		api := c.sdk(i, appKeyID, appSecret)
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
}

// sdk is an AWS SDK client for node i's endpoint, with only the endpoint
// URL, region and keys changed from a stock client.
func (c *cluster) sdk(i int, keyID, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       region,
		BaseEndpoint: aws.String("http://" + c.endpoints[i]),
		Credentials:  credentials.NewStaticCredentialsProvider(keyID, secret, ""),
	})
}

// ctxFor bounds one test step.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
