package sim

import (
	"container/heap"
	"time"
)

// event is one thing that happens at a virtual instant. Events fire in
// (at, seq) order; seq is the order of scheduling, so two events at the
// same instant fire in the order they were created, and the whole run is a
// function of the seed.
type event struct {
	at  time.Duration
	seq uint64
	// proc is the index of the process the event belongs to, or -1 for
	// events of the world itself (faults, phase changes).
	proc int
	// inc is the process incarnation that scheduled or is targeted by the
	// event; a restarted process never sees its predecessor's events.
	inc uint64
	fn  func()
}

// eventQueue is a min-heap of events.
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func (q *eventQueue) push(e *event) { heap.Push(q, e) }
func (q *eventQueue) pop() *event   { return heap.Pop(q).(*event) }
