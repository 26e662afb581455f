package session

import (
	"bufio"
	"bytes"
	"errors"
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
