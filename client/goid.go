package client

import (
	"bytes"
	"runtime"
	"strconv"
)

// goroutineID returns the calling goroutine's ID, read from the first
// line of its stack ("goroutine 42 [running]:"), or 0 if that line ever
// reads otherwise. Go keeps goroutine identity private on purpose; the
// client needs it in one place only, for Subscription.Stop to tell
// whether the handler called it, and a 0 merely makes Stop wait as a
// call from outside the handler would.
func goroutineID() uint64 {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line, ok := bytes.CutPrefix(line, []byte("goroutine "))
	if !ok {
		return 0
	}
	digits, _, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return 0
	}
	id, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
