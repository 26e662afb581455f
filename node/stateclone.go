package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/fifoheap"
	"github.com/cairnmq/cairn/wire"
)

// A new owner serves from the base a replica keeps for its next checkpoint
// build (ckptroll.go), and the replica keeps a copy of it as that base, so
// the owner's next build neither decodes its checkpoint nor replays from
// it. A handoff's old owner used to decode it in the very handler that
// asked its followers for a cut: 25-30 ms with a window of 40,000 IDs,
// while its publishers waited (a full two-minute window at 1,000 msg/s
// holds six times as many).
//
// The copy must not cost the new owner what the decode did. Copying the
// two ID maps took 6.5 ms with a window of 115,000 entries, in the
// handler that activates the new owner. So the serving state keeps the
// maps, and the copy starts with empty ones that it fills from its window
// a step at a time (fillMaps): every remembered ID is in the window, and
// replaying the window in order leaves each with its latest index, as
// applying the records did. The rest of the copy costs a sort and a pass
// over the live messages and one over the window's block list; payloads
// and full window blocks are never written again, so both states share
// them.

// clone copies a builder's state (one that applies records and holds no
// leases) so that the copy and the original change independently from
// here on. The copy's ID maps are filled later, by fillMaps, unless the
// state remembers IDs from records without a stamp, which the window
// does not list: then they are copied whole.
func (s *queueState) clone() *queueState {
	if s.filling {
		panic(fmt.Sprintf("node: queue %s state cloned while its ID maps are still being filled", s.name))
	}
	c := *s
	c.peaks = mapPeaks{} // its maps are made anew, at their size
	c.members = slices.Clone(s.members)
	c.recent = s.recent.clone()
	if s.unstamped > 0 {
		c.known = s.known.clone()
	} else {
		// Filled by fillMaps a step a tick: copying the ID maps whole
		// in the handler that activates the new owner took 0.2 s for a
		// two-minute window of 1,000,000 publishes and settles, when
		// they were one map of every ID (knownIDs).
		c.known = newKnownIDs()
		c.filling, c.filled, c.fillWant = true, 0, s.known.len()
	}
	// By publish index, as the encoding lists them: the order is the
	// determinism rule's, not the copy's need.
	c.messages = make(map[wire.MessageID]*message, len(s.messages))
	for _, m := range sortedMessages(s) {
		if m.lease != nil {
			panic(fmt.Sprintf("node: queue %s state cloned with message %s leased", s.name, m.id))
		}
		copied := *m
		c.messages[m.id] = &copied
	}
	// The copy's ready queue keeps only live entries: dead ones are
	// dropped lazily anyway, and the order messages come out in depends on
	// their unique keys alone, not on the order they are pushed in.
	c.ready = fifoheap.Queue[*message]{}
	for m := range s.ready.All() {
		if m.inHeap && s.messages[m.id] == m {
			c.ready.Push(c.messages[m.id])
		}
	}
	c.deadInHeap = 0
	c.delayed = make([]*message, len(s.delayed))
	for i, m := range s.delayed {
		c.delayed[i] = c.messages[m.id]
	}
	if s.movedIn != nil {
		c.movedIn = make(map[moveSource]*moveLedger, len(s.movedIn))
		for _, src := range slices.SortedFunc(maps.Keys(s.movedIn), compareMoveSources) {
			l := s.movedIn[src]
			c.movedIn[src] = &moveLedger{settledThrough: l.settledThrough, moves: maps.Clone(l.moves)}
		}
	}
	return &c
}

// fillMaps puts up to n more window entries into the ID maps of a copy
// still filling them, oldest first, and reports whether the maps are
// whole. n < 0 fills them all.
func (s *queueState) fillMaps(n int) bool {
	if !s.filling {
		return true
	}
	for e := range s.recent.from(s.filled) {
		if n == 0 {
			return false
		}
		s.known.note(e.id, e.index(), e.settled())
		s.filled++
		n--
	}
	if got := s.known.len(); got != s.fillWant {
		panic(fmt.Sprintf("node: queue %s window of %d entries filled %d IDs, its original remembered %d", s.name, s.recent.len(), got, s.fillWant))
	}
	s.filling = false
	return true
}

// fillLeft is how many window entries a copy has yet to put into its ID
// maps.
func (s *queueState) fillLeft() int {
	if !s.filling {
		return 0
	}
	return s.recent.len() - s.filled
}
