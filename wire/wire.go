// Package wire is cairn's one message codec. Every frame exchanged between
// nodes, and between clients and nodes, is encoded here: a fixed header that
// names the protocol version, the message kind and the body length, a CRC32C
// over header and body, then the body itself.
//
// The simulator encodes and decodes every message in flight, so no Go
// pointer is ever shared between two simulated nodes, and the production
// transport uses the same functions on TCP streams.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Version is the protocol version written into every frame. A decoder
// refuses frames of any other version rather than guessing at their layout.
const Version = 1

// HeaderSize is the number of bytes in a frame header:
// version (1), kind (2), body length (4), CRC32C (4).
const HeaderSize = 11

// MaxBodySize bounds a frame body. A record page or a published payload
// (up to 1 MiB) plus its envelope fits well within it; anything larger is
// refused before a buffer is allocated for it.
const MaxBodySize = 20 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind identifies a message type on the wire. Kinds are never reused: a
// retired kind keeps its number so old frames cannot be misread.
type Kind uint16

// Message is anything that can travel in a frame.
type Message interface {
	// Kind names the message type.
	Kind() Kind
	// AppendBody appends the encoded body to b and returns the result.
	AppendBody(b []byte) []byte
}

// bodySizer is a message whose body can be large; bodySizeMax bounds its
// encoded size from above (a few bytes of slack are harmless).
type bodySizer interface {
	bodySizeMax() int
}

// Errors returned by the decoder. They are distinct so a transport can log
// a precise reason when it closes a connection over bad input.
var (
	ErrShortFrame    = errors.New("wire: frame shorter than its header")
	ErrBadVersion    = errors.New("wire: unsupported protocol version")
	ErrTooLarge      = errors.New("wire: frame body exceeds the size limit")
	ErrLengthInvalid = errors.New("wire: frame length does not match its header")
	ErrChecksum      = errors.New("wire: frame checksum mismatch")
	ErrUnknownKind   = errors.New("wire: unknown message kind")
	ErrTruncatedBody = errors.New("wire: message body ends early")
	ErrTrailingBytes = errors.New("wire: message body has trailing bytes")
)

// Encode appends a complete frame for m to b.
func Encode(b []byte, m Message) []byte {
	if s, ok := m.(bodySizer); ok {
		// A message that carries payloads says how large its body will
		// be, so the frame grows once rather than doubling its way up
		// through the payload.
		b = slices.Grow(b, HeaderSize+s.bodySizeMax())
	}
	start := len(b)
	b = append(b, Version, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = m.AppendBody(b)
	bodyLen := len(b) - start - HeaderSize
	if bodyLen > MaxBodySize {
		panic(fmt.Sprintf("wire: encoding %T: body of %d bytes exceeds MaxBodySize", m, bodyLen))
	}
	h := b[start : start+HeaderSize]
	binary.LittleEndian.PutUint16(h[1:3], uint16(m.Kind()))
	binary.LittleEndian.PutUint32(h[3:7], uint32(bodyLen))
	crc := crc32.Update(0, castagnoli, h[0:7])
	crc = crc32.Update(crc, castagnoli, b[start+HeaderSize:])
	binary.LittleEndian.PutUint32(h[7:11], crc)
	return b
}

// FrameLength reports the total length of the frame that starts with the
// given header bytes, so a stream reader knows how much more to read. It
// validates the version and the size limit before anything is allocated.
func FrameLength(header []byte) (int, error) {
	if len(header) < HeaderSize {
		return 0, ErrShortFrame
	}
	if header[0] != Version {
		return 0, fmt.Errorf("%w: %d", ErrBadVersion, header[0])
	}
	n := binary.LittleEndian.Uint32(header[3:7])
	if n > MaxBodySize {
		return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	return HeaderSize + int(n), nil
}

// Decode parses exactly one frame. The returned message owns its memory:
// it never aliases frame.
func Decode(frame []byte) (Message, error) {
	n, err := FrameLength(frame)
	if err != nil {
		return nil, err
	}
	if n != len(frame) {
		return nil, fmt.Errorf("%w: header says %d, have %d", ErrLengthInvalid, n, len(frame))
	}
	crc := crc32.Update(0, castagnoli, frame[0:7])
	crc = crc32.Update(crc, castagnoli, frame[HeaderSize:])
	if crc != binary.LittleEndian.Uint32(frame[7:11]) {
		return nil, ErrChecksum
	}
	kind := Kind(binary.LittleEndian.Uint16(frame[1:3]))
	d := Decoder{buf: frame[HeaderSize:]}
	m, err := decodeBody(kind, &d)
	if err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, fmt.Errorf("decoding kind %d: %w", kind, d.err)
	}
	if len(d.buf) != 0 {
		return nil, fmt.Errorf("decoding kind %d: %w (%d)", kind, ErrTrailingBytes, len(d.buf))
	}
	return m, nil
}
