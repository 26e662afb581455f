// Package event is the one vocabulary of the observations a node reports:
// the event names, the attribute keys, a constructor per event and typed
// accessors that read the attributes back. The node emits events only
// through the constructors, and the simulator, the checkers, the
// production runtime and the tools read them only through the names and
// accessors here, so renaming an event or changing an attribute is a
// compile error or a failing test rather than a checker that silently
// stops seeing what it judges.
//
// Names, keys, attribute order and value kinds are part of the
// simulator's trace, and with it of every trace hash and of the checked-in
// seed corpus: changing any of them changes every recorded run.
//
// The package is deterministic like the node that uses it: it reads no
// clock, draws no randomness and touches no operating system.
package event

import (
	"log/slog"
	"strconv"
	"strings"
)

// Event is a payload-free observation a node reports: a stage timing, a
// counter, a state change. The simulator records events in its trace and
// feeds them to checkers; production logs them and derives metrics.
//
// Build events with this package's constructors, which fix each event's
// attributes, their order and their value kinds; read them with the
// typed accessors.
type Event struct {
	Name  Name
	Attrs []slog.Attr
}

// Name names a kind of event. Every name a node emits is a constant of
// this package and is listed by Names.
type Name string

// String returns the name as traces and logs print it.
func (n Name) String() string { return string(n) }

// Key names an event attribute. The keys are constants of this package;
// readers outside it use the accessors, and only code that reads events
// back from text (logs, traces) needs a key itself.
type Key string

// String returns the key as traces and logs print it.
func (k Key) String() string { return string(k) }

// String renders the event the way the simulator's trace prints it: the
// name, then each attribute as key=value, separated by single spaces.
// Values are not quoted, so the rendering is for reading, and Parse reads
// it back only as well as spaces inside values allow.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(string(e.Name))
	for _, a := range e.Attrs {
		b.WriteByte(' ')
		b.WriteString(a.String())
	}
	return b.String()
}

// Parse reads an event back from its String rendering, as tools that
// read the simulator's trace do. Every attribute comes back as a string
// value, which the accessors convert as they would the original. A word
// without '=' continues the previous value, since values such as a why
// may hold spaces; a value that itself holds " key=" cannot be told
// apart from a new attribute, and the accessors return a key's first
// occurrence.
func Parse(text string) Event {
	name, rest, _ := strings.Cut(text, " ")
	e := Event{Name: Name(name)}
	for _, w := range strings.Fields(rest) {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case ok:
			e.Attrs = append(e.Attrs, slog.String(k, v))
		case len(e.Attrs) > 0:
			last := &e.Attrs[len(e.Attrs)-1]
			last.Value = slog.StringValue(last.Value.String() + " " + w)
		}
	}
	return e
}

// The attribute constructors below keep every event's value kinds in one
// place: a kind change alters the trace, so it should be deliberate.

func str(k Key, v string) slog.Attr      { return slog.String(string(k), v) }
func u64(k Key, v uint64) slog.Attr      { return slog.Uint64(string(k), v) }
func num(k Key, v int) slog.Attr         { return slog.Int(string(k), v) }
func i64(k Key, v int64) slog.Attr       { return slog.Int64(string(k), v) }
func flag(k Key, v bool) slog.Attr       { return slog.Bool(string(k), v) }
func nodeNum(k Key, id uint32) slog.Attr { return slog.Uint64(string(k), uint64(id)) }
func nodeStr(k Key, id uint32) slog.Attr { return slog.String(string(k), NodeName(id)) }
func errStr(k Key, err error) slog.Attr  { return slog.String(string(k), errText(err)) }

// nodes renders a list of node IDs as the metadata events carry it:
// decimal numbers joined by commas.
func nodes(k Key, ids []uint32) slog.Attr {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	return slog.String(string(k), strings.Join(parts, ","))
}

// errText is an error's message, or "" for a nil error: reporting an
// event must never be what panics a node.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// NodeName renders a node ID the way node.NodeID's String does ("n3"),
// for the attributes that carry a node as text. Node IDs are passed to
// this package as their uint32 number because the node package, which
// owns the NodeID type, imports this one.
func NodeName(id uint32) string { return "n" + strconv.FormatUint(uint64(id), 10) }

// newEvent builds an event; every constructor goes through it.
func newEvent(name Name, attrs ...slog.Attr) Event { return Event{Name: name, Attrs: attrs} }
