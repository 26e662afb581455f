// Package fifoheap is a priority queue for entries that nearly all arrive
// in the order they are to leave in: a queue's ready messages (each made
// ready with a key above every key before it) and a client's wake times
// (each attempt waiting the same timeout as the one before). Those append
// to a slice already in order and leave from its head, in constant time;
// the few that arrive out of order (a message put back, a backoff) wait
// in a heap. The first entry is the earlier of the two heads. With one
// heap of all of them, every entry sifted through its whole depth on the
// way out: an eighth of a draining owner's CPU at a 200,000-message
// backlog.
//
// The queue is deterministic: which entry comes first depends only on
// the entries and Before, never on how they are split between the slice
// and the heap, provided Before orders them strictly (no two entries
// equal).
package fifoheap

import (
	"container/heap"
	"iter"
)

// Ordered is an entry type that knows which of two entries leaves first.
type Ordered[T any] interface {
	// Before reports whether the receiver leaves before other.
	Before(other T) bool
}

// Queue holds entries in Before order. Its zero value is empty and ready.
type Queue[T Ordered[T]] struct {
	fresh []T // fresh[head:] in Before order
	head  int
	back  entryHeap[T]
}

// headSlack is how many taken entries fresh keeps ahead of its head
// before it moves the rest down: at least this many, and at least as many
// as it still holds, so an entry is moved at most once on average.
const headSlack = 1024

// Len is how many entries the queue holds.
func (q *Queue[T]) Len() int { return len(q.fresh) - q.head + len(q.back) }

// Push adds x.
func (q *Queue[T]) Push(x T) {
	if n := len(q.fresh); n == q.head || q.fresh[n-1].Before(x) {
		q.fresh = append(q.fresh, x)
		return
	}
	heap.Push(&q.back, x)
}

// First returns the entry that leaves first; ok is false when the queue
// is empty.
func (q *Queue[T]) First() (x T, ok bool) {
	x, _, ok = q.first()
	return x, ok
}

func (q *Queue[T]) first() (x T, inFresh, ok bool) {
	hasFresh, hasBack := q.head < len(q.fresh), len(q.back) > 0
	switch {
	case hasFresh && (!hasBack || q.fresh[q.head].Before(q.back[0])):
		return q.fresh[q.head], true, true
	case hasBack:
		return q.back[0], false, true
	}
	return x, false, false
}

// Pop removes the entry First returns, if any.
func (q *Queue[T]) Pop() {
	_, inFresh, ok := q.first()
	switch {
	case !ok:
		return
	case !inFresh:
		heap.Pop(&q.back)
		return
	}
	var zero T
	q.fresh[q.head] = zero
	q.head++
	if q.head == len(q.fresh) {
		q.fresh, q.head = q.fresh[:0], 0
	} else if q.head >= headSlack && 2*q.head >= len(q.fresh) {
		n := copy(q.fresh, q.fresh[q.head:])
		clear(q.fresh[n:])
		q.fresh, q.head = q.fresh[:n], 0
	}
}

// Filter drops every entry keep refuses.
func (q *Queue[T]) Filter(keep func(T) bool) {
	live := q.fresh[:0]
	for _, x := range q.fresh[q.head:] {
		if keep(x) {
			live = append(live, x)
		}
	}
	clear(q.fresh[len(live):])
	q.fresh, q.head = live, 0
	back := q.back[:0]
	for _, x := range q.back {
		if keep(x) {
			back = append(back, x)
		}
	}
	clear(q.back[len(back):])
	q.back = back
	heap.Init(&q.back)
}

// All yields every entry, in no particular order.
func (q *Queue[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, x := range q.fresh[q.head:] {
			if !yield(x) {
				return
			}
		}
		for _, x := range q.back {
			if !yield(x) {
				return
			}
		}
	}
}

// InOrder reports whether the slice part is still in Before order, the
// one property Push and Filter must keep for First to be right; callers
// assert it where they pay a pass over the entries anyway.
func (q *Queue[T]) InOrder() bool {
	for i := q.head + 1; i < len(q.fresh); i++ {
		if !q.fresh[i-1].Before(q.fresh[i]) {
			return false
		}
	}
	return true
}

// entryHeap is a min-heap of entries in Before order.
type entryHeap[T Ordered[T]] []T

func (h entryHeap[T]) Len() int           { return len(h) }
func (h entryHeap[T]) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h entryHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap[T]) Push(x any)        { *h = append(*h, x.(T)) }
func (h *entryHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	return x
}
