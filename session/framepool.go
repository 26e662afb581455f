package session

import "sync"

// Frames are encoded into buffers that the connection writer hands back
// once it has copied them out, so a node or client that sends tens of
// thousands of frames a second does not allocate (and clear, and collect)
// a fresh buffer for each: in a drain of 1 KiB messages, encoding into
// new buffers was a tenth of the owner's CPU.

// frameBufferSize is the capacity of a new pooled buffer: a delivery or
// publish of a 1 KiB payload fits, and so does every control frame.
const frameBufferSize = 2 << 10

// frameBufferMax is the largest buffer taken back. Larger ones (pages
// of records, checkpoint chunks) are rare and would pin their memory in
// the pool, so the collector has them.
const frameBufferMax = 64 << 10

var framePool = sync.Pool{New: func() any {
	b := make([]byte, 0, frameBufferSize)
	return &b
}}

// FrameBuffer returns an empty buffer to encode one frame into (with
// wire.Encode), for a frame that is then queued for WriteFrames: the
// writer takes the buffer back once the frame is written. A frame that
// is never queued may simply be dropped.
func FrameBuffer() []byte {
	return (*framePool.Get().(*[]byte))[:0]
}

// releaseFrame takes back a frame the writer has copied out. The queue
// that carried it was its only holder: nothing reads a frame once it has
// been queued.
func releaseFrame(frame []byte) {
	if cap(frame) > frameBufferMax || cap(frame) == 0 {
		return
	}
	frame = frame[:0]
	framePool.Put(&frame)
}
