// Package interop drives cairn's SQS endpoint with real SQS clients: the
// AWS SDK for Go v2 and the AWS CLI, unmodified but for their endpoint
// URL, region and keys. It is a module of its own, so cairn's module does
// not depend on the SDK. Cluster runs three nodes with their endpoints in
// one process, for the tests and for cmd/sqs-bench.
package interop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	cairnsqs "github.com/cairnmq/cairn/live/sqs"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/loopback"
	"github.com/cairnmq/cairn/node"
)

// Credentials of the clusters Cluster starts: the role secrets, and the
// endpoint's access keys (App has the client role, Ops the admin role).
var (
	ClientSecret = []byte("interop-client-secret")
	PeerSecret   = []byte("interop-peer-secret")
	AdminSecret  = []byte("interop-admin-secret")
)

// Access keys and the region requests are signed for.
const (
	AppKeyID  = "AKIDINTEROPAPP"
	AppSecret = "interop-app-secret-key"
	OpsKeyID  = "AKIDINTEROPOPS"
	OpsSecret = "interop-ops-secret-key"
	Region    = "eu-central-1"
)

// Cluster is three cairn nodes in this process, each with its SQS
// endpoint.
type Cluster struct {
	// Runtimes are the nodes, by ID order; Endpoints their SQS endpoint
	// addresses.
	Runtimes  []*live.Runtime
	Endpoints []string
	cancels   []context.CancelFunc
	done      []chan error
}

// StartCluster runs three nodes with data under dir and an SQS endpoint
// beside each; Stop ends them.
func StartCluster(dir string, logger *slog.Logger) (*Cluster, error) {
	const n = 3
	addrs, err := loopback.Addrs(3 * n)
	if err != nil {
		return nil, err
	}
	var members []live.Member
	for i := range n {
		members = append(members, live.Member{ID: node.NodeID(i + 1), PeerAddr: addrs[3*i], ClientAddr: addrs[3*i+1], HTTPAddr: addrs[3*i+2]})
	}
	c := &Cluster{}
	for i := range n {
		if err := c.startNode(members, i, dir, logger); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// startNode starts member i and its endpoint.
func (c *Cluster) startNode(members []live.Member, i int, dir string, logger *slog.Logger) error {
	data := filepath.Join(dir, fmt.Sprintf("n%d", i+1))
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	rt, err := live.New(live.Config{
		Node: node.Config{ID: members[i].ID, Replicas: len(members)}, Members: members, DataDir: data,
		ClientListen: members[i].ClientAddr, PeerListen: members[i].PeerAddr, HTTPListen: members[i].HTTPAddr,
		ClientSecret: ClientSecret, PeerSecret: PeerSecret, AdminSecret: AdminSecret, Logger: logger,
	})
	if err != nil {
		return err
	}
	ep, err := cairnsqs.Listen(cairnsqs.EndpointConfig{
		Listen: "127.0.0.1:0", Logger: logger,
		Server: cairnsqs.Config{Region: Region, Keys: []cairnsqs.AccessKey{
			{ID: AppKeyID, Secret: AppSecret, Role: cairnsqs.RoleClient},
			{ID: OpsKeyID, Secret: OpsSecret, Role: cairnsqs.RoleAdmin},
		}},
		Client: client.Options{Secret: ClientSecret}, Admin: &client.Options{Secret: AdminSecret},
		StatusAuth: status.Auth{Secret: ClientSecret}, IdleAfter: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		epDone := make(chan error, 1)
		go func() { epDone <- ep.Run(ctx, rt) }()
		err := rt.Run(ctx)
		done <- errors.Join(err, <-epDone)
	}()
	c.Runtimes, c.Endpoints = append(c.Runtimes, rt), append(c.Endpoints, ep.Addr())
	c.cancels, c.done = append(c.cancels, cancel), append(c.done, done)
	return nil
}

// Stop stops every node and endpoint and reports what went wrong.
func (c *Cluster) Stop() error {
	for _, cancel := range c.cancels {
		cancel()
	}
	var errs []error
	for i, d := range c.done {
		if err := <-d; err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}
