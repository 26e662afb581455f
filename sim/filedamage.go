package sim

import (
	"fmt"
	"time"

	"github.com/cairnmq/cairn/storage"
)

// Damage to the files beside a replica's records. A replica keeps two
// small state files (its identity and epoch, and its checkpoint) and a
// log cut into segments. A disk can break each of them after they were
// made durable; a replica that meets such damage must fence itself and
// be replaced, never go on from a guess: a lost epoch could let it obey a
// stale owner, a lost checkpoint could let it serve a queue without the
// records compaction dropped, and a sealed segment read as a torn tail
// would drop every record after it.

// replicaStateFiles are the state files of a replica directory that a
// damage-state fault may break, in the order it lists them.
var replicaStateFiles = []string{"replica", "checkpoint"}

// brokenFile is one file a disk may break: the queue whose replica owns
// it, its path, and for a sealed segment its first index and the length
// its successor vouches for.
type brokenFile struct {
	queue, path string
	first       uint64
	valid       int64
}

// breakFile applies a damage-state or truncate fault to what p's disk kept
// at its crash: it draws one file among those the fault model lets a disk
// break and damages it, and the history learns what the replica lost.
func (w *World) breakFile(p *process, kind FaultKind) {
	var files []brokenFile
	if kind == FaultDamageState {
		files = w.stateFiles(p)
	} else {
		files = w.sealedSegments(p)
	}
	if len(files) == 0 {
		p.tracef("%s skipped: no file the fault model lets a disk break", kind)
		return
	}
	f := files[p.disk.rng.IntN(len(files))]
	fs := p.disk.mem
	var story string
	lostFrom := uint64(1)
	if kind == FaultDamageState {
		data, err := readAll(fs, f.path)
		if err != nil {
			panic(fmt.Sprintf("sim: reading %s: %v", f.path, err))
		}
		at := p.disk.rng.IntN(len(data))
		bit := byte(1) << p.disk.rng.IntN(8)
		data[at] ^= bit
		writeAll(fs, f.path, data)
		p.disk.stats.Flips++
		p.tracef("damage-state %s byte %d: bit %#02x flipped", f.path, at, bit)
		story = fmt.Sprintf("fault: a bit flipped in the replica's %s file (byte %d)", fs.PathBase(f.path), at)
	} else {
		n := p.disk.rng.Int64N(f.valid)
		if err := storage.CutFile(fs, f.path, n); err != nil {
			panic(fmt.Sprintf("sim: cutting %s: %v", f.path, err))
		}
		lostFrom = f.first
		p.tracef("truncate %s to %d of %d valid bytes", f.path, n, f.valid)
		story = fmt.Sprintf("fault: the sealed segment from index %d lost its end (%d of %d bytes kept)", f.first, n, f.valid)
	}
	w.damaged[damagedKey(p.index, f.queue)] = true
	w.cov.noteBroken(p.id, f.queue, kind)
	// The replica fences itself when it opens the file, so it owes
	// nothing it reported from lostFrom on: a damaged epoch or checkpoint
	// unsettles all it holds, a cut segment everything from its start.
	w.recordLostWrites(p, f.queue, lostFrom, story)
}

// stateFiles lists the state files of p's replicas that a damage-state
// fault may break: those of every replica breakableLogs allows.
func (w *World) stateFiles(p *process) []brokenFile {
	fs := p.disk.mem
	var out []brokenFile
	for _, rl := range w.breakableLogs(p, true) {
		dir := fs.PathDir(rl.dir)
		for _, name := range replicaStateFiles {
			path := fs.PathJoin(dir, name)
			if info, err := fs.Stat(path); err == nil && info.Size() > 0 {
				out = append(out, brokenFile{queue: rl.queue, path: path})
			}
		}
	}
	return out
}

// sealedSegments lists the sealed segments of p's queue logs that a
// truncate fault may cut: those of every replica breakableLogs allows.
func (w *World) sealedSegments(p *process) []brokenFile {
	fs := p.disk.mem
	var out []brokenFile
	for _, rl := range w.breakableLogs(p, true) {
		sealed, err := storage.SealedSegments(fs, rl.dir)
		if err != nil && w.damaged[damagedKey(p.index, rl.queue)] {
			continue // an earlier fault cut a segment's header: this log is broken already
		}
		if err != nil {
			panic(fmt.Sprintf("sim: listing the sealed segments of %s: %v", rl.dir, err))
		}
		for _, s := range sealed {
			if s.Valid > 0 && s.Size >= s.Valid { // not cut already by an earlier fault
				out = append(out, brokenFile{queue: rl.queue, path: s.Path, first: s.FirstIndex, valid: s.Valid})
			}
		}
	}
	return out
}

// streamBrokenFiles draws a generated scenario's damage to state files and
// sealed segments.
const streamBrokenFiles = "broken-files"

// drawBrokenFiles adds, in a quarter of the generated queue scenarios, one
// or two crashes after which the disk broke a replica's file: a bit
// flipped in a state file (damage-state) or a sealed segment cut short
// (truncate). Like every fault that breaks a replica, they land on the
// seed's one lying disk (oneLyingDisk). They come from a stream of their
// own, so no other draw of a seed moves.
func drawBrokenFiles(sc *Scenario) {
	r := newStream(sc.Seed, streamBrokenFiles)
	if r.IntN(4) != 0 {
		return
	}
	for range pick(r, 1, 1, 2) {
		sc.Faults = append(sc.Faults, Fault{
			At:     time.Duration(r.Int64N(int64(sc.Safety))),
			Kind:   pick(r, FaultDamageState, FaultTruncate),
			Node:   r.IntN(sc.Nodes),
			Length: time.Duration(10+r.IntN(1500)) * time.Millisecond,
		})
	}
}
