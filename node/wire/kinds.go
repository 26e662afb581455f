package wire

import (
	"fmt"
	"strings"
)

// Message kinds. Numbers are stable on the wire: append new kinds, never
// renumber or reuse one.
const (
	KindInvalid       Kind = 0
	KindCounterAppend Kind = 10
	KindCounterAck    Kind = 11
	KindCounterProbe  Kind = 12
)

var kindNames = map[Kind]string{
	KindCounterAppend: "CounterAppend",
	KindCounterAck:    "CounterAck",
	KindCounterProbe:  "CounterProbe",
}

// String names the kind for traces and logs.
func (k Kind) String() string {
	if name, ok := kindNames[k]; ok {
		return name
	}
	return fmt.Sprintf("Kind(%d)", uint16(k))
}

// decodeBody dispatches on kind. One case per message type keeps the set of
// decodable messages explicit and greppable.
func decodeBody(kind Kind, d *Decoder) (Message, error) {
	switch kind {
	case KindCounterAppend:
		return decodeCounterAppend(d), nil
	case KindCounterAck:
		return decodeCounterAck(d), nil
	case KindCounterProbe:
		return decodeCounterProbe(d), nil
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, uint16(kind))
	}
}

// Describe renders a message for a trace line: its kind and fields, never
// a payload (messages that carry payloads print only their sizes).
func Describe(m Message) string {
	if s, ok := m.(fmt.Stringer); ok {
		return m.Kind().String() + s.String()
	}
	return m.Kind().String() + strings.TrimPrefix(fmt.Sprintf("%+v", m), "&")
}
