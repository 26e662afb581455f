package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
	"github.com/sourcegraph/conc/pool"
)

// devSecret and devAdminSecret are the development cluster's well-known
// client and admin secrets. The cairn CLI uses the same strings by
// default (the admin one with --admin), so the two work together with no
// setup. They protect nothing: never use them outside loopback. The peer
// secret is drawn afresh for each run, since only the nodes need it.
const (
	devSecret      = "cairn-dev-cluster-secret"
	devAdminSecret = "cairn-dev-admin-secret"
)

// devBasePort is where the dev cluster's ports start: node i listens for
// clients on base+i, for peers on base+100+i and for HTTP on base+200+i.
const devBasePort = 7000

// runDev runs a local cluster in this process, on loopback, until Ctrl-C.
func runDev(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn-node dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "how many nodes (1 to 7)")
	dir := fs.String("dir", "", "data directory for the nodes (default: a temporary one, removed on exit)")
	base := fs.Int("base-port", devBasePort, "node i listens on base+i (clients), base+100+i (peers), base+200+i (HTTP)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitUsage
	}
	level, err := parseLevel(*logLevel)
	if err != nil || *nodes < 1 || *nodes > 7 || *base < 1 || *base+300 > 65535 {
		fmt.Fprintln(stderr, "cairn-node dev: need --nodes from 1 to 7, a valid --base-port and --log-level")
		return exitUsage
	}
	root, cleanup, err := devDir(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "cairn-node dev:", err)
		return exitFailed
	}
	defer cleanup()
	var runtimes []*live.Runtime
	for _, cfg := range devConfigs(*nodes, root, *base) {
		cfg.Logger = newLogger(stderr, level, logFormatText)
		rt, err := live.New(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "cairn-node dev: node %s: %v\n", cfg.Node.ID, err)
			return exitFailed
		}
		runtimes = append(runtimes, rt)
	}
	printDevBanner(stdout, runtimes, root, *dir == "")
	return runAll(runtimes, stdout, stderr)
}

// devDir returns the data root and how to clean it up.
func devDir(dir string) (string, func(), error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", nil, err
		}
		return abs, func() {}, os.MkdirAll(abs, 0o755)
	}
	tmp, err := os.MkdirTemp("", "cairn-dev-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// devConfigs returns the configurations of an n-node loopback cluster.
func devConfigs(n int, root string, base int) []live.Config {
	var members []live.Member
	for i := 1; i <= n; i++ {
		members = append(members, live.Member{
			ID:         node.NodeID(i),
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", base+i),
			PeerAddr:   fmt.Sprintf("127.0.0.1:%d", base+100+i),
			HTTPAddr:   fmt.Sprintf("127.0.0.1:%d", base+200+i),
		})
	}
	peerSecret := make([]byte, 32)
	rand.Read(peerSecret)
	var cfgs []live.Config
	for _, m := range members {
		cfgs = append(cfgs, live.Config{
			Node:    node.Config{ID: m.ID, Cluster: "dev"},
			Members: members, DataDir: filepath.Join(root, m.ID.String()),
			ClientListen: m.ClientAddr, PeerListen: m.PeerAddr, HTTPListen: m.HTTPAddr,
			PeerSecret: peerSecret, ClientSecret: []byte(devSecret), AdminSecret: []byte(devAdminSecret),
			// The status pages stay open: the dev cluster listens on
			// loopback only and its secrets are well known anyway.
			HTTPAuth: live.HTTPAuthNone,
			// Every node stops at once: handing queues to nodes that are
			// stopping too would only pass them around until the bound.
			ShutdownHandoff: -1,
		})
	}
	return cfgs
}

func printDevBanner(w io.Writer, runtimes []*live.Runtime, root string, temporary bool) {
	where := root
	if temporary {
		where += " (removed on exit)"
	}
	fmt.Fprintf(w, "cairn dev cluster: %d node(s) on loopback, data in %s\n\n", len(runtimes), where)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\tclient\tpeer\tcluster dashboard")
	var addrs []string
	for i, rt := range runtimes {
		fmt.Fprintf(tw, "  n%d\t%s\t%s\thttp://%s/dashboard\n", i+1, rt.ClientAddr(), rt.PeerAddr(), rt.HTTPAddr())
		addrs = append(addrs, rt.ClientAddr())
	}
	tw.Flush()
	fmt.Fprintf(w, `
From another terminal:
  export CAIRN_ADDRS=%s
  go run ./cmd/cairn queue create orders
  go run ./cmd/cairn publish orders hello world
  go run ./cmd/cairn consume orders --ack --count 2
  go run ./cmd/cairn cluster status
  go run ./cmd/cairn --admin queue delete orders
The client and admin secrets are the development defaults, which the CLI also
uses by default (the admin one with --admin).
Ctrl-C stops the cluster.
`, strings.Join(addrs, ","))
}

// runAll serves every runtime until SIGTERM or SIGINT, reporting once the
// cluster has a metadata leader.
func runAll(runtimes []*live.Runtime, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go watchParent(ctx, os.Getppid(), orphaned, stderr)
	p := pool.New().WithErrors()
	for _, rt := range runtimes {
		p.Go(func() error { return rt.Run(ctx) })
	}
	go announceLeader(ctx, runtimes, stdout)
	if err := p.Wait(); err != nil {
		fmt.Fprintln(stderr, "cairn-node dev:", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, "cluster stopped")
	return exitOK
}

// parentPoll is how often the dev cluster checks that the process that
// started it is still there.
const parentPoll = 250 * time.Millisecond

// watchParent calls orphaned once the process that started this one has
// exited, which shows as a change of parent process ID (the orphan is
// handed to init or a subreaper). A dev cluster must not outlive what
// started it: when `go run` or make is stopped by a signal sent to it
// alone, it exits without stopping its child, which would keep the
// cluster's ports with nobody left to stop it. Where parents are never
// replaced (Windows), this never fires.
func watchParent(ctx context.Context, parent int, orphaned context.CancelFunc, stderr io.Writer) {
	tick := time.NewTicker(parentPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if os.Getppid() != parent {
			fmt.Fprintln(stderr, "cairn-node dev: the process that started the cluster has exited; stopping")
			orphaned()
			return
		}
	}
}

// announceLeader prints when the metadata group has elected a leader,
// which is when queues can be created.
func announceLeader(ctx context.Context, runtimes []*live.Runtime, w io.Writer) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var leader uint32
		var term uint64
		for _, rt := range runtimes {
			if s := rt.Status(); s.LeaderTerm > term {
				leader, term = s.ID, s.LeaderTerm
			}
		}
		if leader != 0 {
			fmt.Fprintf(w, "ready: n%d leads the metadata group (term %d)\n", leader, term)
			return
		}
	}
}
