package core

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// route picks the node for op's next attempt. A settle or a lease
// extension of a delivery goes only where its lease lives (the AtOwner
// forms follow the queue like any request). Otherwise a node named by a
// redirect comes first, then the cached owner of the queue, then
// discovery.
func (c *Client) route(op *operation) uint32 {
	if op.settle != 0 {
		return op.settle
	}
	if op.hint != 0 {
		to := op.hint
		op.hint = 0
		return to
	}
	if owner, ok := c.owners[op.queue]; ok {
		return owner
	}
	avoid := op.to
	return c.discover(func(node uint32) bool { return node == avoid && len(c.cfg.Nodes) > 1 })
}

// discover returns the next node of the fallback list that skip does not
// rule out (the node op last tried, which just failed it; or, for a
// hedge, every node already holding one of its attempts). The list is
// walked round-robin from a random start, so every node gets its turn
// and a dead one is never retried forever.
func (c *Client) discover(skip func(node uint32) bool) uint32 {
	n := len(c.cfg.Nodes)
	for range n {
		node := c.cfg.Nodes[c.cursor]
		c.cursor = (c.cursor + 1) % n
		if !skip(node) {
			return node
		}
	}
	// Callers rule out at most one node of several (nodes are distinct,
	// validated), or none of one.
	panic(fmt.Sprintf("core: discovery found no node to try in %v", c.cfg.Nodes))
}

// learnOwner updates the owner cache from a reply to the current attempt
// of op, and tells standing subscriptions when their node disowned their
// queue.
func (c *Client) learnOwner(now time.Time, op *operation, from uint32, r *wire.Reply) {
	switch r.Status {
	case wire.StatusOK:
		// A create or a change of a queue's options may be answered by
		// whichever node runs the catalogue, and a deleted queue has no
		// owner, so only queue traffic says who owns the queue.
		switch {
		case op.kind == OpMoveOwner && r.Owner != 0:
			// The old owner answers a handoff, naming the next one.
			c.owners[op.queue] = r.Owner
		case op.queue == "":
			// A membership or detection change names no queue.
		case op.kind != OpCreate && op.kind != OpDelete && op.kind != OpSetQueueOptions:
			c.owners[op.queue] = from
		}
	case wire.StatusNotOwner, wire.StatusFenced:
		// A refused create names the catalogue's node, not the queue's
		// owner, so it says nothing about where the queue lives.
		if op.kind != OpCreate && op.kind != OpSetQueueOptions {
			c.noteRefusal(op.queue, from, r.Owner)
			c.onOwnerMoved(now, op.queue, from, r.Owner)
		}
	}
}

// noteRefusal records that node from refused queue and named owner (zero
// if it did not know one).
func (c *Client) noteRefusal(queue string, from, owner uint32) {
	switch {
	case owner != 0 && owner != from:
		c.owners[queue] = owner
	case c.owners[queue] == from:
		delete(c.owners, queue)
	}
}

// forgetOwner drops every cache entry naming node. Keys are visited in
// sorted order so that this loop, like every other, is deterministic.
func (c *Client) forgetOwner(node uint32) {
	for _, queue := range slices.Sorted(maps.Keys(c.owners)) {
		if c.owners[queue] == node {
			delete(c.owners, queue)
		}
	}
}

// KnowsOwner reports whether the client believes some node owns queue, so
// a request for it goes straight there rather than through discovery.
func (c *Client) KnowsOwner(queue string) bool {
	_, ok := c.owners[queue]
	return ok
}
