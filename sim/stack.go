package sim

import (
	"bytes"
	"runtime/debug"
)

// panicStack returns the current goroutine's stack, trimmed to the frames
// below the simulator's own recovery, for a node-panic report.
func panicStack() string {
	st := debug.Stack()
	if i := bytes.Index(st, []byte("panic(")); i >= 0 {
		st = st[i:]
	}
	if len(st) > 3000 {
		st = st[:3000]
	}
	return string(st)
}
