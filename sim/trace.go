package sim

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"time"
)

// Trace records every event of a run as one line of text and hashes the
// lines as they go. Two runs of the same scenario produce the same lines
// and so the same hash; the hash is how determinism is checked.
type Trace struct {
	hash  hash.Hash64
	out   io.Writer // nil unless the caller wants the text
	lines int
	buf   []byte
}

func newTrace(out io.Writer) *Trace { return &Trace{hash: fnv.New64a(), out: out} }

// line records one trace line: the virtual time, who, and what.
func (t *Trace) line(now time.Duration, who string, format string, args ...any) {
	b := t.buf[:0]
	b = fmt.Appendf(b, "%12.6f %-4s ", now.Seconds(), who)
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	t.hash.Write(b)
	if t.out != nil {
		t.out.Write(b)
	}
	t.lines++
	t.buf = b
}

// Hash is the 64-bit FNV-1a hash of every line so far.
func (t *Trace) Hash() uint64 { return t.hash.Sum64() }

// Lines is the number of lines recorded.
func (t *Trace) Lines() int { return t.lines }
