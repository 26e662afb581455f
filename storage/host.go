package storage

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Host is what storage needs from its owner: asynchronous syncs and named
// transition boundaries. A node adapts its Env to it (node.SyncRouter).
type Host interface {
	// Sync makes f's data (or a directory's entries) durable and calls
	// done with the outcome, later, from the owner's event loop.
	Sync(f vfs.File, done func(error))
	// Boundary marks a transition boundary where a simulated crash may
	// strike.
	Boundary(name string)
}

// ErrCorrupt marks damage inside data that was durable: a bad frame inside
// the synced range, a broken segment chain, a digest that does not match.
// A replica that sees it must be fenced and reported, never repaired by
// guessing.
var ErrCorrupt = errors.New("storage: corruption in durable data")

// ErrFailed marks a log or state file that stopped after a write or sync
// failure. It stays failed for the life of the process.
var ErrFailed = errors.New("storage: failed after an I/O error")

// CorruptionError says where corruption was found.
type CorruptionError struct {
	Path   string
	Offset int64
	Index  uint64
	Reason string
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("storage: corruption in %s at offset %d (record %d): %s", e.Path, e.Offset, e.Index, e.Reason)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

func corrupt(path string, off int64, index uint64, format string, args ...any) error {
	return &CorruptionError{Path: path, Offset: off, Index: index, Reason: fmt.Sprintf(format, args...)}
}

func failed(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrFailed, op, err)
}

var errClosed = errors.New("log is closed")
