package sim

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
	"github.com/cespare/xxhash/v2"
)

// Trace records every event of a run as one line and hashes the lines as
// they go. Two runs of the same scenario produce the same lines and so
// the same hash; the hash is how determinism is checked.
//
// The hash covers each line's parts (virtual time, who, the format and
// every argument) rather than its text, so a run nobody reads is never
// formatted: formatting was a sixth of the simulator's time. The text is
// a function of those parts, so the hash is as strict as one over the
// text, and it is the same whether or not the text is written.
type Trace struct {
	hash  *xxhash.Digest
	out   io.Writer // nil unless the caller wants the text
	lines int
	buf   []byte // the text of the last line written
	parts []byte // the parts of the line being hashed
}

func newTrace(out io.Writer) *Trace { return &Trace{hash: xxhash.New(), out: out} }

// line records one trace line: the virtual time, who, and what.
func (t *Trace) line(now time.Duration, who string, format string, args ...any) {
	// The parts gather in one buffer, hashed at once: many small writes
	// to the digest cost more than the copying.
	t.parts = t.parts[:0]
	t.word(uint64(now))
	t.text(who)
	t.text(format)
	for _, a := range args {
		t.arg(a)
	}
	t.hash.Write(t.parts)
	t.lines++
	if t.out == nil {
		return
	}
	b := appendPrefix(t.buf[:0], now, who)
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	t.out.Write(b)
	t.buf = b
}

// Argument tags keep the parts of a line apart in the hash, so that, say,
// the strings "ab" and "c" never hash as "a" and "bc".
const (
	tagWord byte = iota + 1
	tagText
	tagOther
)

func (t *Trace) word(v uint64) {
	t.parts = binary.LittleEndian.AppendUint64(append(t.parts, tagWord), v)
}

func (t *Trace) text(s string) {
	t.parts = binary.LittleEndian.AppendUint64(append(t.parts, tagText), uint64(len(s)))
	t.parts = append(t.parts, s...)
}

// arg hashes one argument by what it is: numbers and strings as such, a
// message frame by its bytes, an event by its name and attributes, and
// anything else by its formatted text.
func (t *Trace) arg(a any) {
	switch v := a.(type) {
	case string:
		t.text(v)
	case frameText:
		t.bytes(v)
	case event.Event:
		t.event(v)
	case error:
		t.text(v.Error())
	case nil:
		t.text("<nil>")
	default:
		switch rv := reflect.ValueOf(a); rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			t.word(uint64(rv.Int()))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			t.word(rv.Uint())
		case reflect.Bool:
			t.flag(rv.Bool())
		case reflect.String:
			t.text(rv.String())
		default:
			t.other(a)
		}
	}
}

// event hashes a node event's name and attributes.
func (t *Trace) event(e event.Event) {
	t.text(string(e.Name))
	for _, at := range e.Attrs {
		t.text(at.Key)
		switch v := at.Value; v.Kind() {
		case slog.KindString:
			t.text(v.String())
		case slog.KindInt64:
			t.word(uint64(v.Int64()))
		case slog.KindUint64:
			t.word(v.Uint64())
		case slog.KindDuration:
			t.word(uint64(v.Duration()))
		case slog.KindBool:
			t.flag(v.Bool())
		default:
			t.text(v.String())
		}
	}
}

func (t *Trace) bytes(b []byte) {
	t.parts = binary.LittleEndian.AppendUint64(append(t.parts, tagText), uint64(len(b)))
	t.parts = append(t.parts, b...)
}

func (t *Trace) flag(b bool) {
	if b {
		t.word(1)
	} else {
		t.word(0)
	}
}

func (t *Trace) other(a any) {
	t.parts = fmt.Appendf(append(t.parts, tagOther), "%v", a)
}

// frameText is a message in a trace line, as the frame that carries it.
// The hash covers the frame's bytes, which say everything the message
// does; the text, written only when someone reads the trace, describes
// the message decoded again from the frame.
type frameText []byte

// String describes the framed message as wire.Describe does.
func (f frameText) String() string {
	m, err := wire.Decode(f)
	if err != nil {
		return fmt.Sprintf("<undecodable frame: %v>", err)
	}
	return wire.Describe(m)
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

// Hash is the 64-bit xxHash of every line's parts so far.
func (t *Trace) Hash() uint64 { return t.hash.Sum64() }

// Lines is the number of lines recorded.
func (t *Trace) Lines() int { return t.lines }
