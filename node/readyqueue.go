package node

import (
	"container/heap"
	"fmt"
)

// readyQueue holds a queue's ready messages in readyKey order. Nearly
// every message becomes ready with a key above every key before it: a
// publish's or a promote's key starts with the index of the record being
// applied, and indexes only grow. Those go to the back of fresh, a slice
// already in key order, so taking the first ready message is a look at
// its head. Only a message put back (a nack, an expired lease, a lost
// subscriber) keeps a key below the last one, and those wait in a heap,
// back. The first ready message is the smaller of the two heads. With
// one heap of the whole backlog, each delivery sifted through some
// eighteen levels of a 200,000-message heap, an eighth of a draining
// owner's CPU.
//
// Entries whose message left the queue (settled, leased, dead-lettered)
// stay until they reach a head or compact drops them: their message's
// inHeap is false.
type readyQueue struct {
	fresh []*message // fresh[head:] in ascending key order
	head  int
	back  readyHeap
}

// freshHeadSlack is how many taken entries fresh keeps ahead of its head
// before it moves its entries down: at least this many, and at least as
// many as it still holds, so each entry is moved at most once on average.
const freshHeadSlack = 1024

// len is how many entries the queue holds, live or not.
func (q *readyQueue) len() int { return len(q.fresh) - q.head + len(q.back) }

// push adds m, ready with key m.key, which no other entry has.
func (q *readyQueue) push(m *message) {
	if n := len(q.fresh); n == q.head || q.fresh[n-1].key.less(m.key) {
		q.fresh = append(q.fresh, m)
		return
	}
	heap.Push(&q.back, m)
}

// first returns the entry with the smallest key, live or not, and whether
// it sits in fresh; nil when the queue is empty.
func (q *readyQueue) first() (*message, bool) {
	var f, b *message
	if q.head < len(q.fresh) {
		f = q.fresh[q.head]
	}
	if len(q.back) > 0 {
		b = q.back[0]
	}
	switch {
	case f == nil:
		return b, false
	case b == nil || f.key.less(b.key):
		return f, true
	default:
		return b, false
	}
}

// pop removes the entry first returned.
func (q *readyQueue) pop() {
	if _, inFresh := q.first(); !inFresh {
		heap.Pop(&q.back)
		return
	}
	q.fresh[q.head] = nil
	q.head++
	if q.head == len(q.fresh) {
		q.fresh, q.head = q.fresh[:0], 0
		return
	}
	if q.head >= freshHeadSlack && 2*q.head >= len(q.fresh) {
		n := copy(q.fresh, q.fresh[q.head:])
		clear(q.fresh[n:])
		q.fresh, q.head = q.fresh[:n], 0
	}
}

// compact drops every entry keep refuses, keeping the order of the rest.
func (q *readyQueue) compact(keep func(*message) bool) {
	live := q.fresh[:0]
	for _, m := range q.fresh[q.head:] {
		if keep(m) {
			live = append(live, m)
		}
	}
	clear(q.fresh[len(live):])
	q.fresh, q.head = live, 0
	back := q.back[:0]
	for _, m := range q.back {
		if keep(m) {
			back = append(back, m)
		}
	}
	clear(q.back[len(back):])
	q.back = back
	heap.Init(&q.back)
}

// copyMapped returns a queue holding, for each entry live keeps, the
// message to maps it to, in the same order: a state's copy maps each
// message to its own copy of it.
func (q *readyQueue) copyMapped(live func(*message) bool, to func(*message) *message) readyQueue {
	c := readyQueue{fresh: make([]*message, 0, len(q.fresh)-q.head)}
	for _, m := range q.fresh[q.head:] {
		if live(m) {
			c.fresh = append(c.fresh, to(m))
		}
	}
	for _, m := range q.back {
		if live(m) {
			c.back = append(c.back, to(m))
		}
	}
	heap.Init(&c.back)
	return c
}

// checkOrder panics unless fresh is in ascending key order: the one
// property push and compact must keep for first to be right.
func (q *readyQueue) checkOrder(queue string) {
	for i := q.head + 1; i < len(q.fresh); i++ {
		if !q.fresh[i-1].key.less(q.fresh[i].key) {
			panic(fmt.Sprintf("node: queue %s ready entries %d and %d out of key order", queue, i-1, i))
		}
	}
}

// readyHeap is a min-heap of messages by readyKey.
type readyHeap []*message

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].key.less(h[j].key) }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)        { *h = append(*h, x.(*message)) }
func (h *readyHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return m
}
