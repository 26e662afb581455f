package sim

import (
	"fmt"
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

// rotReplica flips a bit in a synced record of one of p's queue replicas,
// drawn among those the fault model lets a disk break. The history learns
// that the replica no longer holds the record, nor anything after it,
// until the replica is replaced or the record is cut away: a replica that
// fences itself on the damage, or reads it back as a torn tail at a
// restart, breaks no promise it made.
func (w *World) rotReplica(p *process) {
	logs := w.breakableLogs(p, true)
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
	w.cov.noteRot(p.id, rl.queue, p.inc)
	p.tracef("rot %s byte %d: %#02x to %#02x, in record %d", rot.Path, rot.Offset, rot.Before, rot.After, rot.Index)
	w.hist.NodeEvents = append(w.hist.NodeEvents, NodeEvent{At: w.now, Node: p.id, Name: EventRot, Queue: rl.queue, Value: rot.Index - 1})
	w.hist.Story = append(w.hist.Story, StoryEvent{At: w.now, Node: p.id, Queue: rl.queue,
		Text: fmt.Sprintf("fault: a bit decayed in synced record %d, while the node ran", rot.Index)})
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
// of the queue holds, from the fault on, no sound record past Value, and
// owes none until it is replaced or cut below it.
const EventRot event.Name = "sim.rot"
