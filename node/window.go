package node

import (
	"fmt"
	"iter"
	"slices"
)

// windowBlockLen is how many entries one block of a windowList holds at
// most (128 KiB of entries). A new block holds as many as the list
// already does, from windowBlockMin on, so a quiet queue's few entries
// take a small block, not a full one: a node may hold thousands of
// queues.
const (
	windowBlockLen = 4096
	windowBlockMin = 16
)

// windowList holds the deduplication window's entries, oldest first, in
// blocks of up to windowBlockLen. A busy queue's window runs to millions of
// entries (two minutes of publishes and settles at 12,000 msg/s is almost
// three million). Kept in one slice, it was copied whole each time the
// slice grew and each time its forgotten head was cut off: tens of
// megabytes moved in one go, a pause of tens of milliseconds between two
// publishes on every replica that keeps a state. In blocks, adding at the
// tail and forgetting at the head touch one entry and, now and then, one
// block.
//
// Lists copied from one another (clone) share their blocks, also those
// filled after the copy. An owner keeps two states that apply the same
// records, the one it serves from and the base of its next checkpoint,
// a copy of it, and with a block each they held every entry twice: 32
// bytes of each publish and each ack in the window, about 60 MB for the
// two minutes after a million messages. So the list that reaches a
// block's end first makes the next block and files it with the lists it
// shares with (windowShare); the other takes that block when it gets
// there, and where a block already holds an entry at the place it pushes
// to, it checks that the entry is the one it pushes instead of writing
// it. Entries are numbered among every entry the lists ever listed, and
// lists that applied the same records number and cut their blocks alike.
// A list that pushes something else than the block holds (lists whose
// records differ) copies the block's entries before that place into a
// block of its own and goes on there, so no list ever sees an entry
// change under it.
//
// The zero value is an empty list.
type windowList struct {
	// blocks hold the entries numbered first to first+n-1, in order: the
	// first from first on, the last up to first+n. Lists that share a
	// block may each hold a different part of it.
	blocks []*windowBlock
	first  uint64
	n      int
	share  *windowShare
}

// windowBlock is a run of consecutive entries, the first numbered start.
// Its capacity is fixed when it is made, and entries are only ever
// appended to it, so every entry a list reads from it stays as it was.
type windowBlock struct {
	start   uint64
	entries []recentID
}

// end is the number one past the last entry the block can hold.
func (b *windowBlock) end() uint64 { return b.start + uint64(cap(b.entries)) }

// windowShareSlots is how many of the newest blocks a windowShare files.
// A lagging list finds a block there as long as it lags by fewer blocks
// than this; a base lags its owner's serving state by a tick's records,
// or by a build's while a checkpoint is built. Past that it makes a block
// of its own, cut where the leader's was, and shares again once it
// catches up.
const windowShareSlots = 8

// windowShare files the newest blocks that copies of one list made, by
// the number of their first entry, so the lists that lag find them. A
// block is taken out once a list has forgotten all of it, so a queue
// whose window emptied keeps no block alive here.
type windowShare struct {
	blocks [windowShareSlots]*windowBlock
	next   int
}

// file notes b as the newest block made.
func (s *windowShare) file(b *windowBlock) {
	s.blocks[s.next] = b
	s.next = (s.next + 1) % windowShareSlots
}

// find is the filed block whose first entry is numbered start, or nil.
func (s *windowShare) find(start uint64) *windowBlock {
	for _, b := range s.blocks {
		if b != nil && b.start == start {
			return b
		}
	}
	return nil
}

// drop takes b out of the filed blocks.
func (s *windowShare) drop(b *windowBlock) {
	for i, f := range s.blocks {
		if f == b {
			s.blocks[i] = nil
		}
	}
}

// len is how many entries the list holds.
func (w *windowList) len() int { return w.n }

// push adds e at the tail.
func (w *windowList) push(e recentID) {
	at := w.first + uint64(w.n)
	last := len(w.blocks) - 1
	if last < 0 || w.blocks[last].end() == at {
		w.blocks = append(w.blocks, w.blockAt(at))
		last++
	}
	b := w.blocks[last]
	switch i := int(at - b.start); {
	case i == len(b.entries):
		b.entries = append(b.entries, e) // within its capacity: never moves
	case i < len(b.entries) && b.entries[i] == e:
		// A list sharing the block pushed it first.
	case i < len(b.entries):
		own := &windowBlock{start: b.start, entries: make([]recentID, i, cap(b.entries))}
		copy(own.entries, b.entries[:i])
		own.entries = append(own.entries, e)
		w.blocks[last] = own
	default:
		panic(fmt.Sprintf("node: window entry %d pushed to a block of %d entries from %d", at, len(b.entries), b.start))
	}
	w.n++
}

// blockAt is the block for the entries from the one numbered at on: one
// a list sharing this one made, or a new one, filed for them. A list
// never copied shares with no one and files nothing.
func (w *windowList) blockAt(at uint64) *windowBlock {
	if w.share != nil {
		if b := w.share.find(at); b != nil {
			return b
		}
	}
	size := min(max(w.n, windowBlockMin), windowBlockLen)
	b := &windowBlock{start: at, entries: make([]recentID, 0, size)}
	if w.share != nil {
		w.share.file(b)
	}
	return b
}

// front is the oldest entry; the list must not be empty.
func (w *windowList) front() recentID {
	if w.n == 0 {
		panic("node: front of an empty window list")
	}
	b := w.blocks[0]
	return b.entries[w.first-b.start]
}

// popFront drops the oldest entry and returns it; the list must not be
// empty. A block is let go once the list has dropped the last entry it
// can hold, or, in a list left empty, the last entry it holds.
func (w *windowList) popFront() recentID {
	e := w.front()
	w.first++
	w.n--
	if b := w.blocks[0]; w.first == b.end() || w.n == 0 {
		w.letGo(b)
		w.blocks[0] = nil
		w.blocks = w.blocks[1:]
	}
	if w.n == 0 && len(w.blocks) > 0 {
		panic(fmt.Sprintf("node: empty window list keeps %d blocks", len(w.blocks)))
	}
	return e
}

// letGo takes a block the list is done with out of the filed ones, so
// that a queue whose window emptied keeps no block alive there. Another
// list looks a block up only as it reaches the block's start, and lists
// lag each other by far less than a window; one that had not reached it
// when this one forgot all of it makes a block of its own, cut alike.
func (w *windowList) letGo(b *windowBlock) {
	if w.share != nil {
		w.share.drop(b)
	}
}

// from yields the entries from the i-th (0 is the oldest) to the tail.
func (w *windowList) from(i int) iter.Seq[recentID] {
	if i < 0 || i > w.n {
		panic(fmt.Sprintf("node: window list of %d entries read from %d", w.n, i))
	}
	return func(yield func(recentID) bool) {
		at, end := w.first+uint64(i), w.first+uint64(w.n)
		for _, b := range w.blocks {
			if at >= end {
				return
			}
			hi := min(end, b.start+uint64(len(b.entries)))
			if at >= hi {
				continue
			}
			for _, e := range b.entries[at-b.start : hi-b.start] {
				if !yield(e) {
					return
				}
			}
			at = hi
		}
	}
}

// clone copies the list's structure and shares its blocks, those it
// holds and those it and the copy fill from here on (see windowList).
func (w *windowList) clone() windowList {
	if w.share == nil {
		w.share = &windowShare{}
	}
	return windowList{blocks: slices.Clone(w.blocks), first: w.first, n: w.n, share: w.share}
}

// all yields every entry, oldest first.
func (w *windowList) all() iter.Seq[recentID] { return w.from(0) }

// slice copies the entries out, oldest first.
func (w *windowList) slice() []recentID {
	out := make([]recentID, 0, w.n)
	for e := range w.all() {
		out = append(out, e)
	}
	return out
}

// sum is the multiset digest of the entries.
func (w *windowList) sum() windowSum {
	var s windowSum
	for e := range w.all() {
		s.add(e)
	}
	return s
}
