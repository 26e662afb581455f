package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// membersQueue is the queue the membership test keeps traffic on.
const membersQueue = "members"

// TestProcessAddAndRemoveNode runs three cairn-node processes with a
// majority queue under steady traffic (publishes every 5 ms and a
// subscriber acking everything), then, with the traffic running:
//
//  1. starts a fourth process with join = true, which lists only itself
//     and node 1, and adds it: it must be listed as a learner and apply
//     the metadata (its status shows an applied index), having been
//     dialed by nodes it was never configured with;
//  2. removes the founder that owns the queue: it hands the queue to
//     another founder (the metadata replaces a leaving owner's replica
//     only after the handoff), its replica moves to node 4, and it
//     leaves the member list; then it is stopped with SIGTERM;
//  3. stops the publisher and checks RPO = 0: every confirmed publish is
//     delivered, and node 4 holds the owner's whole log. Failed and
//     unknown publishes are reported; a failed one fails the test.
func TestProcessAddAndRemoveNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mt := startMembershipTraffic(t, ctx, 3, 4)
	defer mt.close()
	pc, admin, addrs := mt.pc, mt.admin, mt.addrs
	began := time.Now()

	joiner := pc.startJoiner(4, addrs[3], addrs[0])
	pc.waitHealthy(joiner, serviceBound)
	if err := admin.AddNode(ctx, client.NewNode{ID: 4, PeerAddr: addrs[3].peer, ClientAddr: addrs[3].client, HTTPAddr: addrs[3].http}); err != nil {
		t.Fatalf("adding n4: %v", err)
	}
	waitMembers(t, ctx, admin, "n4 listed as a learner", func(ms []client.Member) bool {
		i := slices.IndexFunc(ms, func(m client.Member) bool { return m.ID == 4 })
		return i >= 0 && !ms[i].Voter && ms[i].Addr == addrs[3].peer
	})
	applied := waitMetaApplied(t, ctx, joiner)
	t.Logf("n4 joined as a learner %v after starting the traffic; its metadata is applied through %d", time.Since(began).Round(time.Millisecond), applied)

	owner := pc.owner(ctx, membersQueue)
	leaving := owner
	removeStart := time.Now()
	if err := admin.RemoveNode(ctx, uint32(leaving.id)); err != nil {
		t.Fatalf("removing n%d: %v", leaving.id, err)
	}
	waitMembers(t, ctx, admin, fmt.Sprintf("n%d gone from the members", leaving.id), func(ms []client.Member) bool {
		return !slices.ContainsFunc(ms, func(m client.Member) bool { return m.ID == uint32(leaving.id) })
	})
	t.Logf("n%d (owner n%d) left the cluster %v after remove-node", leaving.id, owner.id, time.Since(removeStart).Round(time.Millisecond))
	checkSIGTERM(t, leaving)

	time.Sleep(time.Second) // traffic on the three nodes that stay
	mt.finish(t)
	pc.waitCaughtUp(ctx, joiner, pc.owner(ctx, membersQueue), membersQueue, serviceBound)
	members, leader, err := admin.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("members at the end (leader n%d): %+v", leader, members)
}

// membershipTraffic is a process cluster of founders with a majority
// queue under steady traffic (a publish every 5 ms, a subscriber acking
// everything), and an admin client, for the membership tests.
type membershipTraffic struct {
	pc       *procCluster
	addrs    []procAddrs // the founders' first, then the joiners'
	admin    *client.Client
	consumer *rollConsumer
	pub      *rollPublisher
}

// startMembershipTraffic starts founders processes, with room in addrs
// for total nodes, and the traffic.
func startMembershipTraffic(t *testing.T, ctx context.Context, founders, total int) *membershipTraffic {
	t.Helper()
	bin := t.TempDir()
	buildBinaries(t, bin)
	mt := &membershipTraffic{addrs: loopbackAddrs(t, total)}
	mt.pc = newProcClusterAt(t, bin, mt.addrs[:founders], "info", "replication = 3")
	for _, nd := range mt.pc.nodes {
		mt.pc.waitHealthy(nd, serviceBound)
	}
	clients := mt.pc.clientAddrs()
	var err error
	if mt.admin, err = client.Dial(ctx, client.Options{Secret: []byte(processAdminSecret), Admin: true}, clients...); err != nil {
		t.Fatal(err)
	}
	createWhenReady(t, ctx, mt.admin, membersQueue, client.PolicyMajority)
	mt.consumer = startRollConsumer(t, ctx, clients, membersQueue)
	mt.pub = startRollPublisher(ctx, clients, membersQueue, 5*time.Millisecond)
	return mt
}

// finish stops the publisher and checks RPO 0: no publish failed and
// every confirmed one was delivered.
func (mt *membershipTraffic) finish(t *testing.T) {
	t.Helper()
	res := mt.pub.stop()
	t.Logf("publishes: %d sent, %d confirmed, %d failed, %d unknown; longest confirmation %v",
		res.sent, len(res.confirmed), res.failed, res.unknown, res.maxLatency.Round(time.Millisecond))
	if res.failed > 0 {
		t.Errorf("%d publishes failed, the first with %v", res.failed, res.firstErr)
	}
	if len(res.confirmed) == 0 {
		t.Fatal("no publish was confirmed")
	}
	dups := mt.consumer.waitAll(t, res.confirmed, 30*time.Second)
	t.Logf("RPO = 0: all %d confirmed messages delivered (%d more than once)", len(res.confirmed), dups)
}

// close ends the consumer and the admin client.
func (mt *membershipTraffic) close() {
	mt.consumer.close()
	mt.admin.Close()
}

// startJoiner writes the configuration of node id, which joins the
// cluster knowing only itself and a seed (node 1), and starts it.
func (pc *procCluster) startJoiner(id int, self, seed procAddrs) *procNode {
	root := filepath.Dir(pc.nodes[0].config)
	nd := &procNode{id: id, clientAddr: self.client, httpAddr: self.http,
		config: filepath.Join(root, fmt.Sprintf("n%d.toml", id)), log: filepath.Join(root, fmt.Sprintf("n%d.log", id))}
	text := fmt.Sprintf(`id = %d
join = true
replication = 3
data_dir = "n%d"
peer_secret = %q
client_secret = %q
admin_secret = %q

[[peers]]
id = 1
addr = %q
client_addr = %q

[[peers]]
id = %d
addr = %q
client_addr = %q
http_addr = %q
`, id, id, processPeerSecret, processSecret, processAdminSecret, seed.peer, seed.client, id, self.peer, self.client, self.http)
	if err := os.WriteFile(nd.config, []byte(text), 0o644); err != nil {
		pc.t.Fatal(err)
	}
	pc.nodes = append(pc.nodes, nd)
	pc.start(nd)
	return nd
}

// waitMembers reads the member list until cond holds, for at most
// serviceBound. A follower may answer with a list one heartbeat old.
func waitMembers(t *testing.T, ctx context.Context, c *client.Client, what string, cond func([]client.Member) bool) {
	t.Helper()
	deadline := time.Now().Add(serviceBound)
	var last []client.Member
	var lastErr error
	for time.Now().Before(deadline) {
		last, _, lastErr = c.Members(ctx)
		if lastErr == nil && cond(last) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: members %+v, last error %v", what, last, lastErr)
}

// waitMetaApplied waits until nd reports metadata applied, which a
// joining node has only once the leader's snapshot reached it.
func waitMetaApplied(t *testing.T, ctx context.Context, nd *procNode) uint64 {
	t.Helper()
	deadline := time.Now().Add(serviceBound)
	var s *status.Node
	var err error
	for time.Now().Before(deadline) {
		s, err = status.FetchAuth(ctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
		if err == nil && s.MetaApplied > 0 && s.MetaLeader != 0 {
			return s.MetaApplied
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("n%d never applied the metadata: %+v, %v", nd.id, s, err)
	return 0
}
