package node

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Disk pressure. A node watches how much its queues keep on disk and, when
// the file system can say, how much space is left. Past either limit it
// refuses new messages and new queues with disk-full, and nothing else:
// deliveries, acks, replication, checkpoints and compaction go on, so
// consumers can drain the queues and compaction can give the space back.
// It takes messages again, on its own, once there is room with a margin,
// so a queue hovering at the limit does not flap.

// diskCheckTicks is how often, in node ticks, the node looks at its disk.
const diskCheckTicks = 25

// diskState is what the node last found of its disk.
type diskState struct {
	full  bool
	ticks uint64
}

// dataBytes is what the node's queue replicas keep on disk: their logs
// and checkpoints. The metadata is small and left out.
func (n *Node) dataBytes() int64 {
	var total int64
	for _, name := range n.names {
		r := n.queues[name]
		if r.log != nil {
			total += r.log.RetainedBytes()
		}
		total += r.checkpointBytes()
	}
	return total
}

// freeBytes is the space left on the data directory's file system, or -1
// when the file system cannot say (the simulator's disks).
func (n *Node) freeBytes() int64 {
	dir := n.cfg.DataDir
	if dir == "" {
		dir = "."
	}
	u, err := n.env.FS().GetDiskUsage(dir)
	if err != nil {
		return -1
	}
	return int64(min(u.AvailBytes, 1<<62))
}

// checkDisk decides, every diskCheckTicks ticks, whether the node is
// short of space.
func (n *Node) checkDisk() {
	n.disk.ticks++
	if n.disk.ticks%diskCheckTicks != 0 || n.cfg.DiskFreeMin < 0 && n.cfg.DataBytesMax <= 0 {
		return
	}
	// What the replicas hold is a walk over every queue, which a node
	// with 10,000 idle queues spent 6% of its time on: it is counted only
	// under a quota, or for the event that reports a change.
	used, free := int64(-1), n.freeBytes()
	if n.cfg.DataBytesMax > 0 {
		used = n.dataBytes()
	}
	reported := func() int64 {
		if used < 0 {
			return n.dataBytes()
		}
		return used
	}
	if why := n.diskShort(used, free); why != "" {
		if !n.disk.full {
			n.disk.full = true
			n.emit(event.NewNodeDiskFull(reported(), free, why))
		}
		return
	}
	if n.disk.full && n.diskRoomy(used, free) {
		n.disk.full = false
		n.emit(event.NewNodeDiskOK(reported(), free))
	}
}

// diskShort says why the disk is past a limit, or "" if it is not.
func (n *Node) diskShort(used, free int64) string {
	switch {
	case n.cfg.DiskFreeMin >= 0 && free >= 0 && free < n.cfg.DiskFreeMin:
		return fmt.Sprintf("%d bytes free, below the %d-byte watermark", free, n.cfg.DiskFreeMin)
	case n.cfg.DataBytesMax > 0 && used > n.cfg.DataBytesMax:
		return fmt.Sprintf("queues hold %d bytes, past the %d-byte quota", used, n.cfg.DataBytesMax)
	}
	return ""
}

// diskRoomy reports whether a full disk has room again with a margin: an
// eighth of each limit.
func (n *Node) diskRoomy(used, free int64) bool {
	freeOK := n.cfg.DiskFreeMin < 0 || free < 0 || free >= n.cfg.DiskFreeMin+n.cfg.DiskFreeMin/8
	usedOK := n.cfg.DataBytesMax <= 0 || used <= n.cfg.DataBytesMax-n.cfg.DataBytesMax/8
	return freeOK && usedOK
}

// refuseIfDiskFull answers a request that would store something new with
// disk-full while the disk is short, and reports whether it did.
func (n *Node) refuseIfDiskFull(conn ConnID, reqID uint64, what string) bool {
	if !n.disk.full {
		return false
	}
	n.reply(conn, reqID, wire.StatusDiskFull, fmt.Sprintf("this node's disk is short of space, so it takes no new %s until consumers drain its queues or space is freed; deliveries and acks go on", what))
	return true
}

// noteFollowerDisk records whether follower f's node is short of space,
// as its latest reply says.
func (o *ownerState) noteFollowerDisk(f *progress, full bool) {
	if f.diskFull == full {
		return
	}
	f.diskFull = full
	if full {
		o.r.n.emit(event.NewQueueFollowerFull(o.r.name, uint32(f.id)))
	} else {
		o.r.n.emit(event.NewQueueFollowerRoom(o.r.name, uint32(f.id)))
	}
}

// refuseIfReplicaFull answers a publish with disk-full while a follower
// of the queue reports its node short of space, and reports whether it
// did. Every follower stores every message its owner takes, so a full
// one would otherwise be driven past its limit to the end of its device,
// where its writes fail and its replica stops; refusing as the owner
// would for its own disk keeps every replica able to take acks and
// checkpoints, which give the space back.
func (o *ownerState) refuseIfReplicaFull(conn ConnID, reqID uint64) bool {
	for _, f := range o.followers {
		if f.diskFull {
			o.r.n.reply(conn, reqID, wire.StatusDiskFull, fmt.Sprintf("the replica of queue %s on %s is short of space, so the queue takes no new messages until consumers drain it or space is freed there; deliveries and acks go on", o.r.name, f.id))
			return true
		}
	}
	return false
}

// checkpointBytes is what the replica's checkpoint holds on disk: its
// file and its window journal.
func (r *replica) checkpointBytes() int64 {
	n := int64(len(r.ckpt.state))
	if r.journal != nil {
		n += r.journal.log.RetainedBytes()
	}
	return n
}
