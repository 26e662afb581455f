package session

import (
	"bufio"
	"io"
	"time"
)

// DeadlineWriter is the part of a connection WriteFrames needs.
type DeadlineWriter interface {
	io.Writer
	SetWriteDeadline(t time.Time) error
}

// writeBuffer is the size of the buffer frames are batched in.
const writeBuffer = 64 << 10

// WriteFrames writes the frames queued on out to w until closing is closed
// (it then returns nil) or a write fails (it returns the error). Frames
// already queued behind the first of a batch go out with it and are
// flushed once, so one system call carries as much as is ready; a batch
// that takes longer than timeout fails. onFrame, when not nil, is called
// for every frame written. Nodes and clients run it on a goroutine of its
// own per connection. A frame belongs to the writer once it is queued:
// the writer hands its buffer back for reuse (FrameBuffer) when written.
func WriteFrames(w DeadlineWriter, out <-chan []byte, closing <-chan struct{}, timeout time.Duration, onFrame func()) error {
	return WriteFramesFirst(w, nil, out, closing, timeout, onFrame)
}

// WriteFramesFirst is WriteFrames with a second queue, first, whose
// frames go out ahead of out's: before the rest of a batch, and at the
// start of every batch. A node sends its control traffic (raft, failure
// detection) there, so that a backlog of queue traffic neither delays it
// nor, filling out, gets it dropped. A nil first is never ready.
func WriteFramesFirst(w DeadlineWriter, first, out <-chan []byte, closing <-chan struct{}, timeout time.Duration, onFrame func()) error {
	bw := bufio.NewWriterSize(w, writeBuffer)
	for {
		var frame []byte
		select {
		case frame = <-first:
		default:
			select {
			case <-closing:
				return nil
			case frame = <-first:
			case frame = <-out:
			}
		}
		if err := writeBatch(w, bw, first, out, frame, timeout, onFrame); err != nil {
			return err
		}
	}
}

// writeBatch writes frame and every frame already queued behind it, those
// of first before those of out, then flushes.
func writeBatch(w DeadlineWriter, bw *bufio.Writer, first, out <-chan []byte, frame []byte, timeout time.Duration, onFrame func()) error {
	w.SetWriteDeadline(time.Now().Add(timeout))
	for {
		if _, err := bw.Write(frame); err != nil {
			return err
		}
		releaseFrame(frame)
		if onFrame != nil {
			onFrame()
		}
		select {
		case frame = <-first:
			continue
		default:
		}
		select {
		case frame = <-first:
			continue
		case frame = <-out:
			continue
		default:
		}
		return bw.Flush()
	}
}
