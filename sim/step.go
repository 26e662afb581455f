package sim

import "time"

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

// before reports whether a fires before b.
func (a *step) before(b *step) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// stepQueue is a min-heap of steps, four children to a node, holding the
// steps themselves rather than pointers. A run pushes and pops tens of
// millions of steps: container/heap's interface calls and a heap object
// per step were a tenth of the simulator's time.
type stepQueue []step

// stepArity is the heap's fan-out. Four children share a cache line or
// two, and the tree is half as deep as a binary one.
const stepArity = 4

func (q stepQueue) Len() int { return len(q) }

// push adds s, sifting a hole up from the end to where s belongs.
func (q *stepQueue) push(s step) {
	*q = append(*q, s)
	h := *q
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / stepArity
		if !s.before(&h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = s
}

// pop removes and returns the step that fires first.
func (q *stepQueue) pop() step {
	h := *q
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h[n] = step{} // let the closure go
	h = h[:n]
	*q = h
	if n == 0 {
		return top
	}
	// Sift a hole down from the root to where the last step belongs.
	i := 0
	for {
		first := i*stepArity + 1
		if first >= n {
			break
		}
		least := first
		for c := first + 1; c < min(first+stepArity, n); c++ {
			if h[c].before(&h[least]) {
				least = c
			}
		}
		if !h[least].before(&last) {
			break
		}
		h[i] = h[least]
		i = least
	}
	h[i] = last
	return top
}
