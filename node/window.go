package node

import (
	"fmt"
	"iter"
)

// windowBlockLen is how many entries one block of a windowList holds at
// most (about 160 KiB of entries). A new block holds as many as the list
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
// The zero value is an empty list.
type windowList struct {
	// blocks[0][head:] holds the first entries. Blocks are slices with
	// their capacity capped at their own end, so appending to one never
	// writes into the next; a block that is full, or short because it was
	// the tail of the slice windowListOf was given, takes no more.
	blocks [][]recentID
	head   int
	n      int
}

// windowListOf makes a list of entries without copying them: its blocks
// are windows onto the slice. The caller must not change entries after.
func windowListOf(entries []recentID) windowList {
	var w windowList
	for len(entries) > 0 {
		k := min(len(entries), windowBlockLen)
		w.blocks = append(w.blocks, entries[:k:k])
		entries = entries[k:]
		w.n += k
	}
	return w
}

// len is how many entries the list holds.
func (w *windowList) len() int { return w.n }

// push adds e at the tail.
func (w *windowList) push(e recentID) {
	last := len(w.blocks) - 1
	if last < 0 || len(w.blocks[last]) == cap(w.blocks[last]) {
		size := min(max(w.n, windowBlockMin), windowBlockLen)
		w.blocks = append(w.blocks, make([]recentID, 0, size))
		last++
	}
	w.blocks[last] = append(w.blocks[last], e)
	w.n++
}

// front is the oldest entry; the list must not be empty.
func (w *windowList) front() recentID {
	if w.n == 0 {
		panic("node: front of an empty window list")
	}
	return w.blocks[0][w.head]
}

// popFront drops the oldest entry and returns it; the list must not be
// empty. A block is let go once its last entry is dropped.
func (w *windowList) popFront() recentID {
	e := w.front()
	w.head++
	w.n--
	if w.head == len(w.blocks[0]) {
		w.blocks[0] = nil
		w.blocks = w.blocks[1:]
		w.head = 0
	}
	if w.n == 0 && len(w.blocks) > 0 {
		panic(fmt.Sprintf("node: empty window list keeps %d blocks", len(w.blocks)))
	}
	return e
}

// from yields the entries from the i-th (0 is the oldest) to the tail.
func (w *windowList) from(i int) iter.Seq[recentID] {
	if i < 0 || i > w.n {
		panic(fmt.Sprintf("node: window list of %d entries read from %d", w.n, i))
	}
	return func(yield func(recentID) bool) {
		skip := w.head + i
		for _, b := range w.blocks {
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			for _, e := range b[skip:] {
				if !yield(e) {
					return
				}
			}
			skip = 0
		}
	}
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
