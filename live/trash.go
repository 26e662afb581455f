package live

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Deleting a large file can take the file system a long while: ext4
// frees its extents under the journal, behind whatever sync is in
// flight. In a soak at 5,000 msg/s the unlink of one compacted segment
// held the node's event loop for 110 ms, and every request waited behind
// it (the end-to-end p99 went from under 10 ms to over 100). So the
// node's file system removes a file, or a whole directory tree, by
// renaming it into a trash directory inside the data directory, a quick
// change to two directories, and a goroutine of the runtime deletes what
// lands there. Renaming is what a removal promises the node: the path is
// gone at once. A crash may leave trash behind, which the next start
// deletes, again off the loop.

// trashDirName is the trash directory's name in the data directory.
const trashDirName = ".trash"

// trashQueueLen bounds the removals waiting for the remover; past it a
// removal happens in place, on the caller.
const trashQueueLen = 4096

// trashFS is the OS file system with removals under root moved off the
// caller.
type trashFS struct {
	vfs.FS
	root  string // the data directory, with a trailing separator
	dir   string // root's trash directory
	stamp string // names this process's trash apart from earlier ones'
	seq   atomic.Uint64
	queue chan string
	log   *slog.Logger
}

// newTrashFS makes dataDir's trash directory and a file system that
// removes through it.
func newTrashFS(dataDir string, log *slog.Logger) (*trashFS, error) {
	dir := filepath.Join(dataDir, trashDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &trashFS{
		FS: vfs.Default, root: filepath.Clean(dataDir) + string(filepath.Separator), dir: dir,
		stamp: strconv.FormatInt(time.Now().UnixNano(), 36), queue: make(chan string, trashQueueLen), log: log,
	}, nil
}

// Remove removes a file as os.Remove does, through the trash when it lies
// under the data directory. An empty directory is removed at once.
func (t *trashFS) Remove(name string) error {
	if !t.owns(name) {
		return t.FS.Remove(name)
	}
	info, err := t.FS.Stat(name)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return t.FS.Remove(name)
	}
	return t.discard(name)
}

// RemoveAll removes a tree as os.RemoveAll does, through the trash when
// it lies under the data directory.
func (t *trashFS) RemoveAll(name string) error {
	if !t.owns(name) {
		return t.FS.RemoveAll(name)
	}
	if _, err := t.FS.Stat(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return t.discard(name)
}

// owns reports whether name lies inside the data directory, outside the
// trash itself.
func (t *trashFS) owns(name string) bool {
	name = filepath.Clean(name)
	return strings.HasPrefix(name, t.root) && name != t.dir && !strings.HasPrefix(name, t.dir+string(filepath.Separator))
}

// discard moves name into the trash and queues it for the remover. If
// it cannot be moved (another file system under the data directory, say)
// or the remover is too far behind, it is removed here.
func (t *trashFS) discard(name string) error {
	dst := filepath.Join(t.dir, t.stamp+"-"+strconv.FormatUint(t.seq.Add(1), 10))
	if err := t.FS.Rename(name, dst); err != nil {
		return t.FS.RemoveAll(name)
	}
	select {
	case t.queue <- dst:
		return nil
	default:
		return t.FS.RemoveAll(dst)
	}
}

// empty deletes what the trash held at the start (left by a crash), then
// what is discarded into it, until done is closed.
func (t *trashFS) empty(done <-chan struct{}) {
	if names, err := t.FS.List(t.dir); err == nil {
		for _, n := range names {
			t.remove(filepath.Join(t.dir, n))
		}
	}
	for {
		select {
		case <-done:
			return
		case path := <-t.queue:
			t.remove(path)
		}
	}
}

// trashChunk is how much of a file the remover frees at a time, and
// trashPause how long it lets the file system breathe in between.
// Unlinking a 64 MiB segment at once stalled every sync in flight on the
// same disk, the node's own and, since replicas compact at the same cut,
// its peers' too, for 70-120 ms; freed a few MiB at a time, no one step
// holds the journal for long.
const (
	trashChunk = 4 << 20
	trashPause = 2 * time.Millisecond
)

// remove deletes one trash entry, shrinking each large file a chunk at a
// time first; a failure is logged and left for the next start.
func (t *trashFS) remove(path string) {
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			shrink(p)
		}
		return nil
	})
	if err := t.FS.RemoveAll(path); err != nil {
		t.log.Warn("deleting a discarded file", slog.String("path", path), slog.String("err", err.Error()))
	}
}

// shrink cuts the file at path down to at most trashChunk bytes, a chunk
// at a time. Any failure leaves the rest to the removal.
func shrink(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return
	}
	for size := info.Size(); size > trashChunk; {
		size -= trashChunk
		if f.Truncate(size) != nil {
			return
		}
		time.Sleep(trashPause)
	}
}
