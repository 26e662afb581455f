package live

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
)

// TestShutdownHandsOffOwnedQueues stops the owner of a queue while a
// publisher runs: before the stopped node's Run returns, another node
// serves the queue (a failover could not have finished so soon: the
// cluster only suspects a node after its heartbeats stop), the publisher
// saw no failure, and every confirmed message is delivered afterwards.
func TestShutdownHandsOffOwnedQueues(t *testing.T) {
	nodes, addrs := startCluster(t, 3)
	c := dial(t, addrs...)
	ctx := ctxFor(t, 60*time.Second)
	if err := c.CreateQueue(ctx, "orders", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	owner := -1
	waitFor(t, 10*time.Second, "an owner to serve the queue", func() bool {
		owner = servingOwner(t, nodes, "orders")
		return owner >= 0
	})
	pub := startPublisher(ctx, c, "orders")
	pub.waitConfirmed(t, 50)
	nodes[owner].stop(t)
	if now := servingOwner(t, nodes, "orders"); now < 0 {
		t.Fatalf("when n%d's Run returned no other node served the queue; its log:\n%s", owner+1, nodes[owner].logs)
	}
	if !nodes[owner].logsMention("handed off owned queues", "handed_off=1", "remaining=0") {
		t.Errorf("n%d did not log the handoff; its log:\n%s", owner+1, nodes[owner].logs)
	}
	confirmed := pub.waitConfirmed(t, pub.count()+50)
	if err := pub.stop(); err != nil {
		t.Fatalf("a publish failed across the handoff: %v", err)
	}
	var survivors []string
	for i, a := range addrs {
		if i != owner {
			survivors = append(survivors, a)
		}
	}
	consumeAll(t, ctx, dial(t, survivors...), "orders", confirmed)
}

// startCluster runs an n-node cluster in this process and waits until
// its peers are connected and it has a metadata leader.
func startCluster(t *testing.T, n int) ([]*testNode, []string) {
	t.Helper()
	var nodes []*testNode
	var addrs []string
	for _, cfg := range clusterConfigs(t, n) {
		tn := start(t, cfg)
		nodes = append(nodes, tn)
		addrs = append(addrs, tn.ClientAddr())
	}
	waitFor(t, 10*time.Second, "a metadata leader", func() bool {
		for _, tn := range nodes {
			if tn.Status().MetaLeader != 0 {
				return true
			}
		}
		return false
	})
	return nodes, addrs
}

// servingOwner returns the index of the running node that serves queue
// as its owner, or -1 when none does. It asks each node once: the
// caller decides whether to wait.
func servingOwner(t *testing.T, nodes []*testNode, queue string) int {
	t.Helper()
	for i, tn := range nodes {
		select {
		case <-tn.done:
			continue // stopped
		default:
		}
		for _, q := range tn.Status().Queues {
			if q.Name == queue && q.Role == "owner" && q.State == "active" {
				return i
			}
		}
	}
	return -1
}

// publisher publishes to a queue one confirmed message after another
// until stopped, remembering what was confirmed and the first failure.
type publisher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	confirmed []client.MessageID
	err       error
}

func startPublisher(ctx context.Context, c *client.Client, queue string) *publisher {
	ctx, cancel := context.WithCancel(ctx)
	p := &publisher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			id, err := c.Publish(ctx, queue, []byte("order"))
			p.mu.Lock()
			if err == nil {
				p.confirmed = append(p.confirmed, id)
			} else if p.err == nil && !errors.Is(err, context.Canceled) {
				p.err = err
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *publisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.confirmed)
}

// waitConfirmed waits until at least n publishes are confirmed and
// returns them.
func (p *publisher) waitConfirmed(t *testing.T, n int) []client.MessageID {
	t.Helper()
	waitFor(t, 20*time.Second, "publishes to be confirmed", func() bool { return p.count() >= n })
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]client.MessageID(nil), p.confirmed...)
}

// stop ends the publisher and returns its first failure.
func (p *publisher) stop() error {
	p.cancel()
	<-p.done
	return p.err
}

// consumeAll subscribes to queue and waits until every message in want
// has been delivered, acking each.
func consumeAll(t *testing.T, ctx context.Context, c *client.Client, queue string, want []client.MessageID) {
	t.Helper()
	var mu sync.Mutex
	got := map[client.MessageID]bool{}
	_, err := c.Subscribe(ctx, queue, func(ctx context.Context, d *client.Delivery) {
		d.Ack(ctx)
		mu.Lock()
		got[d.ID] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "every confirmed message to be delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range want {
			if !got[id] {
				return false
			}
		}
		return true
	})
}
