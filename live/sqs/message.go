package sqs

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits SQS sets and the endpoint keeps.
const (
	// messageBytesMax bounds a message's body and attributes together,
	// and a whole batch.
	messageBytesMax = 256 << 10
	// attributesMax bounds a message's attributes.
	attributesMax = 10
	// batchEntriesMax bounds the entries of a batch request.
	batchEntriesMax = 10
)

// messageAttribute is one user attribute of a message, as both
// protocols carry it.
type messageAttribute struct {
	DataType    string  `json:"DataType"`
	StringValue *string `json:"StringValue,omitempty"`
	BinaryValue []byte  `json:"BinaryValue,omitempty"`
}

// isBinary reports whether the attribute travels as bytes: its data type
// is Binary or a custom Binary type.
func (a messageAttribute) isBinary() bool { return baseType(a.DataType) == "Binary" }

// baseType is the data type without its custom suffix ("Number.int" is
// a Number).
func baseType(t string) string {
	base, _, _ := strings.Cut(t, ".")
	return base
}

// envelope is what the endpoint stores as a cairn message's payload: the
// body and what SQS keeps beside it. A payload that does not start with
// envelopeMagic was published by another cairn client, and its whole
// payload is the body.
type envelope struct {
	Body       string
	Attributes map[string]messageAttribute
	SentMillis int64
	SenderID   string
}

// envelopeMagic opens an encoded envelope. SQS bodies may not contain
// the NUL character, so no body sent through the endpoint starts with
// it.
var envelopeMagic = []byte("\x00cairn-sqs\x01")

// encode serialises the envelope: the magic, then length-prefixed
// fields, attributes sorted by name.
func (e envelope) encode() []byte {
	b := slices.Clone(envelopeMagic)
	b = binary.AppendUvarint(b, uint64(e.SentMillis))
	b = appendString(b, e.SenderID)
	b = appendString(b, e.Body)
	b = binary.AppendUvarint(b, uint64(len(e.Attributes)))
	for _, name := range sortedNames(e.Attributes) {
		a := e.Attributes[name]
		b = appendString(b, name)
		b = appendString(b, a.DataType)
		if a.isBinary() {
			b = appendString(b, string(a.BinaryValue))
		} else {
			b = appendString(b, deref(a.StringValue))
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeEnvelope reads a stored payload. A payload without the magic, or
// one that does not parse, is a foreign message: its bytes are the body.
func decodeEnvelope(payload []byte) envelope {
	rest, ok := bytes.CutPrefix(payload, envelopeMagic)
	if !ok {
		return envelope{Body: string(payload)}
	}
	r := envelopeReader{b: rest}
	e := envelope{SentMillis: int64(r.uvarint()), SenderID: r.string(), Body: r.string()}
	n := r.uvarint()
	if n > attributesMax {
		r.bad = true
	}
	for i := uint64(0); i < n && !r.bad; i++ {
		name, typ, value := r.string(), r.string(), r.string()
		a := messageAttribute{DataType: typ}
		if a.isBinary() {
			a.BinaryValue = []byte(value)
		} else {
			a.StringValue = &value
		}
		if e.Attributes == nil {
			e.Attributes = map[string]messageAttribute{}
		}
		e.Attributes[name] = a
	}
	if r.bad || len(r.b) > 0 {
		return envelope{Body: string(payload)}
	}
	return e
}

// envelopeReader reads length-prefixed fields, remembering whether any
// was truncated.
type envelopeReader struct {
	b   []byte
	bad bool
}

func (r *envelopeReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *envelopeReader) string() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// md5Hex is the hex MD5 digest SQS returns of a body.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// attributesMD5 is the digest SQS computes over message attributes, and
// SDKs check: for each attribute in name order, the name, the data type
// and the value, each preceded by its 4-byte big-endian length, with a
// transport byte (1 string, 2 binary) before the value. Empty when there
// are none.
func attributesMD5(attrs map[string]messageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	h := md5.New()
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range sortedNames(attrs) {
		a := attrs[name]
		field([]byte(name))
		field([]byte(a.DataType))
		if a.isBinary() {
			h.Write([]byte{2})
			field(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(deref(a.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkBody refuses a body SQS would refuse: empty, or holding characters
// outside those XML 1.0 allows.
func checkBody(body string) *apiError {
	if body == "" {
		return errMissingParameter("MessageBody")
	}
	for i, r := range body {
		ok := r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
		if !ok || r == utf8.RuneError && !strings.HasPrefix(body[i:], "\uFFFD") {
			return errInvalidMessage("Invalid binary character #x%X was found in the message body at byte %d; "+
				"SQS bodies may hold only the characters XML 1.0 allows.", r, i)
		}
	}
	return nil
}

// checkAttributes validates user message attributes and returns their
// size as SQS counts it toward the message limit.
func checkAttributes(attrs map[string]messageAttribute) (int, *apiError) {
	if len(attrs) > attributesMax {
		return 0, errInvalidParameter("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), attributesMax)
	}
	size := 0
	for _, name := range sortedNames(attrs) {
		a := attrs[name]
		if err := checkAttributeName(name); err != nil {
			return 0, err
		}
		switch baseType(a.DataType) {
		case "String", "Number":
			if a.StringValue == nil || *a.StringValue == "" {
				return 0, errInvalidParameter("Message attribute '%s' must contain a non-empty value of type '%s'.", name, a.DataType)
			}
			size += len(*a.StringValue)
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return 0, errInvalidParameter("Message attribute '%s' must contain a non-empty value of type 'Binary'.", name)
			}
			size += len(a.BinaryValue)
		default:
			return 0, errInvalidParameter("The type of message (user) attribute '%s' is invalid: %q is not String, Number or Binary "+
				"(optionally with a custom suffix such as Number.int).", name, a.DataType)
		}
		size += len(name) + len(a.DataType)
	}
	return size, nil
}

// checkAttributeName applies SQS's rules for attribute names.
func checkAttributeName(name string) *apiError {
	lower := strings.ToLower(name)
	switch {
	case name == "" || len(name) > 256:
		return errInvalidParameter("Message attribute name '%s' must be 1 to 256 characters long.", name)
	case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
		return errInvalidParameter("Message attribute name '%s' is reserved (it starts with AWS. or Amazon.).", name)
	case strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, ".."):
		return errInvalidParameter("Message attribute name '%s' may not start or end with a period or hold two in a row.", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return errInvalidParameter("Message attribute name '%s' may hold only letters, digits, '_', '-' and '.'.", name)
		}
	}
	return nil
}

// messageIDString renders a cairn message ID in the UUID form SQS uses:
// the producer's 8 bytes then the sequence number's, in hex.
func messageIDString(id MessageID) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], id.Producer)
	binary.BigEndian.PutUint64(b[8:], id.Seq)
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
