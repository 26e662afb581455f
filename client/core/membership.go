package core

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// AddNode starts admitting node n.Node, reachable by its peers at
// n.Addr (and by clients and tools at n.ClientAddr and n.HTTPAddr, if
// set), to the cluster. Any node takes it; the event is OK once the
// membership change is committed, and a retry of a change that already
// happened is answered OK. Only an admin connection may ask.
func (c *Client) AddNode(now time.Time, n wire.AddNode) OpID {
	op := c.newOp(OpAddNode, "")
	op.newMember = n
	if n.Node == 0 || n.Addr == "" {
		return c.reject(op, wire.StatusBadRequest, fmt.Sprintf(
			"invalid node to add (node %d at %q): want a node ID above 0 and the address its peers reach it at", n.Node, n.Addr))
	}
	return c.startAnywhere(now, op)
}

// RemoveNode starts retiring node id: the event is OK once the node is
// marked leaving; its queues then move away and it leaves the metadata
// group (MemberList shows the progress). Only an admin may ask.
func (c *Client) RemoveNode(now time.Time, id uint32) OpID {
	op := c.newOp(OpRemoveNode, "")
	op.member = id
	if id == 0 {
		return c.reject(op, wire.StatusBadRequest, "invalid node to remove: want a node ID above 0")
	}
	return c.startAnywhere(now, op)
}

// MemberList starts reading the cluster's members from any node; the
// event's Members holds them.
func (c *Client) MemberList(now time.Time) OpID {
	return c.startAnywhere(now, c.newOp(OpMemberList, ""))
}

// Rebalance starts spreading the existing queues' replicas evenly over
// the members; the event is OK once the rebalance is committed. Only an
// admin may ask.
func (c *Client) Rebalance(now time.Time) OpID {
	return c.startAnywhere(now, c.newOp(OpRebalance, ""))
}

// startAnywhere sends an operation that names no queue, so any node may
// take it.
func (c *Client) startAnywhere(now time.Time, op *operation) OpID {
	c.live = append(c.live, op)
	c.send(now, op)
	return op.id
}

// onMemberListReply keeps a member list for the attempt it answers and
// then handles it as the reply it also is.
func (c *Client) onMemberListReply(now time.Time, from uint32, r *wire.MemberListReply) {
	if a, ok := c.attempts[r.ReqID]; ok && a.to == from && a.op.kind == OpMemberList && r.Status == wire.StatusOK {
		a.op.members, a.op.leader = r.Members, r.Leader
	}
	c.onReply(now, from, &wire.Reply{ReqID: r.ReqID, Status: r.Status, Detail: r.Detail})
}

// membershipMessage is the request an attempt of a membership operation
// sends, or nil for any other kind.
func membershipMessage(op *operation, reqID uint64) wire.Message {
	switch op.kind {
	case OpAddNode:
		m := op.newMember
		m.ReqID = reqID
		return &m
	case OpRemoveNode:
		return &wire.RemoveNode{ReqID: reqID, Node: op.member}
	case OpMemberList:
		return &wire.MemberList{ReqID: reqID}
	case OpRebalance:
		return &wire.Rebalance{ReqID: reqID}
	}
	return nil
}
