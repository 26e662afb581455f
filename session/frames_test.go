package session

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// TestReadFrameGrowsWithTheBody checks that a header announcing a large
// body costs memory only as the body arrives: a frame cut off after 100
// bytes of a 1 MiB body allocates far less than 1 MiB.
func TestReadFrameGrowsWithTheBody(t *testing.T) {
	in := append(header(wire.KindPublish, 1<<20), make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bufio.NewReader(bytes.NewReader(in)), 2<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("a cut-off frame: %v, want ErrTruncated", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 256<<10 {
		t.Fatalf("reading 100 bytes of an announced 1 MiB body allocated %d KiB", grown>>10)
	}
	whole := wire.Encode(nil, &wire.Publish{ReqID: 1, Queue: "q", Payload: bytes.Repeat([]byte("x"), 300<<10)})
	got, err := ReadFrame(bufio.NewReader(bytes.NewReader(whole)), 2<<20)
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("a 300 KiB frame read in growing steps: %v", err)
	}
}

// FrameBuffered holds only while the next frame has wholly arrived: a
// reader that batches on it never waits with frames in hand.
func TestFrameBufferedSeesOnlyWholeFrames(t *testing.T) {
	frame := wire.Encode(nil, &wire.Ping{Seq: 7})
	pr, pw := io.Pipe()
	br := bufio.NewReaderSize(pr, 4096)
	if FrameBuffered(br) {
		t.Fatal("an empty buffer holds a frame")
	}
	go func() {
		pw.Write(frame[:wire.HeaderSize+1])
	}()
	if _, err := br.Peek(wire.HeaderSize + 1); err != nil {
		t.Fatal(err)
	}
	if FrameBuffered(br) {
		t.Fatalf("%d of a %d-byte frame count as the whole frame", br.Buffered(), len(frame))
	}
	go func() {
		pw.Write(frame[wire.HeaderSize+1:])
		pw.Write(frame[:3])
	}()
	if _, err := br.Peek(len(frame) + 3); err != nil {
		t.Fatal(err)
	}
	if !FrameBuffered(br) {
		t.Fatal("a whole buffered frame is not seen")
	}
	if _, err := ReadFrame(br, wire.MaxBodySize); err != nil {
		t.Fatal(err)
	}
	if FrameBuffered(br) {
		t.Fatal("three bytes of the next frame count as a frame")
	}
}

// TestReadFrameIntoReusesItsBuffer reads frames that fit a scratch
// buffer into it, one after the other, and a larger one into memory of
// its own; a frame cut off inside the scratch is still reported as
// truncated.
func TestReadFrameIntoReusesItsBuffer(t *testing.T) {
	small := wire.Encode(nil, &wire.Publish{ReqID: 1, Queue: "q", Payload: []byte("first")})
	other := wire.Encode(nil, &wire.Publish{ReqID: 2, Queue: "q", Payload: []byte("second one")})
	large := wire.Encode(nil, &wire.Publish{ReqID: 3, Queue: "q", Payload: bytes.Repeat([]byte("x"), 4<<10)})
	var in []byte
	for _, f := range [][]byte{small, other, large} {
		in = append(in, f...)
	}
	in = append(in, small[:len(small)-2]...)
	r := bufio.NewReader(bytes.NewReader(in))
	scratch := make([]byte, 1<<10)
	for i, want := range [][]byte{small, other, large} {
		got, err := ReadFrameInto(r, 1<<20, scratch)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d reads back as %x, want %x", i, got, want)
		}
		inScratch := len(got) > 0 && &got[0] == &scratch[0]
		if fits := len(want) <= cap(scratch); inScratch != fits {
			t.Fatalf("frame %d of %d bytes: read into the scratch %v, want %v", i, len(want), inScratch, fits)
		}
	}
	if _, err := ReadFrameInto(r, 1<<20, scratch); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a frame cut off inside the scratch: %v, want ErrTruncated", err)
	}
}

// TestNextScratchGrowsToTheLargestFrameUpToItsBound keeps a reader's
// buffer as small as the frames it has carried: a frame too large for
// the buffer becomes the buffer, unless it is larger than the bound, and
// a smaller frame never shrinks it.
func TestNextScratchGrowsToTheLargestFrameUpToItsBound(t *testing.T) {
	const bound = 4 << 10
	var scratch []byte
	for i, c := range []struct {
		payload int
		grows   bool
	}{{100, true}, {50, false}, {2 << 10, true}, {8 << 10, false}, {1 << 10, false}} {
		f := wire.Encode(nil, &wire.Publish{ReqID: uint64(i), Queue: "q", Payload: make([]byte, c.payload)})
		frame, err := ReadFrameInto(bufio.NewReader(bytes.NewReader(f)), 1<<20, scratch)
		if err != nil || !bytes.Equal(frame, f) {
			t.Fatalf("frame %d: %v, or it reads back wrong", i, err)
		}
		before := cap(scratch)
		scratch = NextScratch(scratch, frame, bound)
		if grew := cap(scratch) > before; grew != c.grows {
			t.Fatalf("frame %d of %d bytes: the buffer grew from %d to %d, want growth %v", i, len(f), before, cap(scratch), c.grows)
		}
		if cap(scratch) > bound {
			t.Fatalf("frame %d: the buffer grew to %d, past its bound %d", i, cap(scratch), bound)
		}
	}
}
