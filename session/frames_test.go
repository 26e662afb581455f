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
