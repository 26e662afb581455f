package session

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// recordingWriter records each Write call and can be told to fail.
type recordingWriter struct {
	writes   [][]byte
	deadline time.Time
	fail     error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func (w *recordingWriter) SetWriteDeadline(t time.Time) error { w.deadline = t; return nil }

// TestWriteFramesBatchesWhatIsQueued queues three frames before the
// writer starts: they must reach the connection in one write, in order,
// under a deadline, and WriteFrames must return nil once closing closes.
func TestWriteFramesBatchesWhatIsQueued(t *testing.T) {
	out := make(chan []byte, 3)
	for _, f := range []string{"one", "two", "three"} {
		out <- []byte(f)
	}
	closing := make(chan struct{})
	w := &recordingWriter{}
	written := 0
	done := make(chan error)
	go func() {
		done <- WriteFrames(w, out, closing, time.Second, func() {
			written++
			if written == 3 {
				close(closing)
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 1 || string(w.writes[0]) != "onetwothree" || w.deadline.IsZero() {
		t.Fatalf("writes %q with deadline %v, want one write of all three frames under a deadline", w.writes, w.deadline)
	}
}

// TestWriteFramesReturnsTheWriteError checks that a failed flush ends the
// loop with its error, so the caller can close the connection.
func TestWriteFramesReturnsTheWriteError(t *testing.T) {
	out := make(chan []byte, 1)
	out <- []byte("frame")
	broken := errors.New("broken pipe")
	err := WriteFrames(&recordingWriter{fail: broken}, out, make(chan struct{}), time.Second, nil)
	if !errors.Is(err, broken) {
		t.Fatalf("WriteFrames = %v, want the write error", err)
	}
}

// TestWriteFramesFirstSendsControlFramesAhead queues queue traffic, then
// control frames: the control frames must go out first, in their own
// order, and the rest after them in theirs.
func TestWriteFramesFirstSendsControlFramesAhead(t *testing.T) {
	out, first := make(chan []byte, 3), make(chan []byte, 2)
	for _, f := range []string{"a1", "a2", "a3"} {
		out <- []byte(f)
	}
	for _, f := range []string{"P1", "P2"} {
		first <- []byte(f)
	}
	closing := make(chan struct{})
	w := &recordingWriter{}
	written := 0
	done := make(chan error)
	go func() {
		done <- WriteFramesFirst(w, first, out, closing, time.Second, func() {
			written++
			if written == 5 {
				close(closing)
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 1 || string(w.writes[0]) != "P1P2a1a2a3" {
		t.Fatalf("writes %q, want the control frames ahead of the rest in one write", w.writes)
	}
}
