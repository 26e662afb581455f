package node

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// metaElectionTicks is raft's election window in metadata ticks: the
// leader's check-quorum period, and the base of followers' own timeout.
const metaElectionTicks = 10

// metaSnapshotEvery is how many applied entries pass between snapshots;
// metaKeepEntries how many entries a snapshot leaves behind, so a briefly
// lagging follower catches up from the log instead of a snapshot.
const (
	metaSnapshotEvery = 1024
	metaKeepEntries   = 256
)

// maxMetaQueues bounds the queue names the metadata keeps, live or
// deleted: a deleted queue's entry stays, so that a later queue of the
// same name gets a new incarnation and no replica of the old one is
// mistaken for it. The snapshot holds every entry, is written as one
// state file and travels to a follower that fell behind as one raft
// message, so the bound keeps it within metaSnapshotMax and a frame
// (wire.MaxBodySize) even when every name is as long as names may be
// (meta_test.go). Without it, about 7,400 queues of short names made a
// snapshot larger than a state file's default limit, and every node of
// the cluster stopped at once when it took one.
const maxMetaQueues = 25_000

// metaSnapshotMax bounds the metadata snapshot file.
const metaSnapshotMax = 16 << 20

// metaNode drives this node's member of the metadata raft group. etcd
// raft runs without ever seeing a clock or a goroutine: Tick is called
// only while leading (heartbeats, check-quorum), followers run their own
// election timer with seeded jitter, and each Ready is made durable
// through storage before its messages leave.
type metaNode struct {
	n       *Node
	rn      *raft.RawNode
	ms      *raft.MemoryStorage
	state   *metaState
	log     *storage.Log
	logDir  string
	hard    *storage.StateFile
	snap    *storage.StateFile
	snapIdx uint64
	// snapMembers lists the voters and learners of the snapshot ms holds,
	// read once after each change of it (snapshotMissesMember): reading
	// it from ms clones the whole snapshot, a copy of the metadata, which
	// at every ready of a cluster creating its 10,000th queue was a
	// twentieth of a node's CPU. nil until read.
	snapMembers []uint64
	// conf is raft's configuration as of the last applied entry, written
	// into every snapshot.
	conf *pb.ConfState
	// confPending is set, on the leader, while a membership change it
	// proposed is in flight: raft takes one at a time.
	confPending bool
	// rebalancing is set, on the leader, while its proposal to end a
	// rebalance is in flight.
	rebalancing bool

	// busy is set while a Ready is being made durable; no other Ready is
	// taken until it is advanced.
	busy bool
	// waitIndex is the log index that must be durable before the Ready in
	// flight continues with continueReady.
	waitIndex     uint64
	continueReady func()

	silentTicks int // ticks since the leader was last heard
	// heardAt is when the leader was last heard (or the election timer
	// last reset), on the detector's clock, which runs five times finer
	// than silentTicks (see leaderSilent).
	heardAt      uint64
	timeoutTicks int // this round's election timeout, with jitter
	leader       NodeID
	// lastLeader is the last other node this node knew as leader. When it
	// campaigns, it notes whom it campaigned against and how long that
	// leader had been silent.
	lastLeader        NodeID
	campaignedAgainst NodeID
	lastSilence       int
	term              uint64

	// catchingUp is set while this member's log may lack entries it once
	// acknowledged: started over a lost data directory (Config.Rejoin), or
	// told by a leader of a commit beyond its log. It then grants no vote
	// and never campaigns, since a member that forgot committed entries
	// could elect a leader without them, until it has caught up with a
	// leader's commit index, catchUpTo.
	catchingUp bool
	catchUpTo  uint64
	// rejoin holds rejoinMarked from the moment a member starts over an
	// empty data directory (Config.Rejoin) until it has caught up: the
	// bootstrap it writes makes the directory look whole, so a process
	// that stops before catching up must tell the next one not to vote.
	rejoin       *storage.StateFile
	rejoinMarked bool

	seq       uint64
	proposals map[proposalID]*proposal
	// held are proposals other members forwarded here while this member
	// could not take them: a leader handing its leadership away drops
	// them, and so does a member between two leaders. Raft tells only
	// this member, so the proposer would wait out its whole timeout for
	// an entry that never reached any log. They are passed on once a
	// leader that takes proposals is known (see passHeldProposals).
	held  []heldProposal
	reads []*pendingRead
	ticks uint64
	// downSince is, on the leader, the moment on its monotonic clock at
	// which it first saw each node confirmed down: replacement waits
	// Config.ReplaceAfter from it. A new leader starts counting afresh,
	// which only delays replacement.
	downSince map[NodeID]time.Duration
	// planned holds, on the leader, the recovery plans it keeps count of
	// to pace them (pace.go).
	planned map[string]plannedRecovery
}

type proposal struct {
	done     func(result)
	deadline uint64 // tick after which the proposal is given up
	// again is the entry's data when a copy of it cannot do harm (see
	// forwardsAgain), so that it may be forwarded again while it waits,
	// and sent the tick it was last forwarded at.
	again []byte
	sent  uint64
}

// heldProposal is a forwarded proposal's entry data, kept until the tick
// after which it is no longer passed on.
type heldProposal struct {
	data  []byte
	until uint64
}

var discardLogger = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

func (n *Node) metaDir() string { return n.path("meta") }

// firstProposal is the number before this process's first metadata
// proposal. A proposal is answered by the applied entry that carries its
// number and node, and an entry proposed by an earlier process of this
// node can commit and apply after a restart. Numbered from 1 in every
// process, such an entry answered the new process's proposal of the same
// number with its own result: the entry of a node confirmed down
// answered an add-node OK that no node had applied (seed 12, found by
// the checker membership-answer). So each process starts at a random
// point of a 63-bit space, as its leases do (lease.go).
func firstProposal(process uint64) uint64 {
	if bugs.Active(bugs.ProposalNumbersRestart) {
		return 0 // planted: every process numbers its proposals from 1
	}
	return process >> 1
}

// openMeta loads the metadata member from disk (or bootstraps a fresh one)
// and calls done once raft is running.
func (n *Node) openMeta(done func()) {
	m := &metaNode{n: n, proposals: make(map[proposalID]*proposal), seq: firstProposal(n.process)}
	n.meta = m
	fs, dir := n.env.FS(), n.metaDir()
	snap, snapData, err := storage.OpenSizedStateFile(fs, dir, "snapshot", ungated{n.syncs}, metaSnapshotMax)
	if err != nil {
		n.env.Halt(fmt.Sprintf("opening metadata snapshot: %v", err))
		return
	}
	hard, hardData, err := storage.OpenStateFile(fs, dir, "hardstate", ungated{n.syncs})
	if err != nil {
		n.env.Halt(fmt.Sprintf("opening metadata hard state: %v", err))
		return
	}
	m.snap, m.hard = snap, hard
	rejoin, rejoinData, err := storage.OpenStateFile(fs, dir, "rejoin", ungated{n.syncs})
	if err != nil {
		n.env.Halt(fmt.Sprintf("opening the metadata rejoin mark: %v", err))
		return
	}
	m.rejoin = rejoin
	if snapData == nil && n.cfg.Join {
		m.startJoining(done)
		return
	}
	if snapData == nil && n.cfg.Rejoin {
		m.startRejoining(done)
		return
	}
	if snapData == nil {
		m.bootstrap(done)
		return
	}
	if len(rejoinData) == 1 && rejoinData[0] == rejoinMarked {
		// An earlier process started over an empty data directory and
		// stopped before it caught up: what it bootstrapped is not what
		// this member once acknowledged.
		m.catchingUp, m.rejoinMarked = true, true
		n.emit(event.NewMetaCatchingUp("restarted before catching up, after starting over an empty data directory"))
	}
	if err := m.load(snapData, hardData); err != nil {
		n.env.Halt(fmt.Sprintf("loading metadata: %v", err))
		return
	}
	m.start()
	done()
}

// The values of the rejoin mark.
const (
	rejoinCaughtUp byte = 0
	rejoinMarked   byte = 1
)

// startRejoining starts a member over an empty data directory in a
// cluster that exists: it marks itself as rejoining durably, and only
// then bootstraps, so no process of this member grants a vote before one
// of them has caught up with a leader.
func (m *metaNode) startRejoining(done func()) {
	m.catchingUp, m.rejoinMarked = true, true
	m.n.emit(event.NewMetaCatchingUp("started over an empty data directory to rejoin"))
	if bugs.Active(bugs.RejoinUnmarked) {
		m.rejoinMarked = false
		m.bootstrap(done)
		return
	}
	m.rejoin.Write([]byte{rejoinMarked}, func(err error) {
		if err != nil {
			m.n.env.Halt(fmt.Sprintf("writing the metadata rejoin mark: %v", err))
			return
		}
		m.bootstrap(done)
	})
}

// bootstrap writes the initial snapshot every voter starts from, and
// starts raft only once it is durable.
func (m *metaNode) bootstrap(done func()) {
	m.state = newMetaState(m.n.cfg.Detection)
	m.state.members = foundingMembers(m.n.cfg.Nodes)
	m.state.lastMember = slices.Max(m.n.cfg.Nodes)
	s := &pb.Snapshot{
		Data:     m.state.encode(),
		Metadata: &pb.SnapshotMetadata{Index: new(uint64(1)), Term: new(uint64(1)), ConfState: confStateOf(m.state.members)},
	}
	m.logDir = "log.2"
	m.writeSnapshot(s, func() {
		if err := m.load(m.encodedSnapshot(s), nil); err != nil {
			m.n.env.Halt(fmt.Sprintf("loading the bootstrap snapshot: %v", err))
			return
		}
		m.start()
		done()
	})
}

// encodedSnapshot is the snapshot file's content: the log directory in use
// and raft's snapshot.
func (m *metaNode) encodedSnapshot(s *pb.Snapshot) []byte {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("node: marshalling a metadata snapshot: %v", err))
	}
	return wire.AppendBytes(wire.AppendString(nil, m.logDir), data)
}

func (m *metaNode) writeSnapshot(s *pb.Snapshot, done func()) {
	m.n.env.Boundary("meta.before.write-snapshot")
	m.snap.Write(m.encodedSnapshot(s), func(err error) {
		if err != nil {
			m.n.env.Halt(fmt.Sprintf("writing the metadata snapshot: %v", err))
			return
		}
		m.n.env.Boundary("meta.after.write-snapshot")
		done()
	})
}

// load rebuilds raft's memory storage and the state machine from the
// snapshot, the hard state and the log.
func (m *metaNode) load(snapData, hardData []byte) error {
	d := wire.NewDecoder(snapData)
	m.logDir = d.String()
	raw := d.Bytes()
	if err := d.Finish(); err != nil {
		return fmt.Errorf("snapshot file: %w", err)
	}
	s := &pb.Snapshot{}
	if err := proto.Unmarshal(raw, s); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	state, err := decodeMetaState(s.GetData())
	if err != nil {
		return fmt.Errorf("snapshot state: %w", err)
	}
	m.adoptSnapshotState(state, s)
	m.ms, m.snapMembers = raft.NewMemoryStorage(), nil
	if err := m.ms.ApplySnapshot(s); err != nil {
		return err
	}
	if m.log, err = m.openLog(m.snapIdx + 1); err != nil {
		return err
	}
	m.cleanLogDirs()
	last, err := m.loadEntries()
	if err != nil {
		return err
	}
	confCommitted, err := m.confChangeBeforeLast(last)
	if err != nil {
		return err
	}
	if bugs.Active(bugs.ConfCommitLags) {
		confCommitted = 0
	}
	if hardData != nil {
		hs := &pb.HardState{}
		if err := proto.Unmarshal(hardData, hs); err != nil {
			return fmt.Errorf("hard state: %w", err)
		}
		// Entries are made durable before the hard state that commits
		// them, so commit never runs past the log; clamp anyway for a log
		// that lost an unsynced tail. A snapshot holds only committed
		// entries, so commit is at least its index: a member that crashed
		// between installing a snapshot and writing the hard state after
		// it (a joining node's first, whose hard state still says commit
		// 0) would otherwise make raft panic at every start.
		hs.Commit = new(max(min(hs.GetCommit(), last), m.snapIdx, confCommitted))
		if err := m.ms.SetHardState(hs); err != nil {
			return err
		}
		return nil
	}
	// A member that never persisted a hard state starts at the snapshot's
	// term, as raft's own bootstrap does. At term 0, raft answers a
	// pre-vote it rejects with its own term, zero, and panics on it.
	return m.ms.SetHardState(&pb.HardState{Term: new(s.GetMetadata().GetTerm()), Commit: new(max(m.snapIdx, confCommitted))})
}

// confChangeBeforeLast is the index of the last configuration change in
// the log after the snapshot that another configuration change follows,
// or 0. That entry is committed whatever the hard state says: raft's
// leader appends a configuration change only once it has applied every
// earlier one in its log, and the log up to the later change is that
// leader's. The hard state's commit may lag it (written after, or beside,
// the entries, it may not have landed before a crash), and raft's
// configuration is the one applied, so a member loaded with that commit
// would count votes and acknowledgements by a configuration two changes
// old, whose quorums need not meet the current one's: it could win an
// election without an entry the current voters committed, and commit
// another in its place (seed 123899: n1 restarted with commit 81 over a
// log holding the promotion of n4 at 83 and the demotion of n2 at 94,
// was elected by n1 and n2 as voters {1,2,3}, and committed its own entry
// 102 over the one n3 and n4 had committed as voters {1,3,4}). Committing
// it at load keeps the applied configuration at most one change behind
// the log's, as raft's single-change safety argument needs.
func (m *metaNode) confChangeBeforeLast(last uint64) (uint64, error) {
	if last <= m.snapIdx {
		return 0, nil
	}
	ents, err := m.ms.Entries(m.snapIdx+1, last+1, math.MaxUint64)
	if err != nil {
		return 0, err
	}
	var before, latest uint64
	for _, e := range ents {
		if t := e.GetType(); t == pb.EntryType_EntryConfChange || t == pb.EntryType_EntryConfChangeV2 {
			before, latest = latest, e.GetIndex()
		}
	}
	return before, nil
}

// loadEntries appends the log's entries after the snapshot to raft's
// memory storage and returns the last index.
func (m *metaNode) loadEntries() (uint64, error) {
	from := max(m.log.FirstIndex(), m.snapIdx+1)
	rd := m.log.NewReader(from)
	defer rd.Close()
	last := m.snapIdx
	for {
		page, err := rd.Next(math.MaxUint64, 256, 1<<20)
		if err != nil {
			return 0, err
		}
		if len(page) == 0 {
			return last, nil
		}
		ents := make([]*pb.Entry, 0, len(page))
		for _, rec := range page {
			e := &pb.Entry{}
			if err := proto.Unmarshal(rec.Body, e); err != nil || e.GetIndex() != rec.Index {
				return 0, fmt.Errorf("%w: metadata entry %d does not decode (%v)", storage.ErrCorrupt, rec.Index, err)
			}
			ents = append(ents, e)
			last = rec.Index
		}
		if err := m.ms.Append(ents); err != nil {
			return 0, err
		}
	}
}

func (m *metaNode) start() {
	rn, err := raft.NewRawNode(&raft.Config{
		ID: uint64(m.n.cfg.ID), ElectionTick: metaElectionTicks, HeartbeatTick: 1,
		Storage: m.ms, Applied: m.snapIdx, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, Logger: discardLogger, StepDownOnRemoval: true,
	})
	if err != nil {
		panic(fmt.Sprintf("node: starting raft: %v", err))
	}
	m.rn = rn
	m.resetElectionTimer()
	m.process()
}

// resetElectionTimer draws the next election timeout: a full window plus
// jitter for a follower that may still hear from its leader, a shorter
// one for a candidate whose election may have split, so it retries soon
// (still randomized, so the retries do not collide again).
func (m *metaNode) resetElectionTimer() {
	m.silentTicks, m.heardAt = 0, m.n.mono()
	base := metaElectionTicks
	if m.rn != nil && m.rn.BasicStatus().RaftState != raft.StateFollower {
		base = metaElectionTicks / 3
	}
	m.timeoutTicks = base + m.n.env.Rand().IntN(metaElectionTicks)
}

// tick advances raft's clock on the leader and the election timer
// everywhere else.
func (m *metaNode) tick() {
	if m.rn == nil {
		return
	}
	m.ticks++
	m.expireProposals()
	m.forwardAgain()
	m.finishReads()
	if m.rn.BasicStatus().RaftState == raft.StateLeader {
		m.rn.Tick()
	} else if m.silentTicks++; m.silentTicks >= m.timeoutTicks && !m.catchingUp {
		m.campaign("the leader is silent")
	}
	m.process()
}

// campaign forgets the current leader (so check-quorum's lease does not
// make this node ignore its own election) and starts a pre-vote.
func (m *metaNode) campaign(why string) {
	if !m.isVoter() {
		// A learner, a joiner not yet admitted or a removed member has no
		// vote to win an election with; raft would ignore the campaign.
		m.resetElectionTimer()
		return
	}
	m.campaignedAgainst, m.lastSilence = m.lastLeader, m.silentTicks
	m.n.emit(event.NewMetaCampaign(why, m.term))
	m.rn.ForgetLeader()
	m.rn.Campaign()
	m.resetElectionTimer()
	m.process() // send the pre-votes now, not at the next tick
}

// forgetLeader drops the leader (and with it check-quorum's lease), so
// this follower may vote for another candidate.
func (m *metaNode) forgetLeader() {
	if m.rn != nil {
		m.rn.ForgetLeader()
		m.process()
	}
}

// step hands a peer's raft message to raft.
func (m *metaNode) step(from NodeID, data []byte) {
	if m.rn == nil {
		return
	}
	msg := &pb.Message{}
	if err := proto.Unmarshal(data, msg); err != nil || msg.GetFrom() != uint64(from) {
		m.n.emit(event.NewMetaBadMessage(uint32(from)))
		return
	}
	switch msg.GetType() {
	case pb.MessageType_MsgApp, pb.MessageType_MsgHeartbeat, pb.MessageType_MsgSnap:
		if m.n.detector.waitsToReplace(from) {
			// Sent before the leader died and still in flight: followed,
			// it would restore the leader's lease here and this node
			// would refuse the vote of the follower replacing it.
			return
		}
		m.silentTicks, m.heardAt = 0, m.n.mono() // only a leader sends these
		m.noteLeaderCommit(from, msg)
	case pb.MessageType_MsgPreVote, pb.MessageType_MsgVote:
		if m.catchingUp {
			return // no vote from a member that may have forgotten entries
		}
		// Check-quorum's lease: a follower that has heard from its leader
		// within the election window refuses to vote. Raft measures that
		// window by ticks, and followers here are never ticked, so the
		// lease is applied here: once the leader has been silent for the
		// window, it is forgotten and the vote can be judged on its merits.
		if m.silentTicks >= metaElectionTicks && m.rn.BasicStatus().RaftState == raft.StateFollower {
			m.rn.ForgetLeader()
		}
		m.tellCommitted(from, msg)
	case pb.MessageType_MsgAppResp:
		if msg.GetReject() && m.rejectsAcknowledged(from, msg.GetIndex()) {
			// The follower lost entries it acknowledged (onLostLog hands
			// the leadership on for it). Raft never lowers its match, so
			// it would probe the same index again at once, be refused
			// again, and so on without end; a duplicated refusal would
			// start a second such exchange beside the first, and the
			// exchanges would multiply into a storm. Dropped, the refusal
			// leaves the follower probed once per heartbeat.
			return
		}
	}
	if err := m.rn.Step(msg); errors.Is(err, raft.ErrProposalDropped) && msg.GetType() == pb.MessageType_MsgProp {
		m.holdProposal(msg)
	}
	m.process()
	m.checkCaughtUp()
}

// rejectsAcknowledged reports whether this node leads and follower, by
// refusing an append that follows index, disowns entries it acknowledged:
// index is at or below its match. A follower that kept its log never does
// that. Raft ignores such a refusal as stale in every case but one, a
// follower it probes right after its match, which it probes there again.
func (m *metaNode) rejectsAcknowledged(follower NodeID, index uint64) bool {
	if !m.isLeader() {
		return false
	}
	acknowledged := false
	m.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == uint64(follower) {
			acknowledged = index <= pr.Match
		}
	})
	return acknowledged
}

// noteLeaderCommit reads the commit index a leader's message carries. A
// heartbeat's commit never exceeds what the leader counts this member as
// holding; if it exceeds the log, the log lost acknowledged entries (a
// lost or replaced disk). Raft would panic on it, so the commit is lowered
// to the log's end, this member stops voting until it has caught up, and
// the leader is told.
func (m *metaNode) noteLeaderCommit(from NodeID, msg *pb.Message) {
	commit := msg.GetCommit()
	last, err := m.ms.LastIndex()
	if err != nil {
		panic(fmt.Sprintf("node: metadata log: %v", err))
	}
	if msg.GetType() == pb.MessageType_MsgHeartbeat && commit > last {
		if !m.catchingUp {
			m.n.emit(event.NewMetaCatchingUp(fmt.Sprintf("leader %s counts entries through %d, the log ends at %d", from, commit, last)))
		}
		m.catchingUp = true
		msg.Commit = new(last)
		m.n.env.Send(from, &wire.MetaLostLog{Term: msg.GetTerm(), Last: last, Commit: commit})
	}
	if m.catchingUp {
		m.catchUpTo = max(m.catchUpTo, commit)
	}
}

// checkCaughtUp lets a catching-up member vote again once it has applied
// a leader's commit index. Applied, not only committed: until then the
// member replays entries from before it lost its disk, and a queue it
// prepares a replica for in that replay may be one it reported records
// of, which prepare must know to mark the replica suspect.
func (m *metaNode) checkCaughtUp() {
	if !m.catchingUp || m.catchUpTo == 0 || m.state.applied < m.catchUpTo {
		return
	}
	m.catchingUp = false
	m.n.emit(event.NewMetaCaughtUp(m.catchUpTo))
	if !m.rejoinMarked {
		return
	}
	// Cleared after the fact: a crash before the write lands only makes
	// the next process catch up once more.
	m.rejoinMarked = false
	m.rejoin.Write([]byte{rejoinCaughtUp}, func(err error) {
		if err != nil {
			m.n.env.Halt(fmt.Sprintf("clearing the metadata rejoin mark: %v", err))
		}
	})
}

// onLostLog runs on the leader when a follower reports that its log lost
// entries the leader counts it as holding. etcd raft never lowers a
// follower's match index, so this leader would never send the lost
// entries again: it hands leadership to the most up-to-date other voter,
// whose fresh view of the follower starts from nothing.
func (m *metaNode) onLostLog(from NodeID, msg *wire.MetaLostLog) {
	if m.rn == nil || !m.isLeader() || msg.Term != m.rn.BasicStatus().GetTerm() {
		return
	}
	st := m.rn.Status()
	if pr, ok := st.Progress[uint64(from)]; !ok || pr.Match <= msg.Last {
		return // this leader already knows how little the follower holds
	}
	target := m.mostCaughtUpVoter(func(id NodeID) bool { return id != from })
	m.n.emit(event.NewMetaFollowerLostLog(uint32(from), msg.Last, msg.Commit, uint32(target)))
	if target != 0 {
		m.rn.TransferLeader(uint64(target))
		m.process()
	}
}

// mostCaughtUpVoter is, on the leader, the voter other than itself that
// eligible accepts and whose log matches the leader's furthest (the
// highest ID on a tie), or 0: the one to hand the leadership to.
func (m *metaNode) mostCaughtUpVoter(eligible func(NodeID) bool) NodeID {
	st := m.rn.Status()
	var target NodeID
	var best uint64
	for _, id := range m.conf.GetVoters() {
		if pr, ok := st.Progress[id]; ok && NodeID(id) != m.n.cfg.ID && eligible(NodeID(id)) && pr.Match >= best {
			target, best = NodeID(id), pr.Match
		}
	}
	return target
}

// holdProposal keeps the entries of a forwarded proposal raft dropped
// here. A leadership transfer lasts at most an election window before
// raft gives it up, so an entry still held after that is dropped: its
// proposer is about to retry on its own.
func (m *metaNode) holdProposal(msg *pb.Message) {
	for _, e := range msg.GetEntries() {
		if e.GetType() == pb.EntryType_EntryNormal && len(e.GetData()) > 0 {
			m.held = append(m.held, heldProposal{data: e.GetData(), until: m.ticks + metaElectionTicks})
		}
	}
}

// passHeldProposals proposes the held entries again once a leader is
// known and no transfer is under way: a follower forwards them to the new
// leader, a leader appends them. The proposer then hears of its entry's
// fate when it applies it, as it would have without the transfer, instead
// of a proposal timeout later.
func (m *metaNode) passHeldProposals() {
	if len(m.held) == 0 || m.rn == nil {
		return
	}
	if st := m.rn.BasicStatus(); st.Lead == 0 || st.LeadTransferee != 0 {
		return
	}
	held := m.held
	m.held = nil
	for _, h := range held {
		if h.until >= m.ticks {
			// A failure leaves the entry to its proposer's timeout.
			_ = m.rn.Propose(h.data)
		}
	}
}
