package storage

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Rot is one bit that decayed in a log segment at rest: nothing wrote it,
// and no sync or crash brings the old value back.
type Rot struct {
	// Path is the segment file, Offset the byte that changed in it.
	Path   string
	Offset int64
	// Before and After are the byte's value before and after the flip.
	Before, After byte
	// Index is the record whose frame holds the byte.
	Index uint64
}

// rotRecentFrames is how many of the newest segment's last frames the
// flips aimed at data about to be read choose among.
const rotRecentFrames = 16

// RotSyncedFrame flips one bit inside a record frame of the log in dir, as
// a decaying medium would while the log is open and served. It is, like
// the lying disks of lostwrite.go, for the simulator and for tests.
//
// The frame is one that synced (what a power loss would leave of the same
// disk) holds whole and verified, so the damage is always inside data the
// log once made durable; live is the file system the log runs on, where
// the bit flips. pick(n) chooses one of n possibilities (the segment, the
// frame, the byte and the bit). It reports false, changing nothing, when
// the log holds no such frame.
func RotSyncedFrame(live, synced vfs.FS, dir string, pick func(n int) int) (Rot, bool, error) {
	names, err := synced.List(dir)
	if err != nil {
		return Rot{}, false, nil // the log directory is not durable yet
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, segmentSuffix) })
	if len(names) == 0 {
		return Rot{}, false, nil
	}
	slices.Sort(names)
	// Half the flips land among the newest segment's last frames, which
	// replication to a replica behind, recovery and the next checkpoint
	// build are about to read; the rest anywhere.
	name, newest := names[len(names)-1], true
	if pick(2) == 0 {
		name, newest = names[pick(len(names))], false
	}
	path := synced.PathJoin(dir, name)
	durable, err := readWholeFile(synced, path)
	if err != nil {
		return Rot{}, false, err
	}
	offsets := verifiedFrames(durable)
	if len(offsets) == 0 {
		return Rot{}, false, nil
	}
	first := 0
	if newest {
		first = max(0, len(offsets)-rotRecentFrames)
	}
	start := offsets[first+pick(len(offsets)-first)]
	end := frameEnd(durable, start)
	current, err := readWholeFile(live, path)
	if errors.Is(err, iofs.ErrNotExist) {
		return Rot{}, false, nil // removed since the last sync: compacted, or cut by a truncation
	}
	if err != nil {
		return Rot{}, false, fmt.Errorf("storage: reading %s on the live disk: %w", path, err)
	}
	if int64(len(current)) < end || !slices.Equal(current[start:end], durable[start:end]) {
		// The live file no longer holds that frame (it was cut and
		// written again since the last sync): nothing durable to decay.
		return Rot{}, false, nil
	}
	off := start + int64(pick(int(end-start)))
	rot := Rot{Path: path, Offset: off, Before: current[off], Index: frameIndex(durable, start)}
	rot.After = rot.Before ^ 1<<pick(8)
	f, err := live.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return Rot{}, false, err
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{rot.After}, off); err != nil {
		return Rot{}, false, err
	}
	return rot, true, nil
}

// verifiedFrames returns the offsets of a segment's leading run of frames
// that verify.
func verifiedFrames(data []byte) []int64 {
	var offsets []int64
	for off := int64(segmentHeaderSize); off+frameHeaderSize <= int64(len(data)); {
		end := frameEnd(data, off)
		if end > int64(len(data)) || !frameValid(data[off:end]) {
			break
		}
		offsets = append(offsets, off)
		off = end
	}
	return offsets
}
