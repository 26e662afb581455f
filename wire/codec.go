package wire

import (
	"encoding/binary"
	"fmt"
)

// Decoder reads primitive fields from a message body. The first error is
// sticky: later reads return zero values, and Decode reports the error once
// the message is assembled, so message decoders stay short and linear.
type Decoder struct {
	buf []byte
	err error
}

func (d *Decoder) fail(what string, need int) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s needs %d bytes, %d left", ErrTruncatedBody, what, need, len(d.buf))
	}
	d.buf = nil
}

func (d *Decoder) take(what string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.buf) < n {
		d.fail(what, n)
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// Uint8 reads one byte.
func (d *Decoder) Uint8() uint8 {
	b := d.take("uint8", 1)
	if b == nil {
		return 0
	}
	return b[0]
}

// Bool reads one byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	v := d.Uint8()
	if v > 1 && d.err == nil {
		d.err = fmt.Errorf("wire: boolean byte %d is neither 0 nor 1", v)
	}
	return v == 1
}

// Uint16 reads a little-endian uint16.
func (d *Decoder) Uint16() uint16 {
	b := d.take("uint16", 2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

// Uint32 reads a little-endian uint32.
func (d *Decoder) Uint32() uint32 {
	b := d.take("uint32", 4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// Uint64 reads a little-endian uint64.
func (d *Decoder) Uint64() uint64 {
	b := d.take("uint64", 8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// Int64 reads a little-endian two's complement int64.
func (d *Decoder) Int64() int64 { return int64(d.Uint64()) }

// Bytes reads a length-prefixed byte string and returns a copy of it, so the
// message never aliases the frame it came from.
func (d *Decoder) Bytes() []byte {
	n := d.Uint32()
	if d.err != nil {
		return nil
	}
	if int64(n) > int64(len(d.buf)) {
		d.fail("bytes", int(n))
		return nil
	}
	b := d.take("bytes", int(n))
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// String reads a length-prefixed string.
func (d *Decoder) String() string {
	n := d.Uint32()
	if d.err != nil {
		return ""
	}
	b := d.take("string", int(n))
	return string(b)
}

// Count reads a uint32 element count and checks that at least minSize bytes
// per element remain, so a hostile count cannot force a huge allocation.
func (d *Decoder) Count(minSize int) int {
	n := d.Uint32()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if int64(n)*int64(minSize) > int64(len(d.buf)) {
		d.fail("element list", int(n)*minSize)
		return 0
	}
	return int(n)
}

// AppendUint8 appends one byte.
func AppendUint8(b []byte, v uint8) []byte { return append(b, v) }

// AppendBool appends a boolean as one byte.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendUint16 appends a little-endian uint16.
func AppendUint16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }

// AppendUint32 appends a little-endian uint32.
func AppendUint32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendUint64 appends a little-endian uint64.
func AppendUint64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// AppendInt64 appends a little-endian int64.
func AppendInt64(b []byte, v int64) []byte { return AppendUint64(b, uint64(v)) }

// AppendBytes appends a length-prefixed byte string.
func AppendBytes(b []byte, v []byte) []byte {
	b = AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// AppendString appends a length-prefixed string.
func AppendString(b []byte, v string) []byte {
	b = AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// NewDecoder returns a decoder over b, for formats that reuse the wire's
// primitive encodings (such as queue log records).
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// More reports whether bytes remain to be read and no read has failed: a
// decoder reads a field that was added at the end of a message only if
// the sender knew it.
func (d *Decoder) More() bool { return d.err == nil && len(d.buf) > 0 }

// Finish reports the first decoding error, or an error if bytes remain.
func (d *Decoder) Finish() error {
	if d.err != nil {
		return d.err
	}
	if len(d.buf) != 0 {
		return fmt.Errorf("%w (%d)", ErrTrailingBytes, len(d.buf))
	}
	return nil
}
