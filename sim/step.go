package sim

import (
	"container/heap"
	"time"
)

// step is one thing that happens at a virtual instant. Steps fire in
// (at, seq) order; seq is the order of scheduling, so two steps at the
// same instant fire in the order they were created, and the whole run is a
// function of the seed. (A node's observations are events, package
// event; a step is the simulator's own unit of work.)
type step struct {
	at  time.Duration
	seq uint64
	// proc is the index of the process the step belongs to, or -1 for
	// steps of the world itself (faults, phase changes).
	proc int
	// inc is the process incarnation that scheduled or is targeted by the
	// step; a restarted process never sees its predecessor's steps.
	inc uint64
	fn  func()
}

// stepQueue is a min-heap of steps.
type stepQueue []*step

func (q stepQueue) Len() int { return len(q) }
func (q stepQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q stepQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *stepQueue) Push(x any)   { *q = append(*q, x.(*step)) }
func (q *stepQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func (q *stepQueue) push(e *step) { heap.Push(q, e) }
func (q *stepQueue) pop() *step   { return heap.Pop(q).(*step) }
