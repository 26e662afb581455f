package storage

import "fmt"

// FileGate bounds how many state file writes run at once on one node.
// Each holds two descriptors for a moment (the temporary file, then its
// directory), and a node that fails over thousands of queues at once
// writes thousands of epoch files together: on top of one open segment
// per queue, that ran a node with 10,000 queues out of descriptors, and
// it halted. Writes past the bound wait their turn, first come first
// served; the gate never reorders the writes of one file.
type FileGate struct {
	free    int
	waiting []func()
}

// DefaultFileGate is how many state file writes a node runs at once: far
// more than a disk syncs in parallel, far fewer than a process may open.
const DefaultFileGate = 256

// NewFileGate returns a gate that lets n writes run at once.
func NewFileGate(n int) *FileGate {
	if n <= 0 {
		panic(fmt.Sprintf("storage: file gate of %d", n))
	}
	return &FileGate{free: n}
}

// GatedHost is a Host whose state files share a FileGate.
type GatedHost interface {
	Host
	FileGate() *FileGate
}

// enter runs fn now if a write may start, or once one finishes.
func (g *FileGate) enter(fn func()) {
	if g.free > 0 {
		g.free--
		fn()
		return
	}
	g.waiting = append(g.waiting, fn)
}

// leave ends a write, and starts the longest-waiting one in its place.
func (g *FileGate) leave() {
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	next := g.waiting[0]
	g.waiting[0] = nil
	g.waiting = g.waiting[1:]
	next()
}

// Waiting reports how many writes wait for their turn.
func (g *FileGate) Waiting() int { return len(g.waiting) }
