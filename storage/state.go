package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// stateMagic opens every state file; stateHeaderSize is magic (8), body
// length (4), CRC32C of the body (4).
var stateMagic = [8]byte{'c', 'a', 'i', 'r', 'n', 's', 't', '1'}

const stateHeaderSize = 16

// MaxStateSize bounds a state file's body.
const MaxStateSize = 1 << 20

// StateFile holds one small piece of durable state (an epoch, a seal, an
// identity) and replaces it atomically: write a temporary file, sync it,
// rename it over the old one, sync the directory. A reader after any crash
// sees either the old or the new content, never a mix.
type StateFile struct {
	fs   vfs.FS
	dir  string
	name string
	host Host

	maxSize    int
	newDirs    []string
	inflight   bool
	queued     [][]byte
	queuedDone []func(error)
	failed     error
	// gate is the host's FileGate, if it has one (gate.go).
	gate *FileGate
}

// OpenStateFile opens (creating its directory if needed) the state file
// dir/name and returns its current content, or nil if it was never
// written. A damaged file is a *CorruptionError.
func OpenStateFile(fs vfs.FS, dir, name string, host Host) (*StateFile, []byte, error) {
	return OpenSizedStateFile(fs, dir, name, host, MaxStateSize)
}

// OpenSizedStateFile is OpenStateFile for state that may be larger than
// MaxStateSize, up to maxSize bytes (at most 1 GiB): a checkpoint of a
// queue's live messages is written and read whole, like any state file.
func OpenSizedStateFile(fs vfs.FS, dir, name string, host Host, maxSize int) (*StateFile, []byte, error) {
	if maxSize <= 0 || maxSize > 1<<30 {
		panic(fmt.Sprintf("storage: state file size limit %d outside (0, 1 GiB]", maxSize))
	}
	s := &StateFile{fs: fs, dir: dir, name: name, host: host, maxSize: maxSize}
	if g, ok := host.(GatedHost); ok {
		s.gate = g.FileGate()
	}
	newDirs, err := ensureDir(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	s.newDirs = newDirs
	// A temporary file left by a crash was never renamed into place.
	if err := fs.Remove(s.tempPath()); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, fmt.Errorf("storage: removing %s: %w", s.tempPath(), err)
	}
	data, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	return s, data, nil
}

func (s *StateFile) path() string     { return s.fs.PathJoin(s.dir, s.name) }
func (s *StateFile) tempPath() string { return s.fs.PathJoin(s.dir, s.name+".tmp") }

func (s *StateFile) read() ([]byte, error) {
	f, err := s.fs.Open(s.path())
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("storage: opening %s: %w", s.path(), err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() < stateHeaderSize || info.Size() > stateHeaderSize+int64(s.maxSize) {
		return nil, corrupt(s.path(), 0, 0, "state file is %d bytes", info.Size())
	}
	buf := make([]byte, info.Size())
	if n, err := f.ReadAt(buf, 0); n < len(buf) {
		return nil, fmt.Errorf("storage: reading %s: %w", s.path(), err)
	}
	if !bytes.Equal(buf[:8], stateMagic[:]) {
		return nil, corrupt(s.path(), 0, 0, "bad state file magic")
	}
	n := binary.LittleEndian.Uint32(buf[8:12])
	if int64(n) != info.Size()-stateHeaderSize {
		return nil, corrupt(s.path(), 8, 0, "state length %d does not match file size %d", n, info.Size())
	}
	body := buf[stateHeaderSize:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(buf[12:16]) {
		return nil, corrupt(s.path(), 12, 0, "state checksum mismatch")
	}
	return body, nil
}

// Write replaces the state with data and calls done once the new content
// is durable. Writes issued while one is in flight are coalesced: only the
// latest data is written next, and all their callbacks run when it lands.
// The data is copied: the caller may reuse it at once.
func (s *StateFile) Write(data []byte, done func(error)) {
	s.WriteParts([][]byte{bytes.Clone(data)}, done)
}

// WriteParts is Write of the parts joined, without copying them: the
// caller must not change them afterwards. A checkpoint's state runs to
// hundreds of megabytes for a large backlog, and every copy of it costs
// its node a pause and as much memory again.
func (s *StateFile) WriteParts(parts [][]byte, done func(error)) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size > s.maxSize {
		panic(fmt.Sprintf("storage: state of %d bytes exceeds the file's limit of %d", size, s.maxSize))
	}
	if s.failed != nil {
		done(s.failed)
		return
	}
	if s.inflight {
		s.queued = parts
		s.queuedDone = append(s.queuedDone, done)
		return
	}
	s.start(parts, []func(error){done})
}

func (s *StateFile) start(parts [][]byte, dones []func(error)) {
	s.inflight = true
	if s.gate != nil {
		s.gate.enter(func() { s.begin(parts, dones) })
		return
	}
	s.begin(parts, dones)
}

// finish ends a write that began, successful or not: its turn at the
// gate goes to the next.
func (s *StateFile) finish() {
	s.inflight = false
	if s.gate != nil {
		s.gate.leave()
	}
}

func (s *StateFile) begin(parts [][]byte, dones []func(error)) {
	s.host.Boundary("storage.before.write-state")
	f, err := s.fs.Create(s.tempPath(), vfs.WriteCategoryUnspecified)
	if err != nil {
		s.fail("creating temporary state file", err, dones)
		return
	}
	size, crc := 0, uint32(0)
	for _, p := range parts {
		size += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	header := make([]byte, stateHeaderSize)
	copy(header, stateMagic[:])
	binary.LittleEndian.PutUint32(header[8:12], uint32(size))
	binary.LittleEndian.PutUint32(header[12:16], crc)
	_, err = f.Write(header)
	for _, p := range parts {
		if err == nil {
			_, err = f.Write(p)
		}
	}
	if err != nil {
		f.Close()
		s.fail("writing temporary state file", err, dones)
		return
	}
	s.host.Sync(f, func(err error) { s.tempSynced(f, err, dones) })
}

func (s *StateFile) tempSynced(f vfs.File, err error, dones []func(error)) {
	f.Close()
	if err != nil {
		s.fail("syncing temporary state file", err, dones)
		return
	}
	s.host.Boundary("storage.before.rename-state")
	if err := s.fs.Rename(s.tempPath(), s.path()); err != nil {
		s.fail("renaming state file", err, dones)
		return
	}
	s.host.Boundary("storage.after.rename-state")
	created := s.newDirs
	dirs := append([]string{s.dir}, created...)
	syncDirNames(s.fs, s.host, dirs, func(err error) {
		if err == nil {
			s.newDirs = s.newDirs[len(created):]
		}
		s.dirSynced(err, dones)
	})
}

func (s *StateFile) dirSynced(err error, dones []func(error)) {
	if err != nil {
		s.fail("syncing state directory", err, dones)
		return
	}
	s.finish()
	s.host.Boundary("storage.after.write-state")
	for _, done := range dones {
		done(nil)
	}
	if len(s.queuedDone) > 0 && !s.inflight {
		parts, next := s.queued, s.queuedDone
		s.queued, s.queuedDone = nil, nil
		s.start(parts, next)
	}
}

func (s *StateFile) fail(op string, err error, dones []func(error)) {
	if s.failed == nil {
		s.failed = failed(op, err)
	}
	s.finish()
	for _, done := range append(dones, s.queuedDone...) {
		done(s.failed)
	}
	s.queuedDone = nil
}

// Err reports why the state file failed, or nil.
func (s *StateFile) Err() error { return s.failed }
