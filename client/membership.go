package client

import (
	"context"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/wire"
)

// Member is one member of the cluster as the metadata records it.
type Member struct {
	ID   uint32
	Addr string // the address peers reach it at; empty for a founding member, whose address the configuration holds
	// ClientAddr and HTTPAddr are where clients and tools reach it, as
	// AddNode recorded them; empty for a founding member.
	ClientAddr string
	HTTPAddr   string
	// Voter says it votes in the metadata group; a learner receives the
	// metadata and holds queues but does not vote.
	Voter bool
	// Leaving says a removal is under way: its queues are moving away.
	Leaving bool
	// Down says the metadata leader confirmed it down.
	Down bool
	// Replicas counts the queue replicas placed on it.
	Replicas int
}

// NewNode names a node to add and where it is reached: PeerAddr by the
// other nodes (required), ClientAddr by clients and HTTPAddr by tools.
// Give ClientAddr whenever clients may need the node: a client learns
// the nodes of the cluster from the metadata, and without it cannot
// follow a redirect to a queue the new node comes to own.
type NewNode struct {
	ID         uint32
	PeerAddr   string
	ClientAddr string
	HTTPAddr   string
}

// AddNode admits node n to the cluster.
// The new node joins the metadata group as a learner (it is promoted to
// a voter when the group has fewer than it wants: 3, or 5 from five
// members on) and new queues may be placed on it at once; start it with
// its data directory empty and join set in its configuration. AddNode
// returns once the change is committed; asking again is safe. Only a
// client connected with the admin credential may ask.
func (c *Client) AddNode(ctx context.Context, n NewNode) error {
	m := wire.AddNode{Node: n.ID, Addr: n.PeerAddr, ClientAddr: n.ClientAddr, HTTPAddr: n.HTTPAddr}
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.AddNode(now, m) })
	return err
}

// RemoveNode retires node id. It returns once the node is marked
// leaving; from then on no queue is placed on it, it hands the queues
// it owns to other replicas, its replicas are replaced one by one, and
// it leaves the metadata group once it holds none (a voter's seat goes
// to a learner first). Members shows the progress: the node is gone
// from the list when the removal is complete. Only an admin may ask.
func (c *Client) RemoveNode(ctx context.Context, id uint32) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.RemoveNode(now, id) })
	return err
}

// Rebalance spreads the existing queues' replicas evenly over the
// members that stay, one replica move at a time (each a brief recovery
// of the queue at a new epoch, led by its owner). It returns once the
// rebalance is committed; Members shows the replica counts evening out.
// New queues are placed on every member without asking. Only an admin
// may ask.
func (c *Client) Rebalance(ctx context.Context) error {
	_, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.Rebalance(now) })
	return err
}

// Members returns the cluster's members in ID order, as the answering
// node's metadata knows them, and the metadata leader it knows (0 if
// none).
func (c *Client) Members(ctx context.Context) ([]Member, uint32, error) {
	ev, err := c.do(ctx, func(now time.Time) core.OpID { return c.core.MemberList(now) })
	if err != nil {
		return nil, 0, err
	}
	out := make([]Member, len(ev.Members))
	for i, m := range ev.Members {
		out[i] = Member{ID: m.ID, Addr: m.Addr, ClientAddr: m.ClientAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leaving: m.Leaving, Down: m.Down, Replicas: int(m.Replicas)}
	}
	return out, ev.Leader, nil
}
