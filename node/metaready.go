package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// process takes Readies one at a time. A Ready's snapshot and entries are
// made durable, then its hard state, and only then are its messages sent,
// its committed entries applied and raft advanced: no message that depends
// on a write leaves before the write is on disk.
func (m *metaNode) process() {
	m.passHeldProposals()
	for m.rn != nil && !m.busy && m.rn.HasReady() {
		rd := m.rn.Ready()
		m.busy = true
		if rd.SoftState != nil {
			m.noteSoftState(rd.SoftState)
		}
		if bugs.Active(bugs.RaftSendBeforePersist) {
			m.send(rd.Messages)
			rd.Messages = nil
		}
		m.persistSnapshot(rd, func() {
			if m.extendsLog(rd) {
				m.persistBoth(rd)
				return
			}
			m.persistEntries(rd, func() {
				m.persistHardState(rd, func() { m.finishReady(rd) })
			})
		})
	}
}

// extendsLog reports whether a Ready's entries only extend the durable
// log, truncating nothing. Its hard state may then become durable before
// its entries: the commit it records covers either entries already
// durable and agreed with the leader (the append matched them) or new
// ones, which a crash before they land would leave out of the log, and
// loading clamps the commit to the log's end. A Ready that replaces a
// conflicting suffix must land its entries first, or a crash could leave
// a commit index covering entries that were never committed.
func (m *metaNode) extendsLog(rd raft.Ready) bool {
	return len(rd.Entries) == 0 || rd.Entries[0].GetIndex() == m.log.LastIndex()+1
}

// persistBoth makes a Ready's entries and hard state durable at once, so
// its cost is the slower of a log sync and a state file write, not their
// sum, and finishes it once both have landed.
func (m *metaNode) persistBoth(rd raft.Ready) {
	outstanding := 2
	landed := func() {
		if outstanding--; outstanding == 0 {
			m.finishReady(rd)
		}
	}
	m.persistEntries(rd, landed)
	m.persistHardState(rd, landed)
}

func (m *metaNode) noteSoftState(ss *raft.SoftState) {
	m.term = m.rn.BasicStatus().HardState.GetTerm()
	if lead := NodeID(ss.Lead); lead != m.leader {
		m.leader = lead
		if lead != 0 && lead != m.n.cfg.ID {
			m.lastLeader = lead
		}
		if lead == m.n.cfg.ID && ss.RaftState == raft.StateLeader {
			m.n.emit(event.NewMetaLeader(m.term, uint32(lead)))
			m.n.onBecameLeader(m.campaignedAgainst, time.Duration(m.lastSilence)*m.n.cfg.MetaTick)
		}
	}
}

// persistSnapshot installs a snapshot the leader sent: a fresh log
// directory starting after it is made durable, the snapshot file is
// switched to it, and only then is the old log removed.
func (m *metaNode) persistSnapshot(rd raft.Ready, next func()) {
	if rd.Snapshot == nil || raft.IsEmptySnap(rd.Snapshot) {
		next()
		return
	}
	s := rd.Snapshot
	index := s.GetMetadata().GetIndex()
	fs := m.n.env.FS()
	oldDir, newDir := m.logDir, "log."+strconv.FormatUint(index+1, 10)
	storage.MakeDirs(fs, fs.PathJoin(m.n.metaDir(), newDir), m.n.syncs, func(err error) {
		if err != nil {
			m.n.env.Halt(fmt.Sprintf("preparing a metadata log for a snapshot: %v", err))
			return
		}
		old := m.log
		m.logDir = newDir
		if m.log, err = m.openLog(index + 1); err != nil {
			m.n.env.Halt(fmt.Sprintf("opening a metadata log for a snapshot: %v", err))
			return
		}
		m.writeSnapshot(s, func() {
			state, err := decodeMetaState(s.GetData())
			if err != nil {
				m.n.env.Halt(fmt.Sprintf("a metadata snapshot does not decode: %v", err))
				return
			}
			m.ms.ApplySnapshot(s)
			m.snapMembers = nil
			m.adoptSnapshotState(state, s)
			old.Close()
			fs.RemoveAll(fs.PathJoin(m.n.metaDir(), oldDir))
			m.n.emit(event.NewMetaSnapshotInstalled(index))
			m.n.onMetaSnapshot()
			next()
		})
	})
}

func (m *metaNode) openLog(first uint64) (*storage.Log, error) {
	fs := m.n.env.FS()
	return storage.Open(fs, fs.PathJoin(m.n.metaDir(), m.logDir), m.n.syncs, storage.Options{
		FirstIndex: first, SegmentSize: m.n.cfg.SegmentSize, OnDurable: m.onLogDurable,
		OnFailed: func(err error) { m.n.env.Halt(fmt.Sprintf("metadata log failed: %v", err)) },
	})
}

// persistEntries appends the Ready's entries, dropping any conflicting
// suffix first, and continues once they are durable.
func (m *metaNode) persistEntries(rd raft.Ready, next func()) {
	if len(rd.Entries) == 0 {
		next()
		return
	}
	first := rd.Entries[0].GetIndex()
	if last := m.log.LastIndex(); first <= last {
		if err := m.log.TruncateAfter(first - 1); err != nil {
			return // the log failed and the process is halting
		}
	} else if first != last+1 {
		panic(fmt.Sprintf("node: metadata entries start at %d after log end %d", first, last))
	}
	batch := make([]storage.Entry, len(rd.Entries))
	for i, e := range rd.Entries {
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			panic(fmt.Sprintf("node: marshalling a raft entry: %v", err))
		}
		batch[i] = storage.Entry{Type: 1, Body: data}
	}
	m.n.env.Boundary("meta.before.append")
	last, err := m.log.AppendBatch(batch)
	if err != nil {
		return
	}
	m.waitIndex, m.continueReady = last, next
	m.log.RequestSync()
}

func (m *metaNode) onLogDurable(index uint64) {
	if m.continueReady != nil && index >= m.waitIndex {
		next := m.continueReady
		m.continueReady = nil
		m.n.env.Boundary("meta.after.append")
		next()
	}
}

func (m *metaNode) persistHardState(rd raft.Ready, next func()) {
	if rd.HardState == nil || raft.IsEmptyHardState(rd.HardState) {
		next()
		return
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(rd.HardState)
	if err != nil {
		panic(fmt.Sprintf("node: marshalling a hard state: %v", err))
	}
	m.n.env.Boundary("meta.before.persist-hardstate")
	m.hard.Write(data, func(err error) {
		if err != nil {
			m.n.env.Halt(fmt.Sprintf("writing the metadata hard state: %v", err))
			return
		}
		m.n.env.Boundary("meta.after.persist-hardstate")
		next()
	})
}

// finishReady runs once the Ready is durable.
func (m *metaNode) finishReady(rd raft.Ready) {
	if err := m.ms.Append(rd.Entries); err != nil {
		panic(fmt.Sprintf("node: raft memory storage: %v", err))
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		m.ms.SetHardState(rd.HardState)
		m.term = rd.HardState.GetTerm()
	}
	m.send(rd.Messages)
	m.apply(rd.CommittedEntries)
	m.noteReadStates(rd.ReadStates)
	m.rn.Advance(rd)
	m.busy = false
	m.finishReads()
	m.maybeSnapshot()
	m.process()
}

func (m *metaNode) send(msgs []*pb.Message) {
	for _, msg := range msgs {
		if isLearnedCommitAnswer(msg) {
			continue
		}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			panic(fmt.Sprintf("node: marshalling a raft message: %v", err))
		}
		m.n.env.Send(NodeID(msg.GetTo()), &wire.Raft{Data: data})
		if msg.GetType() == pb.MessageType_MsgSnap {
			// Optimistic: if it is lost, the follower's rejection brings a
			// new snapshot.
			m.rn.ReportSnapshot(msg.GetTo(), raft.SnapshotFinish)
		}
	}
}

// apply applies committed entries to the state machine and tells the node
// and any waiting proposer.
func (m *metaNode) apply(ents []*pb.Entry) {
	for _, e := range ents {
		index := e.GetIndex()
		if index <= m.state.applied {
			continue // already in the snapshot this node loaded
		}
		m.n.emit(event.NewMetaApplied(index, e.GetTerm()))
		switch e.GetType() {
		case pb.EntryType_EntryNormal:
		case pb.EntryType_EntryConfChange:
			m.applyConfChange(index, e.GetData())
			continue
		default:
			panic(fmt.Sprintf("node: unexpected raft entry type %s at %d", e.GetType(), index))
		}
		if len(e.GetData()) == 0 {
			m.state.applied = index // a new leader's empty entry
			continue
		}
		c, err := decodeCommand(e.GetData())
		if err != nil {
			panic(fmt.Sprintf("node: committed metadata entry %d does not decode: %v", index, err))
		}
		res := m.state.apply(index, c)
		m.n.onMetaApplied(index, c, res)
		if c.from.Node == m.n.cfg.ID {
			m.finishProposal(c.from, res)
		}
	}
}

// maybeSnapshot captures the state machine every metaSnapshotEvery
// entries, and as soon as the configuration names a member the last
// snapshot does not (see snapshotMissesMember), and once the snapshot is
// durable, compacts the log behind it.
func (m *metaNode) maybeSnapshot() {
	applied := m.state.applied
	if applied < m.snapIdx+metaSnapshotEvery && !m.snapshotMissesMember() {
		return
	}
	s, err := m.ms.CreateSnapshot(applied, m.conf, m.state.encode())
	if err != nil {
		return // raft already holds a newer snapshot
	}
	m.snapMembers = nil
	m.snapIdx = applied
	m.writeSnapshot(s, func() {
		if applied > metaKeepEntries {
			compact := applied - metaKeepEntries
			if first, _ := m.ms.FirstIndex(); compact > first {
				m.ms.Compact(compact)
			}
			m.log.TruncateFront(compact + 1)
		}
	})
}

// propose submits a command and calls done with its result once applied,
// or with a failure if no leader takes it within timeoutTicks.
func (m *metaNode) propose(c command, timeoutTicks uint64, done func(result)) {
	if m.rn == nil {
		done(result{detail: "metadata is starting", dropped: true})
		return
	}
	m.seq++
	c.from = proposalID{Node: m.n.cfg.ID, Seq: m.seq}
	data := encodeCommand(c)
	if err := m.rn.Propose(data); err != nil {
		done(result{detail: "no metadata leader: " + err.Error(), dropped: true})
		return
	}
	p := &proposal{done: done, deadline: m.ticks + timeoutTicks, sent: m.ticks}
	if forwardsAgain(c.kind) {
		p.again = data
	}
	m.proposals[c.from] = p
	m.process()
}

// forwardsAgain reports whether a proposal of kind may be forwarded to
// the leader again while it waits: an owner's claim of its epoch and a
// recovery's activation, the two a follower forwards on the way of
// every failover and replacement. Each names the epoch, owner and
// process it expects, so a copy that commits after the first changes
// nothing or is refused, and its proposer hears of the first to apply.
// Others stay single: a second node-down or replica-lost could apply
// after the state it reported had changed again.
func forwardsAgain(kind uint8) bool {
	return kind == cmdBumpEpoch || kind == cmdActivateRecovered
}

// forwardAgain proposes again, once a lifecycle period has passed since
// it last went, each waiting proposal that may be forwarded again, while
// this member follows a known leader. Raft forwards a follower's proposal
// once and never again, so a forward the network lost would otherwise
// be found only at the proposal's timeout, a second later, and be retried
// after that: a lost claim held up the replacement of a queue's lost
// replica by a second each time.
func (m *metaNode) forwardAgain() {
	st := m.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.Lead == 0 {
		return
	}
	ids := slices.SortedFunc(maps.Keys(m.proposals), func(a, b proposalID) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, id := range ids {
		if p := m.proposals[id]; p.again != nil && m.ticks-p.sent >= lifecycleRetryTicks {
			p.sent = m.ticks
			// A failure leaves the proposal to its timeout.
			_ = m.rn.Propose(p.again)
		}
	}
}

func (m *metaNode) finishProposal(id proposalID, res result) {
	if p, ok := m.proposals[id]; ok {
		delete(m.proposals, id)
		p.done(res)
	}
}

// expireProposals gives up on proposals past their deadline, oldest first.
func (m *metaNode) expireProposals() {
	ids := slices.SortedFunc(maps.Keys(m.proposals), func(a, b proposalID) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, id := range ids {
		if m.proposals[id].deadline < m.ticks {
			m.finishProposal(id, result{detail: "timed out waiting for the metadata leader"})
		}
	}
}

// isLeader reports whether this node leads the metadata group.
func (m *metaNode) isLeader() bool {
	return m != nil && m.rn != nil && m.rn.BasicStatus().RaftState == raft.StateLeader
}

// handingLeadership reports whether this member leads and is handing the
// leadership to another: raft drops every proposal meanwhile.
func (m *metaNode) handingLeadership() bool {
	if m == nil || m.rn == nil {
		return false
	}
	st := m.rn.BasicStatus()
	return st.RaftState == raft.StateLeader && st.LeadTransferee != 0
}

// cleanLogDirs removes metadata log directories other than the one in use:
// leftovers of a snapshot install that crashed before its cleanup.
func (m *metaNode) cleanLogDirs() {
	fs := m.n.env.FS()
	names, err := fs.List(m.n.metaDir())
	if err != nil {
		return
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.HasPrefix(name, "log.") && name != m.logDir {
			fs.RemoveAll(fs.PathJoin(m.n.metaDir(), name))
		}
	}
}

// readIndex confirms, through the leader, the commit index as of now and
// calls done(true) once this node has applied at least that much: a read
// of the state after that sees every command committed before the call.
// done(false) means the read could not be confirmed in time.
func (m *metaNode) readIndex(done func(bool)) {
	if m.rn == nil {
		done(false)
		return
	}
	m.seq++
	ctx := wire.AppendUint64(wire.AppendUint32(nil, uint32(m.n.cfg.ID)), m.seq)
	m.reads = append(m.reads, &pendingRead{ctx: string(ctx), done: done, deadline: m.ticks + lifecycleTimeoutTicks})
	m.rn.ReadIndex(ctx)
	m.process()
}

// pendingRead is a ReadIndex request: waiting for its index from the
// leader, then for the state machine to apply up to it.
type pendingRead struct {
	ctx      string
	index    uint64 // 0 until the leader confirmed it
	done     func(bool)
	deadline uint64
}

// noteReadStates matches the Ready's read states to pending reads.
func (m *metaNode) noteReadStates(states []raft.ReadState) {
	for _, rs := range states {
		for _, r := range m.reads {
			if r.ctx == string(rs.RequestCtx) {
				r.index = max(rs.Index, 1)
			}
		}
	}
}

// finishReads completes reads whose index is applied and fails those past
// their deadline.
func (m *metaNode) finishReads() {
	kept := m.reads[:0]
	var ready []*pendingRead
	var late []*pendingRead
	for _, r := range m.reads {
		switch {
		case r.index != 0 && m.state.applied >= r.index:
			ready = append(ready, r)
		case r.deadline < m.ticks:
			late = append(late, r)
		default:
			kept = append(kept, r)
		}
	}
	m.reads = kept
	for _, r := range ready {
		r.done(true)
	}
	for _, r := range late {
		r.done(false)
	}
}
