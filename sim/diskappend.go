package sim

import (
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// appendingFile is a writable file of the memory filesystem that grows
// in one step. The memory filesystem's WriteAt extends a file a byte at a
// time, one append per byte past its end, and a log writes each gathered
// batch past its segment's end with WriteAt: that loop was a fortieth of
// a sweep's CPU. Its Write, at the file's own offset, grows the file with
// one append. So a WriteAt that starts where the memory file's offset
// stands becomes a Write; every other call keeps its meaning, the
// caller's Write and Read included, which go through the positional calls
// at the offset the caller sees.
type appendingFile struct {
	vfs.File
	memPos int64 // where the memory file's own offset stands
	pos    int64 // the offset the caller's Write and Read use
}

// WriteAt writes p at off.
func (f *appendingFile) WriteAt(p []byte, off int64) (int, error) {
	if off != f.memPos {
		return f.File.WriteAt(p, off)
	}
	n, err := f.File.Write(p)
	f.memPos += int64(n)
	return n, err
}

// Write writes p at the caller's offset and moves it past them.
func (f *appendingFile) Write(p []byte) (int, error) {
	n, err := f.WriteAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

// Read reads from the caller's offset and moves it past what it read; as
// a file's Read, it reports io.EOF only when it read nothing.
func (f *appendingFile) Read(p []byte) (int, error) {
	n, err := f.File.ReadAt(p, f.pos)
	f.pos += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// appending wraps a file just opened for writing, its offset at 0.
func appending(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &appendingFile{File: f}, nil
}
