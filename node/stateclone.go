package node

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// clone copies a builder's state (one that applies records and holds no
// leases) so that the copy and the original change independently from
// here on: a new owner serves from the copy while the original stays the
// base of its next checkpoint build.
//
// Copying is what spares that build decoding the checkpoint again: a
// handoff's old owner did, in the very handler that asked its followers
// for the cut, and stood still for 25-30 ms with a window of 40,000 IDs
// while its publishers waited (a full two-minute window at 1,000 msg/s
// holds six times as many). A copy costs one pass over the live messages,
// the two ID maps and the window's block list; payloads and full window
// blocks are never written again, so both states share them.
func (s *queueState) clone() *queueState {
	c := *s
	c.members = slices.Clone(s.members)
	c.published = maps.Clone(s.published)
	c.settled = maps.Clone(s.settled)
	c.recent = s.recent.clone()
	c.messages = make(map[wire.MessageID]*message, len(s.messages))
	for id, m := range s.messages {
		if m.lease != nil {
			panic(fmt.Sprintf("node: queue %s state cloned with message %s leased", s.name, id))
		}
		copied := *m
		c.messages[id] = &copied
	}
	// The heap keeps only live entries: dead ones are dropped lazily
	// anyway, and the order messages come out in depends on their unique
	// keys alone (compactReady).
	c.ready = make(readyHeap, 0, len(s.ready)-s.deadInHeap)
	for _, m := range s.ready {
		if m.inHeap && s.messages[m.id] == m {
			c.ready = append(c.ready, c.messages[m.id])
		}
	}
	heap.Init(&c.ready)
	c.deadInHeap = 0
	c.delayed = make([]*message, len(s.delayed))
	for i, m := range s.delayed {
		c.delayed[i] = c.messages[m.id]
	}
	if s.movedIn != nil {
		c.movedIn = make(map[moveSource]*moveLedger, len(s.movedIn))
		for src, l := range s.movedIn {
			c.movedIn[src] = &moveLedger{settledThrough: l.settledThrough, moves: maps.Clone(l.moves)}
		}
	}
	return &c
}

// clone copies the list's structure and shares its entries. Full blocks
// are never written again; the tail block is shared only up to its
// length, with its capacity capped there, so each list's next push goes
// to a block of its own.
func (w *windowList) clone() windowList {
	c := windowList{blocks: slices.Clone(w.blocks), head: w.head, n: w.n}
	if last := len(c.blocks) - 1; last >= 0 {
		b := c.blocks[last]
		c.blocks[last] = b[:len(b):len(b)]
	}
	return c
}
