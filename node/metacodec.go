package node

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// metaSnapshotVersion is written at the start of every metadata snapshot.
// Version 2 added each queue's prior replica set, version 3 its damaged
// replicas, version 4 its certified checkpoint cut, version 5 its
// deduplication window, version 6 its dead-letter queue and delivery
// limit (which a later command may change: the snapshot holds the
// current setting); older versions are still read, their queues with the
// default window and no limit. Version 7 added the member list; a
// snapshot before it takes its members from raft's configuration. It
// also added whether a rebalance is under way.
const metaSnapshotVersion = 7

func appendNodes(b []byte, ids []NodeID) []byte {
	b = wire.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = wire.AppendUint32(b, uint32(id))
	}
	return b
}

func decodeNodes(d *wire.Decoder) []NodeID {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	out := make([]NodeID, n)
	for i := range out {
		out[i] = NodeID(d.Uint32())
	}
	return out
}

func appendQueueMeta(b []byte, q *QueueMeta) []byte {
	b = wire.AppendString(b, q.Name)
	b = wire.AppendUint64(b, q.Incarnation)
	b = wire.AppendUint64(b, q.HistoryID)
	b = wire.AppendUint64(b, q.SessionID)
	b = wire.AppendUint8(b, uint8(q.Policy))
	b = appendNodes(b, q.Replicas)
	b = wire.AppendUint32(b, uint32(q.Owner))
	b = wire.AppendUint64(b, q.OwnerProcess)
	b = wire.AppendUint64(b, q.Epoch)
	b = wire.AppendUint8(b, uint8(q.State))
	b = appendNodes(b, q.Prepared)
	b = appendNodes(b, q.Activated)
	b = wire.AppendUint32(b, uint32(q.CreatedBy.Node))
	return wire.AppendUint64(b, q.CreatedBy.Seq)
}

func decodeQueueMeta(d *wire.Decoder) QueueMeta {
	return QueueMeta{
		Name: d.String(), Incarnation: d.Uint64(), HistoryID: d.Uint64(), SessionID: d.Uint64(),
		Policy: wire.Policy(d.Uint8()), Replicas: decodeNodes(d), Owner: NodeID(d.Uint32()),
		OwnerProcess: d.Uint64(), Epoch: d.Uint64(), State: QueueState(d.Uint8()),
		Prepared: decodeNodes(d), Activated: decodeNodes(d),
		CreatedBy: proposalID{Node: NodeID(d.Uint32()), Seq: d.Uint64()},
	}
}

func appendPolicy(b []byte, p DetectionPolicy) []byte {
	b = wire.AppendUint8(b, p.Mode)
	b = wire.AppendInt64(b, int64(p.Interval))
	return wire.AppendInt64(b, int64(p.Grace))
}

func decodePolicy(d *wire.Decoder) DetectionPolicy {
	return DetectionPolicy{Mode: d.Uint8(), Interval: time.Duration(d.Int64()), Grace: time.Duration(d.Int64())}
}

func encodeCommand(c command) []byte {
	b := wire.AppendUint8(nil, c.kind)
	b = wire.AppendUint32(b, uint32(c.from.Node))
	b = wire.AppendUint64(b, c.from.Seq)
	switch c.kind {
	case cmdCreate:
		b = appendQueueMeta(b, &c.queue)
		// The window comes last and only when set, so a create command
		// written before it, or without one, reads the same. The
		// dead-letter queue and its limit follow it, with the window
		// written (zero if unset) whenever they are.
		dead := c.queue.DeadLetter != ""
		if c.queue.DedupWindow != 0 || dead {
			b = wire.AppendInt64(b, int64(c.queue.DedupWindow))
		}
		if dead {
			b = wire.AppendString(b, c.queue.DeadLetter)
			b = wire.AppendUint32(b, c.queue.MaxDeliveries)
		}
	case cmdPrepared, cmdActivate, cmdBumpEpoch, cmdDelete, cmdStartRecovery, cmdActivateRecovered, cmdReplicaLost, cmdReplacePreparing:
		b = wire.AppendString(b, c.name)
		b = wire.AppendUint64(b, c.inc)
		b = wire.AppendUint32(b, uint32(c.node))
		b = wire.AppendUint64(b, c.process)
		b = wire.AppendUint64(b, c.epoch)
		b = appendNodes(b, c.members)
	case cmdSetDetection:
		b = appendPolicy(b, c.policy)
	case cmdNodeDown, cmdNodeUp:
		b = wire.AppendUint32(b, uint32(c.node))
	case cmdCertifyCheckpoint:
		b = wire.AppendString(b, c.name)
		b = wire.AppendUint64(b, c.inc)
		b = wire.AppendUint32(b, uint32(c.node))
		b = wire.AppendUint64(b, c.epoch)
		b = wire.AppendUint64(b, c.cut)
		b = appendNodes(b, c.members)
	case cmdSetDeadLetter:
		b = wire.AppendString(b, c.name)
		b = wire.AppendUint64(b, c.inc)
		b = wire.AppendString(b, c.deadLetter)
		b = wire.AppendUint32(b, c.maxDeliveries)
	case cmdAddMember:
		b = wire.AppendUint32(b, uint32(c.node))
		b = wire.AppendString(b, c.addr)
		b = wire.AppendString(b, c.clientAddr)
		b = wire.AppendString(b, c.httpAddr)
	case cmdPromote, cmdDemote, cmdLeave, cmdRemoveMember:
		b = wire.AppendUint32(b, uint32(c.node))
	case cmdRebalance, cmdRebalanced:
	default:
		panic(fmt.Sprintf("node: encoding unknown metadata command %d", c.kind))
	}
	return b
}

func decodeCommand(data []byte) (command, error) {
	d := wire.NewDecoder(data)
	c := command{kind: d.Uint8(), from: proposalID{Node: NodeID(d.Uint32()), Seq: d.Uint64()}}
	switch c.kind {
	case cmdCreate:
		c.queue = decodeQueueMeta(d)
		if d.More() {
			c.queue.DedupWindow = time.Duration(d.Int64())
		}
		if d.More() {
			c.queue.DeadLetter, c.queue.MaxDeliveries = d.String(), d.Uint32()
		}
	case cmdPrepared, cmdActivate, cmdBumpEpoch, cmdDelete, cmdStartRecovery, cmdActivateRecovered, cmdReplicaLost, cmdReplacePreparing:
		c.name, c.inc, c.node = d.String(), d.Uint64(), NodeID(d.Uint32())
		c.process, c.epoch, c.members = d.Uint64(), d.Uint64(), decodeNodes(d)
	case cmdSetDetection:
		c.policy = decodePolicy(d)
	case cmdNodeDown, cmdNodeUp:
		c.node = NodeID(d.Uint32())
	case cmdCertifyCheckpoint:
		c.name, c.inc, c.node = d.String(), d.Uint64(), NodeID(d.Uint32())
		c.epoch, c.cut, c.members = d.Uint64(), d.Uint64(), decodeNodes(d)
	case cmdSetDeadLetter:
		c.name, c.inc = d.String(), d.Uint64()
		c.deadLetter, c.maxDeliveries = d.String(), d.Uint32()
	case cmdAddMember:
		c.node, c.addr, c.clientAddr, c.httpAddr = NodeID(d.Uint32()), d.String(), d.String(), d.String()
	case cmdPromote, cmdDemote, cmdLeave, cmdRemoveMember:
		c.node = NodeID(d.Uint32())
	case cmdRebalance, cmdRebalanced:
	default:
		return command{}, fmt.Errorf("unknown metadata command %d", c.kind)
	}
	return c, d.Finish()
}

// encode writes the whole state, in a canonical order.
func (s *metaState) encode() []byte {
	b := wire.AppendUint8(nil, metaSnapshotVersion)
	b = wire.AppendUint64(b, s.applied)
	b = appendPolicy(b, s.detection)
	b = appendNodes(b, slices.Sorted(maps.Keys(s.down)))
	names := s.queueNames()
	b = wire.AppendUint32(b, uint32(len(names)))
	for _, name := range names {
		b = appendQueueMeta(b, s.queues[name])
		b = appendNodes(b, s.queues[name].Prior)
		b = appendNodes(b, s.queues[name].Lost)
		b = wire.AppendUint64(b, s.queues[name].CheckpointCut)
		b = wire.AppendInt64(b, int64(s.queues[name].DedupWindow))
		b = wire.AppendString(b, s.queues[name].DeadLetter)
		b = wire.AppendUint32(b, s.queues[name].MaxDeliveries)
	}
	b = wire.AppendUint32(b, uint32(len(s.members)))
	for _, m := range s.members {
		b = wire.AppendUint32(b, uint32(m.ID))
		b = wire.AppendString(b, m.Addr)
		b = wire.AppendString(b, m.ClientAddr)
		b = wire.AppendString(b, m.HTTPAddr)
		b = wire.AppendBool(b, m.Learner)
		b = wire.AppendBool(b, m.Leaving)
	}
	b = wire.AppendUint32(b, uint32(s.lastMember))
	return wire.AppendBool(b, s.rebalance)
}

func decodeMetaState(data []byte) (*metaState, error) {
	d := wire.NewDecoder(data)
	v := d.Uint8()
	if v < 1 || v > metaSnapshotVersion {
		return nil, fmt.Errorf("metadata snapshot version %d, want 1 to %d", v, metaSnapshotVersion)
	}
	s := &metaState{queues: make(map[string]*QueueMeta), down: make(map[NodeID]bool)}
	s.applied = d.Uint64()
	s.detection = decodePolicy(d)
	for _, id := range decodeNodes(d) {
		s.down[id] = true
	}
	n := d.Count(8)
	for range n {
		q := decodeQueueMeta(d)
		if v >= 2 {
			q.Prior = decodeNodes(d)
		}
		if v >= 3 {
			q.Lost = decodeNodes(d)
		}
		if v >= 4 {
			q.CheckpointCut = d.Uint64()
		}
		if v >= 5 {
			q.DedupWindow = time.Duration(d.Int64())
		}
		if v >= 6 {
			q.DeadLetter, q.MaxDeliveries = d.String(), d.Uint32()
		}
		s.queues[q.Name] = &q
	}
	if v >= 7 {
		for range d.Count(15) {
			s.members = append(s.members, Member{ID: NodeID(d.Uint32()), Addr: d.String(), ClientAddr: d.String(), HTTPAddr: d.String(), Learner: d.Bool(), Leaving: d.Bool()})
		}
		s.lastMember = NodeID(d.Uint32())
		s.rebalance = d.Bool()
		for i := 1; i < len(s.members); i++ {
			if s.members[i].ID <= s.members[i-1].ID {
				return nil, fmt.Errorf("metadata members out of order: %s after %s", s.members[i].ID, s.members[i-1].ID)
			}
		}
	}
	return s, d.Finish()
}
