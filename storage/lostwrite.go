package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The functions in this file imitate disks that lie: they acknowledged a
// sync and then lost the data (a lost write), or wrote it somewhere other
// than where it was meant to go (a misdirected write). They exist for the
// simulator and for tests, which apply them to a stopped node's disk;
// nothing in cairn calls them on a disk it serves from.

// LoseLastFrames cuts the last k frames of the newest segment of the log
// in dir, synced or not, and returns how many it cut (fewer when the
// segment holds fewer) and the index of the first. The log still opens
// cleanly afterwards: nothing on the disk says the frames ever existed.
func LoseLastFrames(fs vfs.FS, dir string, k int) (int, uint64, error) {
	path, data, offsets, err := newestSegmentFrames(fs, dir)
	if err != nil || len(offsets) == 0 || k <= 0 {
		return 0, 0, err
	}
	k = min(k, len(offsets))
	cut := offsets[len(offsets)-k]
	return k, frameIndex(data, cut), rewriteFile(fs, path, data[:cut])
}

// MisdirectLastFrames imitates k writes that landed at the wrong offset:
// the last k frames of the newest segment are lost from their place and
// their bytes overwrite the segment's first frames instead. It returns
// the index of the first overwritten frame, or zero, changing nothing,
// when the segment is too small for the two places not to overlap. The
// log reads the overwritten frames as damage when later frames prove them
// synced, and otherwise as a torn tail it drops: everything from the
// returned index on may be gone.
func MisdirectLastFrames(fs vfs.FS, dir string, k int) (uint64, error) {
	path, data, offsets, err := newestSegmentFrames(fs, dir)
	if err != nil || k <= 0 || len(offsets) < 2*k {
		return 0, err
	}
	cut := offsets[len(offsets)-k]
	tail := slices.Clone(data[cut:frameEnd(data, offsets[len(offsets)-1])])
	kept := slices.Clone(data[:cut])
	if int64(len(tail)) > cut-offsets[0] {
		return 0, nil
	}
	from := frameIndex(data, offsets[0])
	copy(kept[offsets[0]:], tail)
	return from, rewriteFile(fs, path, kept)
}

// newestSegmentFrames reads the newest segment of the log in dir and
// returns its path, its bytes and the offsets of its leading run of
// frames that verify.
func newestSegmentFrames(fs vfs.FS, dir string) (string, []byte, []int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return "", nil, nil, fmt.Errorf("storage: listing %s: %w", dir, err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, segmentSuffix) })
	if len(names) == 0 {
		return "", nil, nil, nil
	}
	slices.Sort(names)
	path := fs.PathJoin(dir, names[len(names)-1])
	data, err := readWholeFile(fs, path)
	if err != nil {
		return "", nil, nil, err
	}
	return path, data, verifiedFrames(data), nil
}

// frameIndex is the index recorded in the frame that starts at off.
func frameIndex(data []byte, off int64) uint64 {
	return binary.LittleEndian.Uint64(data[off+9 : off+17])
}

// frameEnd is the offset just past the frame that starts at off.
func frameEnd(data []byte, off int64) int64 {
	return off + frameHeaderSize + int64(binary.LittleEndian.Uint32(data[off+4:off+8]))
}

func readWholeFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return data, nil
}

// rewriteFile replaces path's contents with data, durably: the file and
// its directory entry are both synced.
func rewriteFile(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := fs.OpenDir(fs.PathDir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SealedSegment is a segment of a log that a later segment follows: its
// successor's header records how many of its bytes are valid.
type SealedSegment struct {
	Path       string
	FirstIndex uint64
	// Valid is the segment's valid length, as its successor records it;
	// Size is the file's length now (shorter if something cut it).
	Valid, Size int64
}

// SealedSegments lists, oldest first, the segments of the log in dir that
// a later segment follows. The newest segment is never among them, nor is
// a segment a truncation superseded (one of an older generation after a
// newer one, which the next open removes).
func SealedSegments(fs vfs.FS, dir string) ([]SealedSegment, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: listing %s: %w", dir, err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, segmentSuffix) })
	slices.Sort(names)
	var paths []string
	var headers []segmentHeader
	var sizes []int64
	var maxGen uint64
	for i, name := range names {
		if _, ok := parseSegmentName(name); !ok {
			return nil, fmt.Errorf("storage: malformed segment name %q in %s", name, dir)
		}
		data, err := readWholeFile(fs, fs.PathJoin(dir, name))
		if err != nil {
			return nil, err
		}
		h, err := decodeSegmentHeader(data[:min(len(data), segmentHeaderSize)])
		if err != nil {
			return nil, fmt.Errorf("storage: segment %s: %w", name, err)
		}
		if i > 0 && h.gen < maxGen {
			continue // superseded, as Log.dropSuperseded judges it
		}
		maxGen = max(maxGen, h.gen)
		paths, headers, sizes = append(paths, fs.PathJoin(dir, name)), append(headers, h), append(sizes, int64(len(data)))
	}
	var out []SealedSegment
	for i := 0; i+1 < len(paths); i++ {
		out = append(out, SealedSegment{Path: paths[i], FirstIndex: headers[i].firstIndex, Valid: headers[i+1].prevLength, Size: sizes[i]})
	}
	return out, nil
}

// CutFile keeps only the first n bytes of the file at path, durably: a
// disk that lost the end of a file it had made durable (a lost extent, a
// truncation by a misbehaving tool). Cutting a sealed segment leaves damage
// the log's open reports; nothing shows a cut in the newest one.
func CutFile(fs vfs.FS, path string, n int64) error {
	data, err := readWholeFile(fs, path)
	if err != nil {
		return err
	}
	if n < 0 || n > int64(len(data)) {
		return fmt.Errorf("storage: cutting %s of %d bytes to %d", path, len(data), n)
	}
	return rewriteFile(fs, path, data[:n])
}
