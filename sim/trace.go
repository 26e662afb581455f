package sim

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
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
	b := appendPrefix(t.buf[:0], now, who)
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	t.hash.Write(b)
	if t.out != nil {
		t.out.Write(b)
	}
	t.lines++
	t.buf = b
}

// appendPrefix appends what fmt's "%12.6f %-4s " makes of the virtual
// time in seconds and who, byte for byte, without fmt's reflection: every
// trace line starts with it, and the simulator writes millions of lines.
func appendPrefix(b []byte, now time.Duration, who string) []byte {
	var num [32]byte
	digits := strconv.AppendFloat(num[:0], now.Seconds(), 'f', 6, 64)
	for range 12 - len(digits) {
		b = append(b, ' ')
	}
	b = append(b, digits...)
	b = append(b, ' ')
	b = append(b, who...)
	for range 4 - utf8.RuneCountInString(who) {
		b = append(b, ' ')
	}
	return append(b, ' ')
}

// Hash is the 64-bit FNV-1a hash of every line so far.
func (t *Trace) Hash() uint64 { return t.hash.Sum64() }

// Lines is the number of lines recorded.
func (t *Trace) Lines() int { return t.lines }
