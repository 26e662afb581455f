// Package session opens cairn connections: it reads wire frames from
// a byte stream without ever allocating more than a caller-chosen bound,
// and it runs the handshake that must succeed before a node accepts any
// wire frame from a peer or a client.
//
// The handshake exchanges roles (peer, client or admin), node identities
// and fresh nonces. When the cluster runs without TLS, each side also
// proves that it knows the secret of the initiator's role with an
// HMAC-SHA256 over the whole exchange, so a secret admits only its own
// role, and neither side can be impersonated by someone who merely
// replays an old conversation. When mutual TLS is on, the certificates
// authenticate both sides and the handshake only names them.
//
// The package depends on nothing but wire and the standard library,
// so the public Go client can use it without pulling in the server.
package session

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// Errors that describe why a stream stopped yielding frames. They are
// distinct so the caller can log a precise reason when it closes a
// connection.
var (
	// ErrTruncated means the stream ended in the middle of a frame.
	ErrTruncated = errors.New("session: stream ended inside a frame")
	// ErrFrameTooLarge means a header announced a body above the
	// caller's limit. Nothing was allocated for it.
	ErrFrameTooLarge = errors.New("session: frame body exceeds the limit for this connection")
)

// ReadFrame reads one complete wire frame from r. It reads the fixed
// header first and checks version and length before allocating anything,
// so a hostile header cannot make it allocate more than limit body bytes
// (and never more than wire.MaxBodySize). A stream that ends cleanly
// between frames yields io.EOF; one that ends inside a frame yields
// ErrTruncated.
func ReadFrame(r *bufio.Reader, limit int) ([]byte, error) {
	return ReadFrameInto(r, limit, nil)
}

// ReadFrameInto is ReadFrame reading into buf's memory when the frame
// fits its capacity, so a reader that decodes each frame before it reads
// the next (wire.Decode never aliases the frame) allocates nothing per
// frame. The frame returned is valid until buf's memory is used again.
func ReadFrameInto(r *bufio.Reader, limit int, buf []byte) ([]byte, error) {
	var header [wire.HeaderSize]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: header", ErrTruncated)
		}
		return nil, err
	}
	n, err := wire.FrameLength(header[:])
	if err != nil {
		return nil, err
	}
	if body := n - wire.HeaderSize; body > limit {
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, body, limit)
	}
	var frame []byte
	if n <= cap(buf) {
		frame = buf[:n]
		copy(frame, header[:])
		_, err = io.ReadFull(r, frame[wire.HeaderSize:])
	} else {
		frame, err = readBody(r, header[:], n)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: body of %d bytes", ErrTruncated, n-wire.HeaderSize)
	}
	return frame, err
}

// NextScratch returns the buffer to read the next frame into, once frame,
// read by ReadFrameInto into scratch, is decoded: frame's own memory when
// it was too large for scratch but not for max. So a reader's buffer grows
// to the largest frame it has carried, up to max, and a connection that
// carries only small frames keeps a small one.
func NextScratch(scratch, frame []byte, max int) []byte {
	if cap(frame) > cap(scratch) && cap(frame) <= max {
		return frame[:cap(frame)]
	}
	return scratch
}

// FrameBuffered reports whether r's buffer already holds the whole next
// frame, so that ReadFrame returns it without waiting on the stream. A
// reader may hand frames over in batches while this holds, and hand over
// what it has before it reads a frame that has not fully arrived. A
// malformed header counts as buffered: ReadFrame reports it at once.
func FrameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < wire.HeaderSize {
		return false
	}
	header, err := r.Peek(wire.HeaderSize)
	if err != nil {
		return false
	}
	n, err := wire.FrameLength(header)
	return err != nil || r.Buffered() >= n
}

// firstChunk is the most ReadFrame allocates for a frame before any of
// its body has arrived.
const firstChunk = 64 << 10

// readBody reads the rest of an n-byte frame whose header is read. The
// frame's memory grows with the bytes that actually arrive, doubling from
// firstChunk, so a header that announces a large body, followed by
// silence, costs its sender's connection little.
func readBody(r io.Reader, header []byte, n int) ([]byte, error) {
	frame := make([]byte, min(n, firstChunk))
	copy(frame, header)
	got := len(header)
	for {
		if _, err := io.ReadFull(r, frame[got:]); err != nil {
			return nil, err
		}
		got = len(frame)
		if got == n {
			return frame, nil
		}
		more := min(n, 2*got) - got
		frame = slices.Grow(frame, more)[:got+more]
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openFrame checks a handshake frame's checksum and returns its kind and
// body. wire.Decode knows only the node's own message kinds, so the
// handshake checks its frames here, with the same layout wire uses: a
// CRC32C over the first seven header bytes and the body.
func openFrame(frame []byte) (wire.Kind, []byte, error) {
	n, err := wire.FrameLength(frame)
	if err != nil {
		return 0, nil, err
	}
	if n != len(frame) {
		return 0, nil, fmt.Errorf("%w: header says %d, have %d", wire.ErrLengthInvalid, n, len(frame))
	}
	crc := crc32.Update(0, castagnoli, frame[0:7])
	crc = crc32.Update(crc, castagnoli, frame[wire.HeaderSize:])
	if crc != binary.LittleEndian.Uint32(frame[7:11]) {
		return 0, nil, wire.ErrChecksum
	}
	return wire.Kind(binary.LittleEndian.Uint16(frame[1:3])), frame[wire.HeaderSize:], nil
}
