package sim

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// SectorSize is the unit in which unsynced writes survive or vanish at a
// crash: a sector is written whole or not at all.
const SectorSize = 512

// DiskProfile is one simulated disk's behaviour. All rates are per
// operation.
type DiskProfile struct {
	SyncLatency    netsim.Latency
	SyncErrorRate  float64 // EIO on file or directory sync
	WriteErrorRate float64 // EIO on write
	ReadErrorRate  float64 // EIO on read
	// NameErrorRate is the chance of EIO on an operation on the file
	// system's names rather than a file's bytes: creating, opening,
	// linking, renaming and removing files, making, opening and listing
	// directories, and asking a file's size or whether it exists. A full
	// or failing device refuses these too, at points no sync or write
	// error reaches: a checkpoint's rename, a new replica's directories,
	// a journal's start, a restart's listing.
	NameErrorRate float64
	// TornChance is the chance, per file with unsynced data at a crash,
	// that some of that data survives; otherwise all of it is lost.
	TornChance float64
	// ReorderChance is the chance that surviving sectors are an arbitrary
	// subset rather than a prefix: the disk wrote them out of order.
	ReorderChance float64
	// FlipChance is the chance, per crash, that one bit of synced data at
	// rest is flipped.
	FlipChance float64
}

// Disk is a simulated disk: pebble's crashable in-memory filesystem behind
// a seeded error injector. A crash keeps exactly what was synced, then
// lets a seeded, sorted choice of unsynced sectors survive.
type Disk struct {
	mem     *vfs.MemFS
	fs      vfs.FS
	rng     *rand.Rand
	profile DiskProfile
	faulty  bool // injection on; off during the liveness phase
	stats   DiskStats
	// rots are the bits that decayed since the last crash. A flip lands
	// in the live file, where a sync may or may not carry it into the
	// synced state; what a power loss leaves has it either way. Each
	// follows its file through renames and goes with it when the file is
	// removed or replaced (namingFS).
	rots []storage.Rot
	// stallUntil holds back every sync until then: the device stopped
	// answering for a while, as an overloaded or failing one does.
	stallUntil time.Duration
	// readTraps holds the files whose next read fails (restarteio.go).
	readTraps map[string]int
}

// DiskStats counts what the disk did, for traces and coverage.
type DiskStats struct {
	Syncs, SyncErrors, WriteErrors, ReadErrors int
	// NameErrors counts the EIOs injected into operations on names.
	NameErrors                             int
	TornFiles, TornSectors, Flips, Crashes int
	LostWrites                             int
	// LostDisks counts the times the whole disk was lost.
	LostDisks int
	// Rots counts bits flipped while a node ran; StalledSyncs the syncs
	// that waited out a stall.
	Rots, StalledSyncs int
	// TrappedReads counts the reads a restart-eio fault failed (they
	// count among ReadErrors too).
	TrappedReads int
}

// NewDisk returns an empty disk drawing its faults from rng.
func NewDisk(rng *rand.Rand, profile DiskProfile) *Disk {
	d := &Disk{mem: vfs.NewCrashableMem(), rng: rng, profile: profile, faulty: true}
	d.wrap()
	return d
}

func (d *Disk) wrap() {
	d.fs = errorfs.Wrap(namingFS{FS: d.mem, d: d}, errorfs.InjectorFunc(d.maybeError))
}

// FS is the filesystem the node sees, with fault injection.
func (d *Disk) FS() vfs.FS { return d.fs }

// Raw is the filesystem without fault injection, for checkers that read
// what a node left behind.
func (d *Disk) Raw() vfs.FS { return d.mem }

// Stats reports what the disk did so far.
func (d *Disk) Stats() DiskStats { return d.stats }

// SetFaulty turns error injection on or off.
func (d *Disk) SetFaulty(on bool) {
	d.faulty = on
	if !on {
		d.readTraps = nil
	}
}

// SyncDone draws when a sync started at now completes: its latency,
// after the end of any stall.
func (d *Disk) SyncDone(now time.Duration) time.Duration {
	start := now
	if d.stallUntil > now {
		start = d.stallUntil
		d.stats.StalledSyncs++
	}
	return start + d.profile.SyncLatency.Draw(d.rng)
}

// Stall holds back every sync started before until.
func (d *Disk) Stall(until time.Duration) { d.stallUntil = max(d.stallUntil, until) }

// Rot flips one bit of a synced record frame of the log in dir, on the
// running disk (see storage.RotSyncedFrame).
func (d *Disk) Rot(dir string) (storage.Rot, bool) {
	rot, ok, err := storage.RotSyncedFrame(d.mem, d.Durable(), dir, d.rng.IntN)
	if err != nil {
		panic(fmt.Sprintf("sim: rotting a bit in %s: %v", dir, err))
	}
	if ok {
		d.rots = append(d.rots, rot)
		d.stats.Rots++
	}
	return rot, ok
}

// Durable is what a power loss would leave of the disk now: its synced
// state, with every decayed bit.
func (d *Disk) Durable() *vfs.MemFS {
	clone := d.mem.CrashClone(vfs.CrashCloneCfg{})
	d.keepRots(clone)
	return clone
}

// keepRots carries the decayed bits into clone, which holds the synced
// state. A byte that no longer reads as it did before the flip belongs to
// data written since (the file was cut and written again), which the
// decay never touched. A byte that reads the same proves nothing about
// which file holds it, so a file removed or replaced since must have taken
// its decay with it (namingFS).
func (d *Disk) keepRots(clone *vfs.MemFS) {
	for _, rot := range d.rots {
		data, err := readAll(clone, rot.Path)
		if err != nil || int64(len(data)) <= rot.Offset || data[rot.Offset] != rot.Before {
			continue
		}
		data[rot.Offset] = rot.After
		writeAll(clone, rot.Path, data)
	}
}

func (d *Disk) maybeError(op errorfs.Op) error {
	var rate float64
	var count *int
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		d.stats.Syncs++
		rate, count = d.profile.SyncErrorRate, &d.stats.SyncErrors
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt:
		rate, count = d.profile.WriteErrorRate, &d.stats.WriteErrors
	case errorfs.OpFileRead, errorfs.OpFileReadAt:
		if d.trappedRead(op.Path) {
			return errorfs.ErrInjected
		}
		rate, count = d.profile.ReadErrorRate, &d.stats.ReadErrors
	case errorfs.OpCreate, errorfs.OpLink, errorfs.OpOpen, errorfs.OpOpenDir, errorfs.OpRemove,
		errorfs.OpRemoveAll, errorfs.OpRename, errorfs.OpReuseForWrite, errorfs.OpMkdirAll,
		errorfs.OpList, errorfs.OpStat, errorfs.OpFileStat:
		rate, count = d.profile.NameErrorRate, &d.stats.NameErrors
	default:
		return nil
	}
	if !d.faulty || rate == 0 || !chance(d.rng, rate) {
		return nil
	}
	*count++
	return errorfs.ErrInjected
}

// Crash replaces the disk's contents with what a power loss would leave:
// the synced state, plus surviving unsynced sectors, plus perhaps a
// flipped bit. File handles opened before the crash keep pointing at the
// old contents and must not be used again.
func (d *Disk) Crash() {
	d.stats.Crashes++
	clone := d.mem.CrashClone(vfs.CrashCloneCfg{})
	d.keepRots(clone)
	d.rots = nil
	for _, path := range walkFiles(clone, "") {
		d.tear(clone, path)
	}
	if chance(d.rng, d.profile.FlipChance) {
		d.flip(clone)
	}
	d.mem = clone
	d.wrap()
}

// walkFiles lists every regular file under dir, in sorted order.
func walkFiles(fs vfs.FS, dir string) []string {
	names, err := fs.List(dir)
	if err != nil {
		panic(fmt.Sprintf("sim: listing %q on a memory disk: %v", dir, err))
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		path := fs.PathJoin(dir, name)
		info, err := fs.Stat(path)
		if err != nil {
			panic(fmt.Sprintf("sim: stat %q on a memory disk: %v", path, err))
		}
		if info.IsDir() {
			out = append(out, walkFiles(fs, path)...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// tear lets some unsynced sectors of path survive into clone. Only data
// appended past the synced length is considered: when the synced content
// is not a prefix of the current content, the name now refers to another
// file (a rename whose directory sync never happened), and blocks of one
// file never appear in another.
func (d *Disk) tear(clone *vfs.MemFS, path string) {
	curInfo, err := d.mem.Stat(path)
	if err != nil {
		return // the file no longer exists under this name
	}
	syncedInfo, err := clone.Stat(path)
	if err != nil {
		panic(fmt.Sprintf("sim: stat %q in a crash clone: %v", path, err))
	}
	if curInfo.Size() <= syncedInfo.Size() {
		return // nothing appended since the last sync, as for most files: neither copy need be read
	}
	cur, err := readAll(d.mem, path)
	if err != nil {
		return
	}
	synced, err := readAll(clone, path)
	if err != nil {
		panic(fmt.Sprintf("sim: reading %q from a crash clone: %v", path, err))
	}
	if len(cur) <= len(synced) || !bytes.Equal(cur[:len(synced)], synced) {
		return
	}
	if !chance(d.rng, d.profile.TornChance) {
		return
	}
	first := len(synced) / SectorSize
	last := (len(cur) - 1) / SectorSize
	n := last - first + 1
	keep := make([]bool, n)
	if chance(d.rng, d.profile.ReorderChance) {
		for i := range keep {
			keep[i] = d.rng.IntN(2) == 0
		}
	} else {
		k := d.rng.IntN(n + 1)
		for i := 0; i < k; i++ {
			keep[i] = true
		}
	}
	out := slices.Clone(synced)
	for i, kept := range keep {
		if !kept {
			continue
		}
		lo := (first + i) * SectorSize
		hi := min(lo+SectorSize, len(cur))
		if len(out) < hi {
			out = append(out, make([]byte, hi-len(out))...)
		}
		copy(out[lo:hi], cur[lo:hi])
		d.stats.TornSectors++
	}
	if len(out) == len(synced) {
		return
	}
	d.stats.TornFiles++
	writeAll(clone, path, out)
}

// flip inverts one bit of one file at rest.
func (d *Disk) flip(fs *vfs.MemFS) {
	files := walkFiles(fs, "")
	if len(files) == 0 {
		return
	}
	path := files[d.rng.IntN(len(files))]
	data, err := readAll(fs, path)
	if err != nil || len(data) == 0 {
		return
	}
	i := d.rng.IntN(len(data))
	data[i] ^= 1 << d.rng.IntN(8)
	d.stats.Flips++
	writeAll(fs, path, data)
}

// readAll reads a whole file into a buffer of its size.
func readAll(fs vfs.FS, path string) ([]byte, error) {
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
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}

// writeAll replaces a file's content in a crash clone and marks it
// synced: what survived a crash is, after reboot, simply what is on disk.
func writeAll(fs *vfs.MemFS, path string, data []byte) {
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		panic(fmt.Sprintf("sim: reopening %q in a crash clone: %v", path, err))
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		panic(fmt.Sprintf("sim: rewriting %q: %v", path, err))
	}
	if err := f.Sync(); err != nil {
		panic(fmt.Sprintf("sim: syncing %q: %v", path, err))
	}
}
