package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeBehindMax is how many bytes of appended frames the log gathers
// before it writes them out without waiting for a sync to start. Under
// load a group commit gathers what arrived while the last sync ran; this
// bounds the memory a log that appends without asking for syncs holds.
const writeBehindMax = 256 << 10

// writeBehindKeep is the largest gathering buffer kept for reuse after a
// write-out; a larger one, left by a burst, goes back to the collector.
const writeBehindKeep = 1 << 20

// writeOut hands the frames gathered for the active segment to its file
// in one positioned write. A failed write fails the log: the frames may be
// partly in the file, and nothing unsynced can be trusted after that.
func (l *Log) writeOut() error {
	if l.failed != nil {
		return l.failed
	}
	if len(l.unwritten) == 0 {
		return nil
	}
	seg := l.active()
	if seg.file == nil {
		if err := l.reopenActive(seg); err != nil {
			return err
		}
	}
	if err := l.writeGathered(seg); err != nil {
		return l.fail("appending", err)
	}
	if cap(l.unwritten) <= writeBehindKeep {
		l.unwritten = l.unwritten[:0]
	} else {
		l.unwritten = nil
	}
	return nil
}

// writeGathered writes the gathered frames where they belong in seg, the
// active segment.
func (l *Log) writeGathered(seg *segment) error {
	_, err := seg.file.WriteAt(l.unwritten, seg.size-int64(len(l.unwritten)))
	return err
}

// readAt fills buf with seg's bytes from off: from the frames still
// gathered in memory when they hold all of it, from file otherwise (after
// writing out gathered frames the read reaches into).
func (l *Log) readAt(seg *segment, file vfs.File, buf []byte, off int64) error {
	if seg == l.active() && len(l.unwritten) > 0 {
		written := seg.size - int64(len(l.unwritten))
		if off >= written {
			copy(buf, l.unwritten[off-written:])
			return nil
		}
		if off+int64(len(buf)) > written {
			if err := l.writeOut(); err != nil {
				return err
			}
		}
	}
	if n, err := file.ReadAt(buf, off); n < len(buf) {
		return fmt.Errorf("storage: reading %s at %d: %w", seg.path, off, err)
	}
	return nil
}
