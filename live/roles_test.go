package live

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// joinAsPeer dials addr's peer port and runs the handshake as node self,
// proving secret.
func joinAsPeer(t *testing.T, addr string, self, expect uint32, secret []byte) error {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	in := session.Initiator{Role: session.RolePeer, Self: self, Expect: expect, Secret: secret}
	_, err = in.Handshake(bufio.NewReader(nc), nc)
	return err
}

// TestClientSecretCannotJoinThePeerPort runs node 2 of a two-node
// cluster and tries its peer port as node 1: with the client secret (what
// any client holds) the handshake must fail; with the peer secret it
// passes.
func TestClientSecretCannotJoinThePeerPort(t *testing.T) {
	cfgs := clusterConfigs(t, 2)
	n2 := start(t, cfgs[1])
	for _, secret := range [][]byte{testSecret, testAdminSecret} {
		if err := joinAsPeer(t, n2.PeerAddr(), 1, 2, secret); !errors.Is(err, session.ErrBadProof) {
			t.Fatalf("joining the peer port with a client-side secret: %v, want a secret mismatch", err)
		}
	}
	if up := n2.Status().Peers[0].Connected; up {
		t.Fatal("node 2 counts node 1 as connected after a forged join")
	}
	if err := joinAsPeer(t, n2.PeerAddr(), 1, 2, testPeerSecret); err != nil {
		t.Fatalf("joining with the peer secret: %v", err)
	}
}

// TestAdminOperationsNeedTheAdminRole checks that a client connection
// can publish, create queues and list the members, but neither delete a
// queue, change the failure detection policy, move a queue's owner, nor
// add or remove a node; an admin connection can delete and change the
// policy.
func TestAdminOperationsNeedTheAdminRole(t *testing.T) {
	tn := start(t, singleConfig(t))
	c := dial(t, tn.ClientAddr())
	ctx := ctxFor(t, 20*time.Second)
	if err := c.CreateQueue(ctx, "q", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	policy := client.Detection{Mode: 1, Interval: 1000 * time.Hour, Grace: time.Hour}
	for what, err := range map[string]error{
		"delete":        c.DeleteQueue(ctx, "q"),
		"set-detection": c.SetDetection(ctx, policy),
		"move-owner":    c.MoveOwner(ctx, "q", 2, 0),
		"add-node":      c.AddNode(ctx, client.NewNode{ID: 2, PeerAddr: "127.0.0.1:1"}),
		"remove-node":   c.RemoveNode(ctx, 1),
	} {
		var se *client.StatusError
		if !errors.As(err, &se) || se.Status != client.StatusBadRequest || !strings.Contains(se.Detail, "needs the admin role") {
			t.Errorf("%s as a client: %v, want a refusal naming the admin role", what, err)
		}
	}
	if _, err := c.Publish(ctx, "q", []byte("still here")); err != nil {
		t.Fatalf("the queue a client failed to delete: %v", err)
	}
	if members, _, err := c.Members(ctx); err != nil || len(members) != 1 || members[0].ID != 1 {
		t.Fatalf("members as a client: %v, %+v; want node 1 alone (the refused add and removal changed nothing)", err, members)
	}
	admin, err := client.Dial(ctx, client.Options{Secret: testAdminSecret, Admin: true, RequestTimeout: 2 * time.Second}, tn.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.SetDetection(ctx, client.Detection{Mode: 1, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}); err != nil {
		t.Fatalf("set-detection as an admin: %v", err)
	}
	if err := admin.DeleteQueue(ctx, "q"); err != nil {
		t.Fatalf("delete as an admin: %v", err)
	}
	for _, kind := range []wire.Kind{wire.KindDeleteQueue, wire.KindAddNode, wire.KindRemoveNode} {
		if got := counterValue(tn.m.denied.WithLabelValues(kind.String())); got != 1 {
			t.Errorf("%v %s requests counted as denied, want 1", got, kind)
		}
	}
}

// TestClientSecretCannotClaimAdmin checks that the admin role needs the
// admin secret: a client that claims it with the client secret is
// refused, and says why.
func TestClientSecretCannotClaimAdmin(t *testing.T) {
	tn := start(t, singleConfig(t))
	_, err := client.Dial(ctxFor(t, 5*time.Second), client.Options{Secret: testSecret, Admin: true}, tn.ClientAddr())
	if !errors.Is(err, session.ErrBadProof) || !strings.Contains(err.Error(), "secret mismatch") {
		t.Fatalf("claiming admin with the client secret: %v, want a secret mismatch", err)
	}
}
