package sim

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The fault model: what the simulator does to a cluster, how often the
// swarm draws it, and what it leaves out. Each seed draws a profile
// (mixed twice as often as the others, crash-heavy, partition-heavy,
// fsync-heavy, clean); a profile picks fault kinds, each joining with
// chance 0.5 (mixed, fsync-heavy) or 0.75 (crash- and partition-heavy),
// and schedules up to 13, 20 or 6 faults at uniform times in the safety
// phase, most lasting 10 ms to 1.5 s.
//
// Processes: crash and restart (crash, crash-owner, crash-leader,
// crash-all, crash-leader-owner), crash at the k-th hit of a named
// transition boundary (crash-at, k in 1..3), pause (events held, then
// replayed; pause-owner stops the first queue's owner for 1-3 s, past a
// failover), clock skew (up to ±500 ms at start) and jumps (±2 s).
// Clients: a consumer restarts (restart-consumer): its connections close,
// the nodes hand back what it leased, and a new client finds each
// queue's owner afresh, so it can land on a new owner while the others
// still work with the old one.
//
// Network, per link: latency with a tail (up to 5% of messages 20-220 ms
// late), loss 0/1/5%, duplication 0/1/5%, reordering 0/2/10%; scheduled
// one-way cuts, isolation of a node or of the metadata leader, splits
// into two groups, clogged links, latency spikes, lossy nodes (a third of
// their messages lost). Partitions are silent; a crashed peer's
// connections reset after a round trip.
//
// Disks, per node: sync latency with a tail; EIO on sync (0, 0.2% or 2%
// of syncs; 1-5% in fsync-heavy seeds), on write (0 or 0.05%) and on read
// (0 or 0.05%); at a crash, unsynced data is lost, torn at 512-byte sectors
// (a surviving prefix, chance 0.5 or 0.9) or with sectors reordered
// (chance 0.3); bit flips at rest in what a crash kept (chance 0.2, in
// seeds that allow them). Lying disks: lose-writes crashes a node whose
// disk then loses the last 1..30 frames of each queue replica's newest
// segment, synced or not; misdirect lands them over the segment's first
// frames instead (damage inside the synced range, or, when nothing later
// proves them synced, a torn tail that drops the whole segment); damage
// crashes a node whose disk then holds a flipped bit in its first queue's
// oldest retained record; rot flips a bit of a synced record while the
// node runs, where the next read meets it; damage-state crashes a node
// whose disk then holds a flipped bit in a replica's state file (epoch or
// checkpoint), and truncate one whose disk lost the end of a sealed log
// segment (filedamage.go), and lose-disk one whose whole disk is gone, so
// it rejoins over an empty data directory (lostdisk.go). Every such fault
// of a seed hits one node, so a queue never has two lying replicas at
// once (rot.go draws damage and rot, filedamage.go damage-state and
// truncate, lostdisk.go lose-disk). Stalls hold a queue owner's
// syncs for 1-3 s.
//
// Not modelled: a lying disk under the metadata raft log (raft assumes
// storage that keeps what it acknowledged; a voter that forgot entries
// could elect a leader without committed ones; a lost disk is modelled,
// since the node knows it and rejoins without voting until caught up),
// a lost disk without Rejoin (nothing tells the node), lying disks on two
// replicas of one queue, lost writes on an owner-only queue (its owner's
// disk is the only copy by design) and damage to an all-policy queue in a
// cluster with no spare node (it could never activate again), lost
// directory entries once their directory was synced, disks that fill up
// below the node's data quota (a quarter of the checkpointing seeds set a
// quota small enough to reach), damage to a node's identity file or its
// metadata files, corruption in transit (frames carry CRCs, but no fault flips them), and
// clocks that run at a different rate rather than jump.

// crashThenBreak crashes p for a fault that breaks its disk, then has
// breakDisk break what the crash left, and records that p's disk is no
// longer sound.
func crashThenBreak(p *process, f Fault, breakDisk func()) {
	crashThen(p, f, func() {
		breakDisk()
		p.w.noteBroken(p)
	})
}

// crashThen crashes p for f, then has after change what the crash left.
// A paused process is resumed first, so that it crashes as a running one
// would; one already down is left alone, its disk untouched.
func crashThen(p *process, f Fault, after func()) {
	if p.state == statePaused {
		p.resume()
	}
	if p.state == stateUp {
		p.crash("fault: "+f.Kind.String(), f.Length)
		after()
	}
}

// noteBroken records that a fault broke durable data on p's disk, unless
// an earlier one did.
func (w *World) noteBroken(p *process) {
	if w.hist.Broken == nil {
		w.hist.Broken = make(map[node.NodeID]time.Duration)
	}
	if _, ok := w.hist.Broken[p.id]; !ok {
		w.hist.Broken[p.id] = w.now
	}
}

// applyFault starts one scheduled fault, and schedules its end.
func (w *World) applyFault(f Fault) {
	if w.live {
		return
	}
	w.trace.line(w.now, "sim", "fault %s", f)
	w.noteFaultTouches(f)
	p := w.procs[f.Node]
	a, b := netsim.Addr(p.id), netsim.Addr(w.procs[f.Peer].id)
	end := w.now + f.Length
	switch f.Kind {
	case FaultCrash:
		if p.state == statePaused {
			p.resume()
		}
		p.crash("fault", f.Length)
	case FaultDamage:
		crashThenBreak(p, f, func() { w.damageFirstQueue(p) })
	case FaultDamageState, FaultTruncate:
		crashThenBreak(p, f, func() { w.breakFile(p, f.Kind) })
	case FaultLoseDisk:
		crashThenBreak(p, f, func() { w.loseDisk(p) })
	case FaultRestartEIO:
		crashThen(p, f, func() { p.disk.trapReads(readClass(f.Hit)) }) // a read error breaks nothing
	case FaultIsolateRestingOwner:
		w.armRestingOwnerCut(f)
	case FaultStackLoss:
		w.armStackLoss(f)
	case FaultLoseWrites, FaultMisdirect:
		crashThenBreak(p, f, func() { w.loseWrites(p, f.Hit, f.Kind == FaultMisdirect) })
	case FaultStop:
		w.stopGracefully(p, f.Length)
	case FaultCrashAt:
		p.armed = append(p.armed, armedCrash{boundary: f.Boundary, remaining: f.Hit, down: f.Length})
	case FaultCrashAtStep:
		w.stepCrashes = append(w.stepCrashes, armedCrash{boundary: f.Boundary, remaining: 1, down: f.Length})
	case FaultPause:
		p.pause()
		w.schedule(end, -1, 0, p.resume)
	case FaultIsolate:
		w.isolate(p, f.Length)
	case FaultOneWay:
		w.net.Block(a, b)
		w.schedule(end, -1, 0, func() { w.net.Unblock(a, b) })
	case FaultSplit:
		in, out := w.splitGroups(f.Group)
		w.net.Partition(in, out)
		w.schedule(end, -1, 0, func() {
			for _, x := range in {
				for _, y := range out {
					w.net.Unblock(x, y)
					w.net.Unblock(y, x)
				}
			}
		})
	case FaultClog:
		w.net.Clog(a, b, end)
	case FaultSpike:
		w.net.Spike(a, b, f.Extra, end)
	case FaultClockJump:
		p.clockOffset += f.Extra
		w.hist.ClockJumps = append(w.hist.ClockJumps, ClockJump{At: w.now, Node: p.id, By: f.Extra})
	case FaultCrashLeader, FaultIsolateLeader, FaultCrashAll, FaultCrashLeaderOwner, FaultSetDetection, FaultCrashOwner,
		FaultIsolateOwner:
		w.applyMetaFault(f)
	case FaultLossy:
		w.makeLossy(p, f.Length)
	case FaultRestartConsumer:
		w.restartConsumer(f.Hit, f.Length, false)
	case FaultVanishConsumer:
		w.restartConsumer(f.Hit, f.Length, true)
	case FaultAddNode, FaultRemoveNode, FaultRebalance:
		w.changeMembership(f)
	case FaultRot:
		if p.state != stateDown {
			w.rotReplica(p)
		}
	case FaultStall:
		if owner := w.firstQueueOwner(); owner != nil {
			// A stall ends with the safety phase, as every other fault
			// does (the calm phase heals, resumes and restarts): a device
			// that still held back its syncs then would keep the calm
			// phase from being calm, and its failover from its bound.
			w.stallDisk(owner, min(f.Length, w.sc.Safety-w.now))
		}
	case FaultPauseOwner:
		if owner := w.firstQueueOwner(); owner != nil && owner.state == stateUp {
			owner.pause()
			w.schedule(end, -1, 0, func() {
				if cur := w.firstQueueOwner(); owner.state == statePaused && cur != nil && cur != owner {
					w.cov.probes[ProbeOwnerWokeReplaced]++
				}
				owner.resume()
			})
		}
	}
}

// makeLossy loses a third of the messages on every link of p, both ways,
// until the fault ends; then the links get the swarm's profile back.
func (w *World) makeLossy(p *process, length time.Duration) {
	lossy := w.sc.Swarm.Net
	lossy.Loss = max(lossy.Loss, 1.0/3)
	a := netsim.Addr(p.id)
	for _, o := range w.addrs() {
		if o != a {
			w.net.SetProfile(a, o, lossy)
			w.net.SetProfile(o, a, lossy)
		}
	}
	w.schedule(w.now+length, -1, 0, func() {
		if w.live {
			return // the liveness phase already calmed every link
		}
		for _, o := range w.addrs() {
			if o != a {
				w.net.SetProfile(a, o, w.sc.Swarm.Net)
				w.net.SetProfile(o, a, w.sc.Swarm.Net)
			}
		}
	})
}

// isolate cuts p from every peer, both ways, for length; its clients
// still reach it.
func (w *World) isolate(p *process, length time.Duration) {
	w.cutFrom(p, w.addrs(), length)
}

// cutFrom cuts p from every address of others, both ways, for length.
func (w *World) cutFrom(p *process, others []netsim.Addr, length time.Duration) {
	a := netsim.Addr(p.id)
	w.net.Isolate(a, others)
	w.schedule(w.now+length, -1, 0, func() {
		for _, o := range others {
			if o != a {
				w.net.Unblock(a, o)
				w.net.Unblock(o, a)
			}
		}
	})
}

// applyMetaFault applies the faults aimed at the metadata group. The
// leader is the node that most recently announced leadership, as the
// trace shows it.
func (w *World) applyMetaFault(f Fault) {
	leader := w.leaderProc()
	switch f.Kind {
	case FaultCrashLeader:
		if leader != nil {
			leader.crash("fault: leader", f.Length)
		}
	case FaultIsolateLeader:
		if leader != nil {
			w.isolate(leader, f.Length)
		}
	case FaultIsolateOwner:
		if owner := w.firstQueueOwner(); owner != nil {
			w.isolate(owner, f.Length)
		}
	case FaultCrashAll:
		for _, p := range w.procs {
			p.crash("fault: all", f.Length)
		}
	case FaultCrashLeaderOwner:
		// The owner goes first, so a node holding both roles is recorded
		// as the owner it also was.
		if owner := w.firstQueueOwner(); owner != nil {
			owner.crash("fault: owner", f.Length)
		}
		if leader != nil {
			leader.crash("fault: leader", f.Length)
		}
	case FaultCrashOwner:
		if owner := w.firstQueueOwner(); owner != nil {
			owner.crash("fault: owner", f.Length)
		}
	case FaultSetDetection:
		if len(w.clients) > 0 {
			w.clients[0].setDetection(uint8(f.Hit))
		}
	}
}

// leaderProc is the running metadata leader, as the system announced it;
// nil when no leader is known or it is down.
func (w *World) leaderProc() *process {
	t, ok := w.sys.(Targets)
	if !ok {
		return nil
	}
	id, ok := t.MetaLeader()
	if !ok || w.procs[int(id)-1].state == stateDown {
		return nil
	}
	return w.procs[int(id)-1]
}

// firstQueueOwner is the running owner of the workload's first queue:
// the node that activated it at the highest epoch, or before any
// activation, its placement owner. It is nil when that node is down.
func (w *World) firstQueueOwner() *process {
	if w.sc.Workload == nil || len(w.sc.Workload.Queues) == 0 {
		return nil
	}
	return w.queueOwner(w.sc.Workload.Queues[0].Name)
}

// queueOwner is the process that owns the queue name, as the nodes
// announced it (its placement owner before any did), unless it is down.
func (w *World) queueOwner(name string) *process {
	owner := node.Placement{Nodes: w.Founders(), Replicas: w.sc.ReplicaCount()}.Owner(name)
	if t, ok := w.sys.(Targets); ok {
		if id, ok := t.QueueOwner(name); ok {
			owner = id
		}
	}
	if p := w.procs[int(owner)-1]; p.state != stateDown {
		return p
	}
	return nil
}

func (w *World) splitGroups(group []int) (in, out []netsim.Addr) {
	member := make([]bool, len(w.procs))
	for _, i := range group {
		member[i] = true
	}
	for i, p := range w.procs {
		if member[i] {
			in = append(in, netsim.Addr(p.id))
		} else {
			out = append(out, netsim.Addr(p.id))
		}
	}
	return in, out
}

// damageOffset is where a damage fault flips a bit in a replica's first
// log segment: past the segment header, inside its first frame, which is
// synced and never the last frame of a log that holds a few records (a
// damaged last frame reads as a torn tail, storage's documented blind
// spot, which is not what this fault is for).
const damageOffset = 64 + 30

// damageFirstQueue flips one bit early in the first segment of p's
// replica of the scenario's first queue, on the disk as the crash left
// it.
func (w *World) damageFirstQueue(p *process) {
	if w.sc.Workload == nil || len(w.sc.Workload.Queues) == 0 {
		return
	}
	w.damageReplica(p, w.sc.Workload.Queues[0].Name)
}

// damageReplica flips a bit early in p's replica of queue, as
// damageFirstQueue does for the first queue.
func (w *World) damageReplica(p *process, queue string) {
	fs := p.disk.mem
	for _, rl := range w.breakableLogs(p, true) {
		if rl.queue != queue {
			continue
		}
		path := firstSegment(fs, rl.dir)
		data, err := readAll(fs, path)
		if err != nil || len(data) < 4*damageOffset {
			p.tracef("damage skipped: %s holds %d bytes", path, len(data))
			return
		}
		data[damageOffset] ^= 0x10
		writeAll(fs, path, data)
		w.damaged[damagedKey(p.index, rl.queue)] = true
		p.disk.stats.Flips++
		p.tracef("damage %s at byte %d", path, damageOffset)
		// The flipped byte lies in the segment's first record, whose index
		// names the file. When no later frame proves that record synced,
		// the log reads it as a torn tail and drops everything from it,
		// as it must: the replica no longer owes any of that.
		first, err := strconv.ParseUint(strings.TrimSuffix(fs.PathBase(path), ".seg"), 10, 64)
		if err != nil || first == 0 {
			panic(fmt.Sprintf("sim: segment %s is not named by its first index", path))
		}
		w.recordLostWrites(p, rl.queue, first,
			fmt.Sprintf("fault: a bit flipped in a synced record of the first retained segment (byte %d)", damageOffset))
		return
	}
	p.tracef("damage skipped: no replica of %s the fault model lets a disk break", w.sc.Workload.Queues[0].Name)
}

// firstSegment is the path of the oldest segment a log directory holds:
// the first one, or after compaction the first one retained.
func firstSegment(fs vfs.FS, dir string) string {
	names, _ := fs.List(dir)
	slices.Sort(names)
	for _, name := range names {
		if strings.HasSuffix(name, ".seg") {
			return fs.PathJoin(dir, name)
		}
	}
	return fs.PathJoin(dir, "00000000000000000001.seg")
}

func damagedKey(index int, queue string) string { return strconv.Itoa(index) + "/" + queue }

// loseWrites makes p's disk, as the crash left it, lose the last frames
// writes of every queue replica p holds (or, with misdirect, put them
// over the segment's first frames). The history records each loss, so
// the durability checker does not hold the replica to what its disk
// threw away; a misdirected write is damage, like a damage fault's.
func (w *World) loseWrites(p *process, frames int, misdirect bool) {
	fs := p.disk.mem
	for _, rl := range w.breakableLogs(p, misdirect) {
		queue, logDir := rl.queue, rl.dir
		if misdirect {
			from, err := storage.MisdirectLastFrames(fs, logDir, frames)
			if err != nil {
				panic(fmt.Sprintf("sim: misdirecting writes in %s: %v", logDir, err))
			}
			if from > 0 {
				// Read as damage, the replica fences itself; read as a
				// torn tail, it lost everything from there.
				w.damaged[damagedKey(p.index, queue)] = true
				p.disk.stats.Flips++
				p.tracef("misdirect %s: %d frames over index %d on", logDir, frames, from)
				w.recordLostWrites(p, queue, from, fmt.Sprintf("fault: misdirected writes over index %d on", from))
				continue
			}
		}
		n, from, err := storage.LoseLastFrames(fs, logDir, frames)
		if err != nil {
			panic(fmt.Sprintf("sim: losing writes in %s: %v", logDir, err))
		}
		if n == 0 {
			continue
		}
		p.disk.stats.LostWrites += n
		w.damaged[damagedKey(p.index, queue)] = true
		p.tracef("lose-writes %s: %d frames from index %d", logDir, n, from)
		w.recordLostWrites(p, queue, from, fmt.Sprintf("fault: lost writes from index %d on", from))
	}
}

// removesNodes reports whether the scenario asks the cluster to remove a
// member at any time.
func (w *World) removesNodes() bool {
	return slices.ContainsFunc(w.sc.Faults, func(f Fault) bool { return f.Kind == FaultRemoveNode })
}

// replicaLog is one queue replica's log directory on a node's disk:
// its queue log, or its window journal.
type replicaLog struct {
	queue, dir string
	journal    bool
}

// breakableLogs lists, in order, the replica logs on p's disk that the
// fault model lets a lying disk break; damage says the fault leaves
// damage the replica will fence itself on, not just a shorter log.
func (w *World) breakableLogs(p *process, damage bool) []replicaLog {
	fs := p.disk.mem
	dirs, _ := fs.List("queues")
	slices.Sort(dirs)
	var out []replicaLog
	for _, d := range dirs {
		queue, _, ok := node.ParseReplicaDir(d)
		if !ok {
			continue // not a replica: one being removed, renamed aside first
		}
		logDir := fs.PathJoin("queues", d, "log")
		if _, err := fs.Stat(logDir); errors.Is(err, iofs.ErrNotExist) {
			continue // the replica has made no log yet: nothing to break
		}
		policy := w.policyOf(queue)
		if policy == wire.PolicyOwnerOnly {
			// Its owner's storage is the only copy: a disk that loses
			// synced writes there loses what was confirmed, by design of
			// the policy. The fault model leaves such queues alone.
			continue
		}
		if damage && policy == wire.PolicyAll && (len(w.placeable()) <= w.sc.ReplicaCount() || w.removesNodes()) {
			// Damage fences the replica for good, and with no member
			// outside the set to replace it (spares not yet admitted and
			// members leaving do not count), a queue that confirms only
			// on every replica can never confirm or activate again. A
			// removal scheduled later can take the spare away before the
			// replacement, so a scenario with removals spares them too.
			continue
		}
		out = append(out, replicaLog{queue: queue, dir: logDir})
	}
	return out
}

// recordLostWrites tells the history that p's replica of queue holds
// nothing from index from on, because a fault said so.
func (w *World) recordLostWrites(p *process, queue string, from uint64, story string) {
	w.hist.NodeEvents = append(w.hist.NodeEvents, NodeEvent{At: w.now, Node: p.id, Name: EventLostWrites, Queue: queue, Value: from - 1})
	w.hist.Story = append(w.hist.Story, StoryEvent{At: w.now, Node: p.id, Queue: queue, Text: story})
}

// policyOf is the confirmation policy the workload gives queue.
func (w *World) policyOf(queue string) wire.Policy {
	if w.sc.Workload != nil {
		for _, q := range w.sc.Workload.Queues {
			if q.Name == queue {
				return q.Policy
			}
		}
	}
	return wire.PolicyMajority
}

// EventLostWrites is the history event a lost-writes fault records: the
// named replica on Node now holds nothing after index Value. The
// simulator records it, not a node, so it is not among event.Names.
const EventLostWrites event.Name = "sim.lost-writes"
