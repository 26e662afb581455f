package event

import (
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// The readers below are what the accessors share. Each takes a key's
// first occurrence, returns the zero value when the event lacks the key,
// and accepts both the value kind the constructors emit and a string, the
// kind Parse gives back from text. Conversions live here so that no
// reader elsewhere parses an attribute's rendering.

// value returns the first attribute with key k.
func (e Event) value(k Key) (slog.Value, bool) {
	for _, a := range e.Attrs {
		if a.Key == string(k) {
			return a.Value, true
		}
	}
	return slog.Value{}, false
}

// text returns k's value as traces render it, or "".
func (e Event) text(k Key) string {
	v, ok := e.value(k)
	if !ok {
		return ""
	}
	return v.String()
}

// unsigned returns k's value as a uint64; a negative integer reads as 0.
func (e Event) unsigned(k Key) uint64 {
	v, _ := e.value(k)
	switch v.Kind() {
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindInt64:
		return uint64(max(v.Int64(), 0))
	case slog.KindString:
		n, _ := strconv.ParseUint(v.String(), 10, 64)
		return n
	}
	return 0
}

// signed returns k's value as an int64.
func (e Event) signed(k Key) int64 {
	v, _ := e.value(k)
	switch v.Kind() {
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return int64(v.Uint64())
	case slog.KindString:
		n, _ := strconv.ParseInt(v.String(), 10, 64)
		return n
	}
	return 0
}

// duration returns k's value as a duration, for attributes of slog's
// duration kind.
func (e Event) duration(k Key) time.Duration {
	v, _ := e.value(k)
	switch v.Kind() {
	case slog.KindDuration:
		return v.Duration()
	case slog.KindString:
		d, _ := time.ParseDuration(v.String())
		return d
	}
	return 0
}

// boolean returns k's value as a bool.
func (e Event) boolean(k Key) bool {
	v, _ := e.value(k)
	switch v.Kind() {
	case slog.KindBool:
		return v.Bool()
	case slog.KindString:
		b, _ := strconv.ParseBool(v.String())
		return b
	}
	return false
}

// nodeID returns k's value as a node ID, whether the event carries the
// node as a number (3) or as its name (n3).
func (e Event) nodeID(k Key) uint32 {
	v, _ := e.value(k)
	switch v.Kind() {
	case slog.KindUint64, slog.KindInt64:
		return uint32(e.unsigned(k))
	case slog.KindString:
		n, _ := strconv.ParseUint(strings.TrimPrefix(v.String(), "n"), 10, 32)
		return uint32(n)
	}
	return 0
}

// nodeList returns k's value, a comma-separated list of node numbers, as
// IDs. Parts that are not numbers are left out.
func (e Event) nodeList(k Key) []uint32 {
	var ids []uint32
	for _, part := range strings.Split(e.text(k), ",") {
		if n, err := strconv.ParseUint(part, 10, 32); err == nil {
			ids = append(ids, uint32(n))
		}
	}
	return ids
}
