package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/cairnmq/cairn/event"
)

// Damage to durable data, and stalled devices. A third of the generated
// queue scenarios draw, from a stream of their own so that no other draw
// moves, one to three faults that break data a disk had made durable:
// a bit that decays in a synced record while its node runs (rot), or a
// crash after which a synced frame reads back damaged (damage). Like lost
// and misdirected writes, every such fault of a seed lands on one node
// (oneLyingDisk), so no queue ever has two broken replicas. A sixth of the
// scenarios, drawn apart, stall the first queue's owner's device once or
// twice for one to three seconds: its syncs wait, longer than a failover
// takes, then complete.

// streamRot draws a generated scenario's damage, rot and stalls.
const streamRot = "rot"

// drawDiskTrouble adds the faults above to a generated queue scenario.
func drawDiskTrouble(sc *Scenario) {
	r := newStream(sc.Seed, streamRot)
	if r.IntN(3) == 0 {
		node := r.IntN(sc.Nodes)
		for range pick(r, 1, 2, 2, 3) {
			f := Fault{At: time.Duration(r.Int64N(int64(sc.Safety))), Kind: pick(r, FaultRot, FaultRot, FaultDamage), Node: node}
			if f.Kind == FaultDamage {
				f.Length = time.Duration(10+r.IntN(1500)) * time.Millisecond
			}
			sc.Faults = append(sc.Faults, f.Normalized())
		}
	}
	if r.IntN(6) == 0 {
		for range pick(r, 1, 1, 2) {
			sc.Faults = append(sc.Faults, Fault{
				At:     time.Duration(r.Int64N(int64(sc.Safety))),
				Kind:   FaultStall,
				Length: time.Second + time.Duration(r.Int64N(int64(2*time.Second))),
			})
		}
	}
}

// rotReplica flips a bit in a synced record of one of p's queue replicas
// (its log or its window journal), drawn among those the fault model lets
// a disk break. For a log record the history learns that the replica no
// longer holds it, nor anything after it, until the replica is replaced
// or the record is cut away: a replica that fences itself on the damage,
// or reads it back as a torn tail at a restart, breaks no promise it
// made. A journal entry leaves the log, and what it owes, whole.
func (w *World) rotReplica(p *process) {
	logs := w.rottableLogs(p)
	if len(logs) == 0 {
		p.tracef("rot skipped: no replica to damage")
		return
	}
	rl := logs[p.disk.rng.IntN(len(logs))]
	rot, ok := p.disk.Rot(rl.dir)
	if !ok {
		p.tracef("rot skipped: %s holds no synced frame", rl.dir)
		return
	}
	w.damaged[damagedKey(p.index, rl.queue)] = true
	w.noteBroken(p)
	w.cov.noteRot(p.id, rl.queue, p.inc)
	p.tracef("rot %s byte %d: %#02x to %#02x, in record %d", rot.Path, rot.Offset, rot.Before, rot.After, rot.Index)
	sound, what := rot.Index-1, fmt.Sprintf("synced record %d", rot.Index)
	if rl.journal {
		// The queue's log is whole: the replica still owes every record
		// it reported, but its checkpoint's window reads back damaged.
		sound, what = math.MaxUint64, fmt.Sprintf("synced entry %d of the window journal", rot.Index)
	}
	w.hist.NodeEvents = append(w.hist.NodeEvents, NodeEvent{At: w.now, Node: p.id, Name: EventRot, Queue: rl.queue, Value: sound})
	w.hist.Story = append(w.hist.Story, StoryEvent{At: w.now, Node: p.id, Queue: rl.queue,
		Text: fmt.Sprintf("fault: a bit decayed in %s, while the node ran", what)})
}

// rottableLogs lists the logs of p's replicas a rot may damage: each
// queue log breakableLogs allows, and beside it the replica's window
// journal (the deduplication window a checkpoint leaves out), which a
// restart, a checkpoint sent to a replica behind and a build all read.
func (w *World) rottableLogs(p *process) []replicaLog {
	var out []replicaLog
	for _, rl := range w.breakableLogs(p, true) {
		out = append(out, rl)
		window := p.disk.mem.PathJoin(p.disk.mem.PathDir(rl.dir), "window")
		if _, err := p.disk.mem.Stat(window); err == nil {
			out = append(out, replicaLog{queue: rl.queue, dir: window, journal: true})
		}
	}
	return out
}

// streamOwnerPause draws a generated scenario's owner pauses.
const streamOwnerPause = "owner-pause"

// drawOwnerPauses stops, in a sixth of the generated queue scenarios, the
// first queue's owner once or twice for 1 to 3 s: past a whole failover,
// so its peers replace it while it sleeps, and its consumers may ack on
// the new owner before it wakes to the lease it held. Random pauses of
// any node last at most 1.5 s and rarely hit the owner for that long.
func drawOwnerPauses(sc *Scenario) {
	r := newStream(sc.Seed, streamOwnerPause)
	if r.IntN(6) != 0 {
		return
	}
	for range pick(r, 1, 1, 2) {
		sc.Faults = append(sc.Faults, Fault{
			At:     time.Duration(r.Int64N(int64(sc.Safety))),
			Kind:   FaultPauseOwner,
			Length: time.Second + time.Duration(r.Int64N(int64(2*time.Second))),
		})
	}
}

// stallDisk holds back p's syncs for length.
func (w *World) stallDisk(p *process, length time.Duration) {
	p.disk.Stall(w.now + length)
	p.tracef("disk stalled until %v", w.now+length)
}

// EventRot is the history event a rot fault records: the node's replica
// of the queue holds, from the fault on, no sound log record past Value,
// and owes none until it is replaced or cut below it. A rot in the
// replica's window journal leaves its log whole: Value is then the
// largest index.
const EventRot event.Name = "sim.rot"
