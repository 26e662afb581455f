package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
)

// dashboardCluster starts a three-node cluster whose members name each
// other's HTTP addresses, as a deployment's do, so that any node's
// dashboard can read the others. Every node requires httpAuth on its HTTP
// port. It returns once the peers are connected and a leader is known.
func dashboardCluster(t *testing.T, httpAuth HTTPAuth) []*testNode {
	t.Helper()
	cfgs := clusterConfigs(t, 3)
	httpAddrs := freeAddrs(t, 3)
	for i := range cfgs {
		cfgs[i].Members[i].HTTPAddr = httpAddrs[i] // the members slice is shared
		cfgs[i].HTTPListen = httpAddrs[i]
		cfgs[i].HTTPAuth = httpAuth
	}
	var nodes []*testNode
	for _, cfg := range cfgs {
		nodes = append(nodes, start(t, cfg))
	}
	for _, tn := range nodes {
		waitFor(t, 10*time.Second, "peers to connect", func() bool {
			return !slices.ContainsFunc(tn.Status().Peers, func(p status.Peer) bool { return !p.Connected })
		})
	}
	waitFor(t, 10*time.Second, "a metadata leader", func() bool {
		return slices.ContainsFunc(nodes, func(tn *testNode) bool { return tn.Status().MetaLeader != 0 })
	})
	return nodes
}

// fillQueue creates queue q through the cluster and publishes n
// messages to it.
func fillQueue(t *testing.T, nodes []*testNode, q string, n int) {
	t.Helper()
	var addrs []string
	for _, tn := range nodes {
		addrs = append(addrs, tn.ClientAddr())
	}
	c := dial(t, addrs...)
	ctx := ctxFor(t, 20*time.Second)
	if err := c.CreateQueue(ctx, q, client.PolicyMajority); err != nil {
		t.Fatalf("create %s: %v", q, err)
	}
	for i := range n {
		if _, err := c.Publish(ctx, q, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("publish to %s: %v", q, err)
		}
	}
}

// readCluster reads /dashboard.json from addr with the bearer secret.
func readCluster(t *testing.T, addr string, secret []byte) *status.Cluster {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodGet, "http://"+addr+"/dashboard.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+string(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /dashboard.json: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /dashboard.json: %s", resp.Status)
	}
	var c status.Cluster
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// clusterQueue returns the named queue of a cluster view, or nil.
func clusterQueue(c *status.Cluster, name string) *status.ClusterQueue {
	for i := range c.Queues {
		if c.Queues[i].Name == name {
			return &c.Queues[i]
		}
	}
	return nil
}

// ownerOf returns the node that serves q, as its own status says.
func ownerOf(t *testing.T, nodes []*testNode, q string) *testNode {
	t.Helper()
	var owner *testNode
	waitFor(t, 10*time.Second, "an owner of "+q, func() bool {
		for _, tn := range nodes {
			for _, v := range tn.Status().Queues {
				if v.Name == q && v.Active {
					owner = tn
					return true
				}
			}
		}
		return false
	})
	return owner
}

// Any node's dashboard shows the whole cluster, reading its peers with
// the admin credential their ports require here; when the owner of a
// queue stops, the others say which node they cannot read, and the
// queue's timeline shows the recovery that moved it, with its stages.
func TestDashboardShowsTheClusterThroughAFailover(t *testing.T) {
	nodes := dashboardCluster(t, HTTPAuthAdmin)
	fillQueue(t, nodes, "orders", 20)
	owner := ownerOf(t, nodes, "orders")
	var other *testNode
	for _, tn := range nodes {
		if tn != owner {
			other = tn
			break
		}
	}
	c := readCluster(t, other.HTTPAddr(), testAdminSecret)
	if len(c.Nodes) != 3 || slices.ContainsFunc(c.Nodes, func(n status.ClusterNode) bool { return n.State != "serving" }) {
		t.Fatalf("nodes %+v, want three serving", c.Nodes)
	}
	q := clusterQueue(c, "orders")
	if q == nil || !q.Serving || q.Owner != uint32(owner.id) || len(q.Replicas) != 3 || q.Depth == nil || q.Depth.Ready != 20 {
		t.Fatalf("queue %+v, want orders served by n%d with 3 replicas and 20 ready", q, owner.id)
	}
	for _, r := range q.Replicas {
		if r.Lag == nil {
			t.Errorf("replica n%d has no lag while every node answered", r.Node)
		}
	}

	// The owner counts the publishes it was handed, for /metrics too.
	if n := queueCounter(t, owner.HTTPAddr(), "cairn_queue_publish_requests_total", "orders"); n < 20 {
		t.Errorf("cairn_queue_publish_requests_total{queue=orders} is %v on the owner, want at least the 20 publishes", n)
	}

	// What this test follows is a failover: the owner stops without
	// handing its queue to another replica first.
	owner.cfg.ShutdownHandoff = -1
	owner.stop(t)
	var after *status.Cluster
	waitFor(t, 30*time.Second, "another owner to serve orders after the failover", func() bool {
		time.Sleep(dashboardReuse)
		after = readCluster(t, other.HTTPAddr(), testAdminSecret)
		q := clusterQueue(after, "orders")
		return q != nil && q.Serving && q.Owner != uint32(owner.id) && len(q.Recoveries) > 0 && q.Recoveries[len(q.Recoveries)-1].Outcome == outcomeOK
	})
	for _, n := range after.Nodes {
		if n.ID == uint32(owner.id) && (n.State == "serving" || n.Error == "") {
			t.Errorf("the stopped node is shown as %q (error %q)", n.State, n.Error)
		}
	}
	// The logs tell the same story at info, one line a step: the queue's
	// creation on every node, the election of a metadata leader, and the
	// recovery with its stages on the node that ran it.
	logged := func(fragments ...string) bool {
		return slices.ContainsFunc(nodes, func(tn *testNode) bool { return tn.logsMention(fragments...) })
	}
	for _, want := range [][]string{
		{"level=INFO", "msg=" + string(event.MetaActivated), "q=orders"},
		{"level=INFO", "msg=" + string(event.MetaLeader)},
		{"level=INFO", "msg=" + recoverySummaryMsg, "q=orders", "outcome=ok", "stages="},
	} {
		if !logged(want...) {
			t.Errorf("no node logged a line with %q", want)
		}
	}
	last := clusterQueue(after, "orders").Recoveries
	a := last[len(last)-1]
	if len(a.Stages) == 0 || a.End.Before(a.Start) {
		t.Errorf("the recovery %+v has no stages, or ends before it starts", a)
	}
	// The first attempt into the new epoch is led by the leader's plan,
	// which the marks show: its lead ends with the dispatch.
	first := slices.IndexFunc(last, func(r status.Recovery) bool { return r.Attempt == 1 && r.Epoch == a.Epoch })
	if first < 0 || !slices.ContainsFunc(last[first].Lead, func(s status.Stage) bool { return s.Name == "dispatch" }) {
		t.Errorf("no first attempt into epoch %d with a dispatch stage from the marks: %+v", a.Epoch, last)
	}
}

// The dashboard's page, files and JSON need the same credential as
// /status, and a gathering answers from the nodes it can read.
func TestDashboardNeedsTheCredential(t *testing.T) {
	tn := start(t, singleConfig(t))
	for _, path := range []string{"/dashboard", "/dashboard/dashboard.js", "/dashboard.json"} {
		if got := httpGet(t, tn.HTTPAddr(), path, ""); got != http.StatusUnauthorized {
			t.Errorf("GET %s without a credential: %d, want 401", path, got)
		}
		if got := httpGet(t, tn.HTTPAddr(), path, "Bearer "+string(testSecret)); got != http.StatusOK {
			t.Errorf("GET %s with the client secret: %d, want 200", path, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := status.FetchAuth(ctx, tn.HTTPAddr(), status.Auth{Secret: testSecret})
	if err != nil || s.Host == nil {
		t.Errorf("/status: %v, host %+v: want the host's figures", err, s)
	}
}

// Go's profiles need the admin credential, even where the other paths
// are open to anyone.
func TestProfilesNeedTheAdmin(t *testing.T) {
	for _, auth := range []HTTPAuth{HTTPAuthClient, HTTPAuthNone} {
		cfg := singleConfig(t)
		cfg.HTTPAuth = auth
		tn := start(t, cfg)
		for _, c := range []struct {
			authorization string
			want          int
		}{
			{"", http.StatusUnauthorized},
			{"Bearer " + string(testSecret), http.StatusForbidden},
			{"Bearer " + string(testAdminSecret), http.StatusOK},
		} {
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
				if got := httpGet(t, tn.HTTPAddr(), path, c.authorization); got != c.want {
					t.Errorf("HTTPAuth %d: GET %s with %q: %d, want %d", auth, path, c.authorization, got, c.want)
				}
			}
		}
	}
}

// queueCounter scrapes addr's /metrics for family's sample of queue q,
// returning -1 when there is none.
func queueCounter(t *testing.T, addr, family, q string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	prefix := family + `{queue="` + q + `"} `
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}
