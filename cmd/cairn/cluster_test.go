package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A node whose status cannot be read shows a one-word state in the
// table; the error that says why is printed under it.
func TestClusterStatusKeepsErrorsOutOfTheTable(t *testing.T) {
	down := closedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := status.FetchAuth(ctx, down, status.Auth{})
	if err == nil {
		t.Fatalf("fetching status from %s, where nothing listens, succeeded", down)
	}
	// A node that answers, but not with its status: here it refuses the
	// credential.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no credential", http.StatusUnauthorized)
	}))
	defer refusing.Close()
	refusingAddr := strings.TrimPrefix(refusing.URL, "http://")
	_, refused := status.FetchAuth(ctx, refusingAddr, status.Auth{})
	if refused == nil {
		t.Fatal("a 401 answer read as a status document")
	}
	views := []nodeView{
		{info: client.NodeInfo{ID: 1, Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:7201"},
			status: &status.Node{ID: 1, Started: true, MetaLeader: 1, MetaTerm: 2, Peers: []status.Peer{{ID: 2}, {ID: 3, Connected: true}}}},
		{info: client.NodeInfo{ID: 2, Addr: "127.0.0.1:7002", HTTPAddr: down}, err: err},
		{info: client.NodeInfo{ID: 3, Addr: "127.0.0.1:7003"}, err: errNoHTTPAddr},
		{info: client.NodeInfo{ID: 4, Addr: "127.0.0.1:7004", HTTPAddr: refusingAddr}, err: refused},
	}
	var b bytes.Buffer
	printNodes(&b, views)
	out := b.String()
	lines := strings.Split(out, "\n")
	rows := map[string][]string{} // the table's rows, by node
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "metadata leader") {
			break
		}
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	for node, state := range map[string]string{"n1": "serving", "n2": "down", "n3": "unknown", "n4": "error"} {
		if row := rows[node]; len(row) < 4 || !slices.Contains(row, state) || len(strings.Join(row, " ")) > 60 {
			t.Errorf("%s's row %q is not a short row with state %q", node, row, state)
		}
	}
	if !strings.Contains(out, "n2 is down: "+err.Error()) {
		t.Errorf("the error reading n2 is not noted under the table:\n%s", out)
	}
	if !strings.Contains(out, "n3 is unknown: "+errNoHTTPAddr.Error()) {
		t.Errorf("why n3 was not read is not noted under the table:\n%s", out)
	}
	if !strings.Contains(out, "n4 is error: "+refused.Error()) {
		t.Errorf("why n4 was not read is not noted under the table:\n%s", out)
	}
	if !strings.HasPrefix(lines[0], "NODE") || strings.Count(out, err.Error()) != 1 {
		t.Errorf("the error appears other than once, in its note:\n%s", out)
	}
}

// queue list reads each node's status with the CLI's own credential: a
// node's HTTP port serves /status only to a client or an admin.
func TestQueueListAuthenticatesToTheStatusPage(t *testing.T) {
	clientAddr, httpAddr := closedAddr(t), closedAddr(t)
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1, ClientAddr: clientAddr, HTTPAddr: httpAddr}},
		DataDir: t.TempDir(), ClientListen: clientAddr, PeerListen: "127.0.0.1:0", HTTPListen: httpAddr,
		ClientSecret: []byte(testSecret), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	conn := []string{"--addrs", rt.ClientAddr(), "--secret", testSecret, "--timeout", "20s"}
	createQueue(t, conn, "listed")
	code, out := cli(t, "", append([]string{"queue", "list"}, conn...)...)
	if code != exitOK || !strings.Contains(out, "listed") || !strings.Contains(out, "active") {
		t.Fatalf("queue list: status %d\n%s", code, out)
	}
}

// queue list says which nodes it could not read, and fails when it could
// read none, rather than printing "no queues" as if that were the answer.
func TestQueueListNamesTheNodesItCouldNotRead(t *testing.T) {
	clientAddr, httpAddr := closedAddr(t), closedAddr(t)
	rt, err := live.New(live.Config{
		Node: node.Config{ID: 1, Replicas: 1}, Members: []live.Member{{ID: 1, ClientAddr: clientAddr, HTTPAddr: httpAddr}},
		DataDir: t.TempDir(), ClientListen: clientAddr, PeerListen: "127.0.0.1:0",
		ClientSecret: []byte(testSecret), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// The node serves no HTTP, so its advertised HTTP address refuses.
	code, out := cli(t, "", "queue", "list", "--addrs", rt.ClientAddr(), "--secret", testSecret, "--timeout", "20s")
	if code != exitFailed || !strings.Contains(out, "n1 is down") || !strings.Contains(out, "no node's status could be read") {
		t.Fatalf("queue list with no readable node: status %d\n%s", code, out)
	}
}

// The retained column says how much log the replica keeps, in readable
// units, and from which index.
func TestRetainedColumn(t *testing.T) {
	cases := []struct {
		q    status.Queue
		want string
	}{
		{status.Queue{}, "-"},
		{status.Queue{Segments: 1, RetainedBytes: 900, FirstIndex: 1}, "900 B (1..)"},
		{status.Queue{Segments: 2, RetainedBytes: 3 << 20, FirstIndex: 4001}, "3.0 MiB (4001..)"},
		{status.Queue{Segments: 9, RetainedBytes: 5 << 30, FirstIndex: 7}, "5.0 GiB (7..)"},
	}
	for _, c := range cases {
		if got := retained(c.q); got != c.want {
			t.Errorf("retained(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
}

// The depth columns show the serving owner's counts, and a dash in each
// when no owner answered.
func TestDepthColumns(t *testing.T) {
	if got := depth(nil); got != "-\t-\t-\t-" {
		t.Fatalf("no owner: %q", got)
	}
	if got := depth(&status.Depth{Ready: 3, Leased: 2, Delayed: 1, Consumers: 4}); got != "3\t2\t1\t4" {
		t.Fatalf("owner's depth: %q", got)
	}
}

// A node that accepts the connection but never answers (stopped, or cut
// off behind a proxy) costs cluster status the per-node wait, not the
// whole command's timeout, and shows as unreachable beside the nodes that
// answered.
func TestClusterStatusBoundsASilentNode(t *testing.T) {
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"id":1,"started":true,"peers":[],"queues":[]}`))
	}))
	defer answering.Close()
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		<-req.Context().Done()
	}))
	defer silent.Close()
	nodes := []client.NodeInfo{
		{ID: 1, HTTPAddr: strings.TrimPrefix(answering.URL, "http://")},
		{ID: 2, HTTPAddr: strings.TrimPrefix(silent.URL, "http://")},
	}
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	views := gatherNodes(ctx, nodes, status.Auth{}, wait)
	if took := time.Since(start); took > wait+2*time.Second {
		t.Errorf("gathering took %v with a per-node wait of %v", took, wait)
	}
	var b bytes.Buffer
	printNodes(&b, views)
	out := b.String()
	if !strings.Contains(out, "serving") || !strings.Contains(out, "unreachable") || !strings.Contains(out, "n2 is unreachable: ") {
		t.Errorf("the table does not show n1 serving and n2 unreachable with a note:\n%s", out)
	}
}
