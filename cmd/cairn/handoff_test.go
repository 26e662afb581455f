package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/loopback"
	"github.com/cairnmq/cairn/node"
)

const (
	testPeerSecret  = "cli-test-peer-secret-0123"
	testAdminSecret = "cli-test-admin-secret-0123"
)

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

// startCluster serves an n-node cluster placing each queue on replicas
// of them, for the duration of the test, and returns the connection
// flags of an admin that reaches it.
func startCluster(t *testing.T, n, replicas int) []string {
	t.Helper()
	addrs := freeAddrs(t, 3*n)
	var members []live.Member
	var clients []string
	for i := range n {
		members = append(members, live.Member{ID: node.NodeID(i + 1), PeerAddr: addrs[3*i], ClientAddr: addrs[3*i+1], HTTPAddr: addrs[3*i+2]})
		clients = append(clients, addrs[3*i+1])
	}
	for _, m := range members {
		serveNode(t, m.ID, members, replicas, false)
	}
	return []string{"--addrs", strings.Join(clients, ","), "--secret", testSecret, "--admin-secret", testAdminSecret, "--timeout", "20s"}
}

// serveNode runs node id of members for the duration of the test. A
// joining node (join) lists only itself and the nodes it was told of.
func serveNode(t *testing.T, id node.NodeID, members []live.Member, replicas int, join bool) {
	t.Helper()
	self := members[slices.IndexFunc(members, func(m live.Member) bool { return m.ID == id })]
	rt, err := live.New(live.Config{
		Node: node.Config{ID: id, Replicas: replicas, Join: join}, Members: members, DataDir: t.TempDir(),
		ClientListen: self.ClientAddr, PeerListen: self.PeerAddr, HTTPListen: self.HTTPAddr,
		ClientSecret: []byte(testSecret), PeerSecret: []byte(testPeerSecret), AdminSecret: []byte(testAdminSecret),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Exit:   func(code int) { t.Errorf("node %d exited with status %d", id, code) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// ownerRow matches a queue's row of cluster status: its owner, epoch,
// replicas, and the state at the end of the line.
var ownerRow = regexp.MustCompile(`(?m)^(\S+)\s+n(\d+)\s+(\d+)\s+(\S+)\s.*\s(\S+)$`)

// queueRows reads cluster status and returns each queue's owner and
// replicas, for the queues whose row says active.
func queueRows(t *testing.T, conn []string) map[string]struct {
	owner    uint32
	replicas []uint32
} {
	t.Helper()
	code, out := cli(t, "", append([]string{"cluster", "status"}, conn...)...)
	if code != exitOK {
		t.Fatalf("cluster status: %d\n%s", code, out)
	}
	rows := map[string]struct {
		owner    uint32
		replicas []uint32
	}{}
	for _, m := range ownerRow.FindAllStringSubmatch(out, -1) {
		if m[5] != "active" {
			continue
		}
		owner, _ := parseNodeID(m[2])
		var replicas []uint32
		for _, r := range strings.Split(m[4], ",") {
			id, _ := parseNodeID(r)
			replicas = append(replicas, id)
		}
		rows[m[1]] = struct {
			owner    uint32
			replicas []uint32
		}{owner, replicas}
	}
	return rows
}

// activeRow waits until cluster status shows queue active and returns
// its owner and replicas.
func activeRow(t *testing.T, conn []string, queue string) (uint32, []uint32) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if r, ok := queueRows(t, conn)[queue]; ok {
			return r.owner, r.replicas
		}
		if time.Now().After(deadline) {
			_, out := cli(t, "", append([]string{"cluster", "status"}, conn...)...)
			t.Fatalf("queue %s is not active in cluster status:\n%s", queue, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// move-owner hands a queue to another replica: the command says so, and
// cluster status then shows the new owner serving it in a newer epoch.
// Handing it to a node with no replica, to a node the cluster does not
// have, or without --to fails with a message saying why.
func TestQueueMoveOwner(t *testing.T) {
	conn := startCluster(t, 3, 2)
	createQueue(t, conn, "jobs")
	owner, replicas := activeRow(t, conn, "jobs")
	if len(replicas) != 2 {
		t.Fatalf("queue jobs has replicas %v, want two", replicas)
	}
	next := replicas[0] + replicas[1] - owner
	outsider := 6 - replicas[0] - replicas[1]
	code, out := cli(t, "", append([]string{"queue", "move-owner", "jobs", "--to", fmt.Sprintf("n%d", next), "--drain", "1s"}, conn...)...)
	want := regexp.MustCompile(fmt.Sprintf(`^moved queue jobs to n%d \(epoch (\d+)\) in \S+\n$`, next))
	if code != exitOK || !want.MatchString(out) {
		t.Fatalf("move-owner to n%d: status %d, output %q", next, code, out)
	}
	// The command returns once the new owner serves, so the very next
	// status shows it.
	if r, ok := queueRows(t, conn)["jobs"]; !ok || r.owner != next {
		t.Fatalf("right after the move cluster status shows jobs as %+v (active: %v), want n%d serving it", r, ok, next)
	}
	code, out = cli(t, "", append([]string{"queue", "move-owner", "jobs", "--to", fmt.Sprint(next)}, conn...)...)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("queue jobs is owned by n%d already", next)) {
		t.Fatalf("moving jobs to its owner: status %d, output %q", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--to", fmt.Sprint(outsider)}, exitFailed, fmt.Sprintf("bad-request: n%d holds no replica of queue jobs", outsider)},
		{nil, exitUsage, "queue move-owner needs --to N"},
		{[]string{"--to", "n9"}, exitUsage, "the cluster has no node n9; its nodes are n1, n2, n3"},
		{[]string{"--to", "two"}, exitUsage, `"two" is not a node ID`},
		{[]string{"--to", "1", "--drain", "soon"}, exitUsage, `invalid value "soon" for flag -drain`},
		{[]string{"--to", "1", "--drain", "-1s"}, exitUsage, "--drain -1s is negative"},
	} {
		code, out := cli(t, "", append(append([]string{"queue", "move-owner", "jobs"}, c.args...), conn...)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("move-owner %q: status %d, output %q; want status %d and %q", c.args, code, out, c.code, c.want)
		}
	}
	code, out = cli(t, "", append([]string{"queue", "move-owner", "nothing", "--to", "1"}, conn...)...)
	if code != exitFailed || !strings.Contains(out, "no-queue") {
		t.Errorf("moving a queue that does not exist: status %d, output %q", code, out)
	}
	if now, _ := activeRow(t, conn, "jobs"); now != next {
		t.Fatalf("after the refusals cluster status shows n%d owning jobs, want n%d", now, next)
	}
}

// node drain moves every queue the node owns to another replica: the
// node then owns none but a queue that cannot be handed off (it confirms
// on its owner alone), which the command names as it fails, and every
// message published before is still there to consume. Once that queue
// is gone, draining the node again finds nothing to move.
func TestNodeDrain(t *testing.T) {
	conn := startCluster(t, 3, 2)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, out := cli(t, "", append([]string{"queue", "create", "solo", "--policy", "owner-only"}, conn...)...)
		if code == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating solo: %d\n%s", code, out)
		}
	}
	drained, _ := activeRow(t, conn, "solo")
	// Create queues until the node that owns solo owns two of them too.
	var names, movable []string
	for i := 0; len(movable) < 2; i++ {
		if i == 20 {
			t.Fatalf("n%d owns %v of %v", drained, movable, names)
		}
		q := fmt.Sprintf("q%d", i)
		createQueue(t, conn, q)
		if code, out := cli(t, "", append([]string{"publish", q, q + "-1", q + "-2"}, conn...)...); code != exitOK {
			t.Fatalf("publish to %s: %d\n%s", q, code, out)
		}
		names = append(names, q)
		if owner, _ := activeRow(t, conn, q); owner == drained {
			movable = append(movable, q)
		}
	}
	code, out := cli(t, "", append([]string{"node", "drain", fmt.Sprintf("n%d", drained), "--drain", "1s"}, conn...)...)
	for _, want := range []string{
		fmt.Sprintf("cairn: moving queue solo off n%d: client: move-owner on queue \"solo\" failed: bad-request: queue solo confirms on its owner alone", drained),
		fmt.Sprintf("cairn: node n%d still owns 1 queue(s) (solo): moved %d, failed to move 1 (solo)\n", drained, len(movable)),
	} {
		if code != exitFailed || !strings.Contains(out, want) || strings.Count(out, "moved queue ") != len(movable) {
			t.Fatalf("node drain n%d (owning solo and %v): status %d, output %q; want status %d and %q", drained, movable, code, out, exitFailed, want)
		}
	}
	rows := queueRows(t, conn)
	for _, q := range names {
		if r, ok := rows[q]; !ok || r.owner == drained {
			t.Errorf("after the drain queue %s is %+v in cluster status (found %v), want active and not owned by n%d", q, r, ok, drained)
		}
	}
	for _, q := range names {
		code, out := cli(t, "", append([]string{"consume", q, "--ack", "--count", "2"}, conn...)...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Split(l, "\t")
			got = append(got, f[len(f)-1])
		}
		slices.Sort(got)
		if code != exitOK || !slices.Equal(got, []string{q + "-1", q + "-2"}) {
			t.Errorf("consuming %s after the drain: status %d, output %q", q, code, out)
		}
	}
	if code, out := cli(t, "", append([]string{"queue", "delete", "solo"}, conn...)...); code != exitOK {
		t.Fatalf("deleting solo: %d\n%s", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The queue is listed as deleted once the node whose view the
		// row comes from has applied the deletion.
		_, out := cli(t, "", append([]string{"cluster", "status"}, conn...)...)
		if regexp.MustCompile(`(?m)^solo .* deleted, owner not serving$`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster status does not show solo deleted:\n%s", out)
		}
	}
	code, out = cli(t, "", append([]string{"node", "drain", fmt.Sprint(drained)}, conn...)...)
	if code != exitOK || out != fmt.Sprintf("node n%d owns no queues; nothing to move\n", drained) {
		t.Fatalf("draining n%d again: status %d, output %q", drained, code, out)
	}
}

// The drain hands each queue to the serving, unfenced replica that owns
// the fewest queues, the lowest ID among equals, and says why when no
// replica will do.
func TestPickTarget(t *testing.T) {
	view := &status.Cluster{Nodes: []status.ClusterNode{
		{ID: 1, State: "serving"}, {ID: 2, State: "serving"}, {ID: 3, State: "serving"}, {ID: 4, State: "down"}, {ID: 5, State: "serving"},
	}}
	replicas := func(ids ...uint32) []status.ReplicaLag {
		var out []status.ReplicaLag
		for _, id := range ids {
			out = append(out, status.ReplicaLag{Node: id})
		}
		return out
	}
	fenced := replicas(1, 5, 2)
	fenced[1].Fenced = "checksum mismatch"
	for _, c := range []struct {
		replicas []status.ReplicaLag
		owns     map[uint32]int
		want     uint32
		why      string
	}{
		{replicas(1, 2, 3), map[uint32]int{1: 4, 2: 2, 3: 1}, 3, ""},
		{replicas(1, 3, 2), map[uint32]int{1: 4, 2: 1, 3: 1}, 2, ""},
		{replicas(1, 4, 2), map[uint32]int{1: 4, 2: 3}, 2, ""},
		{fenced, map[uint32]int{1: 4, 2: 3}, 2, ""},
		{replicas(1, 4), map[uint32]int{1: 4}, 0, "no other replica to take it: n4 is not serving"},
		{replicas(1), map[uint32]int{1: 4}, 0, "has no other replica"},
	} {
		got, err := pickTarget(view, status.ClusterQueue{Name: "q", Replicas: c.replicas}, 1, c.owns)
		if got != c.want || (c.why == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.why)) {
			t.Errorf("replicas %+v, owns %v: picked n%d, %v; want n%d, %q", c.replicas, c.owns, got, err, c.want, c.why)
		}
	}
}
