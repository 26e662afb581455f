package node

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// ownerState is everything the owner of a queue keeps beyond the log:
// the applied state, replication progress, client waiters, subscriptions
// and leases.
type ownerState struct {
	r     *replica
	state *queueState
	// built says state holds the replica's log: a candidate's owner side
	// starts without it, since a recovery rebuilds the state from the
	// history it installs, and only an activation without recovery
	// builds it from the log as it stands.
	built bool
	// rebuild is the rebuild of state under way, if any.
	rebuild   *stateRebuild
	commit    uint64
	followers []*progress
	waiters   []waiter
	subs      []*subscription
	rr        int // round-robin start among subscriptions
	// policy is the queue's confirmation policy, from the metadata.
	policy wire.Policy
	// epochWriting is set while a candidate makes the metadata's epoch
	// durable locally; it sends nothing in that epoch until then.
	epochWriting bool
	// opening is the index of the marker that opens the candidate's
	// epoch, while a quorum does not yet hold it; the candidate becomes
	// owner when one does.
	opening uint64
	// recovery is the recovery this candidate is running, while it has
	// not yet activated in its epoch.
	recovery *recovery.Core
	// certify is the checkpoint certification in progress, if any;
	// lastCertifyCut the cut of the latest attempt, and appendedBytes the
	// record bytes appended since it started, appendedChanges the records
	// (a settles record once per message it settles). ticks counts owner
	// ticks.
	certify        *certifyAttempt
	lastCertifyCut uint64
	// reusedCut says an attempt of this epoch asked for a cut built
	// before it rather than for the commit index (certifyCut).
	reusedCut       bool
	appendedBytes   int64
	appendedChanges int64
	ticks           uint64
	// lastCertifyAt is when the latest attempt started (or the owner
	// first looked), and certifyFactor the jitter of the next one (zero
	// until drawn).
	lastCertifyAt time.Time
	certifyFactor float64
	// staleOwner is, once the replica went stale, the owner of the newer
	// epoch that superseded it, if known: its clients are told.
	staleOwner NodeID
	// settling holds the acks taken this turn, and replicatePending says
	// records were appended this turn: both wait for the flush timer
	// (turn.go).
	settling         []pendingSettle
	replicatePending bool
	// pumpPending says a pump stopped at pumpTurnMax deliveries and the
	// rest go out at the end of the turn.
	pumpPending bool
	// hold keeps back, after a recovery, the messages the old owner may
	// still be delivering (hold.go).
	hold holdBack
	// leaseHeld says the delivery lease was valid when last checked, so
	// that its lapse is reported once.
	leaseHeld bool
	// servingFrom is when, on the lease clock, this owner began serving;
	// cutOffNoted says it last found itself cut off from its quorum
	// (quorum.go).
	servingFrom uint64
	cutOffNoted bool
	// activeUnsaid says this owner began to serve in full while cut off
	// from its quorum, and says so (queue.active) only when it hears
	// from one again (admitClients).
	activeUnsaid bool
	// activationWaits says the metadata activated this candidate while
	// its quorum's latest acceptance was older than the silence limit, or
	// a quorum holds its opening marker while the metadata holds its node
	// down: it sends appends until a quorum accepts one sent since
	// waitingFrom, on the lease clock (finishRecovery, finishOpening,
	// activationGranted).
	activationWaits bool
	waitingFrom     uint64
	// outwaitUntil is when, on the lease clock, a recovered owner may
	// start delivering, once no older owner can still serve on its
	// quorum; until then it admits publishes only. Zero if it is not
	// outwaiting one (hold.go). outwaitAdmitted counts the publishes it
	// appended meanwhile.
	outwaitUntil    uint64
	outwaitAdmitted int
	// moves are the dead-lettered messages on their way to the
	// dead-letter queue, in the order their records were appended
	// (deadletter.go).
	moves []*deadLetterMove
	// movesSettled is the settled-through mark asks carry (movedin.go):
	// every dead-letter record at or below it has its message settled by
	// a confirmed record.
	movesSettled uint64
	// purges holds the purges waiting for the hold (purge.go).
	purges purgeState
	// handoff is the cooperative handoff under way, if any (handoff.go);
	// carried, on a candidate, the highest delivery counts its sealed
	// replicas reported, taken at activation (counts.go).
	handoff *handoff
	carried map[wire.MessageID]uint32
	// resting says this idle owner sends no heartbeats (rest.go), since
	// restingFrom on the lease clock; busyAt is when it last had work or
	// a request, and wakeBy, while it waits for its quorum's first answer
	// after a rest, when it gives up waiting.
	resting             bool
	restingFrom, busyAt uint64
	wakeBy              uint64
}

// progress is the owner's view of one follower.
type progress struct {
	id NodeID
	// next is the next index to send; match the last index known to agree
	// with this owner's log; durable the follower's last reported durable
	// index. Only min(match, durable) counts toward confirmation.
	next, match, durable uint64
	// probing means the follower's position is uncertain: send one page
	// and wait for the answer instead of streaming.
	probing          bool
	probeOutstanding bool
	probeSentAt      time.Time
	reader           *storage.Reader
	// ckptCut and ckptOffset say which checkpoint is being sent to a
	// follower behind this owner's first retained record, and the offset
	// of the next chunk it asked for.
	ckptCut, ckptOffset uint64
	// leaseFrom is the send stamp of the latest append this follower
	// accepted in the owner's epoch: the follower was not yet sealed by a
	// newer epoch then.
	leaseFrom uint64
	// sentAt is the send stamp of the latest append sent to this
	// follower, entries or none.
	sentAt uint64
	// diskFull says the follower's latest reply in this epoch found its
	// node short of space.
	diskFull bool
	// counts are the delivery counts waiting for the next append to this
	// follower (counts.go).
	counts []wire.DeliveryCount
}

// waiter is a request that completes when index is confirmed: a client's
// (conn and reqID), or a source queue owner's ask to store a
// dead-lettered message (peer, source and id).
type waiter struct {
	conn   ConnID
	reqID  uint64
	index  uint64
	peer   NodeID
	source string
	id     wire.MessageID
}

// answer tells the waiter how its request ended; owner names the newer
// owner of a fenced one, if known.
func (o *ownerState) answer(w waiter, st wire.Status, owner NodeID, detail string) {
	if w.peer != 0 {
		o.r.n.answerDeadLetter(w.peer, &wire.DeadLetterReply{Source: w.source, ID: w.id, Status: st, Detail: detail})
		return
	}
	o.r.n.env.Reply(w.conn, &wire.Reply{ReqID: w.reqID, Status: st, Owner: uint32(owner), Index: w.index, Detail: detail})
}

func newOwnerState(r *replica, state *queueState) *ownerState {
	built := state != nil
	if state == nil {
		state = newQueueState(r.name)
	}
	o := &ownerState{r: r, state: state, built: built}
	for _, m := range r.members {
		if m != r.n.cfg.ID {
			o.followers = append(o.followers, &progress{id: m, next: r.log.LastIndex() + 1, probing: true})
		}
	}
	return o
}

// activate starts serving in the epoch the metadata assigned to this
// process, once it is durable locally. Nothing was sent in this epoch
// before, and the metadata never hands an epoch out twice.
func (o *ownerState) activate(q *QueueMeta) {
	r := o.r
	if last := r.epochOf(r.log.LastIndex()); last >= r.epoch {
		panic(fmt.Sprintf("node: queue %s activating epoch %d over entries of epoch %d", r.name, r.epoch, last))
	}
	if !o.built {
		state, err := r.buildState()
		if err != nil {
			r.readFailed(err)
			return
		}
		o.state, o.built = state, true
	}
	o.policy = q.Policy
	for _, f := range o.followers {
		f.probing, f.probeOutstanding, f.next = true, false, r.log.LastIndex()+1
	}
	// Open the epoch with a marker, as a recovery does, and serve only once
	// a quorum holds it: replicas already sealed at a newer epoch refuse
	// it, so a candidate acting on metadata that moved on meanwhile (it
	// was cut off, or paused) can never start serving.
	o.opening = o.append(record{typ: recordEpochMark})
	o.updateCommit()
}

// finishOpening makes the candidate the owner once a quorum holds the
// marker that opened its epoch, a quorum of its replicas has accepted
// its appends within the silence limit, and its metadata does not hold
// its node down.
//
// The second condition matters when the replies reach the candidate late:
// it was paused, or cut off, after sending its marker. Its peers may
// meanwhile have found it silent, sealed a quorum at a newer epoch and
// activated another owner, which its metadata does not show yet; the old
// replies that say a quorum holds the marker say nothing of that. It
// waits as a late recovered activation does (finishRecovery): a quorum
// that accepts the appends it sends once it waits holds no newer epoch,
// and one that refuses them makes it stale.
//
// The silence limit only bounds a replacement that began after the
// candidate fell silent. A node the metadata holds down (it crashed and
// restarted, and the leader has not heard it since) may be replaced at
// the leader's next pass, before its marker was even sent: a follower
// can accept the marker, be sealed at a newer epoch and see that epoch
// activate while its acceptance, fresh by the marker's stamp, is still
// on its way (seed 60892 of the long sweep). So the candidate also waits
// for the entry that marks its node up. The leader plans a failover for
// being down only while the metadata says so, and proposes that entry
// only once it hears the node again, so such a plan comes before it in
// the log: a candidate that applied the entry has applied the plan too,
// and follows it instead. An owner-only queue is never failed over
// (planFailovers), so its owner need not wait.
func (o *ownerState) finishOpening() {
	r := o.r
	heldDown := r.n.meta.state.down[r.n.cfg.ID] && o.policy != wire.PolicyOwnerOnly
	if !o.activationGranted() || heldDown {
		o.waitForActivation()
		return
	}
	o.activationWaits = false
	o.opening = 0
	o.activeUnsaid = false // this opening says it serves itself, just below
	o.takeCarriedCounts()
	r.becomeOwner("a quorum holds its epoch marker")
	r.n.emit(event.NewQueueActive(r.name, r.epoch, r.inc, r.log.LastIndex()))
	o.pump()
	r.n.checkParked(r.name)
}

// append writes records at the owner's epoch, applies them, asks for a
// sync and, at the end of the turn, streams them to followers. It returns
// the last index, or 0 if the log failed (the process is then halting).
func (o *ownerState) append(recs ...record) uint64 {
	r := o.r
	if !o.built {
		panic(fmt.Sprintf("node: queue %s appends before its owner state is built", r.name))
	}
	o.noteBusy()
	entries := make([]storage.Entry, len(recs))
	// Stamps never go back, whatever this node's clock did: the window
	// is measured on them.
	at := max(r.n.env.Now().UnixNano(), o.state.clock)
	for i := range recs {
		recs[i].epoch, recs[i].at = r.epoch, at
		if recs[i].typ == recordEpochMark {
			recs[i].window = int64(r.n.dedupWindowOf(r.name, r.inc))
		}
		entries[i] = storage.Entry{Type: recs[i].storedType(), Body: encodeRecord(recs[i])}
	}
	first := r.log.LastIndex() + 1
	r.n.env.Boundary("queue.before.append")
	last, err := r.log.AppendBatch(entries)
	if err != nil {
		return 0
	}
	for i, rec := range recs {
		r.noteEntry(first+uint64(i), r.epoch)
		o.state.apply(first+uint64(i), rec)
		r.keepEncodedInTail(first+uint64(i), entries[i])
		o.appendedBytes += int64(len(entries[i].Body))
		o.appendedChanges += int64(max(1, len(rec.ids)))
	}
	r.n.env.Boundary("queue.after.append")
	r.log.RequestSync()
	o.replicateSoon()
	return last
}

// wait parks a client request until index is confirmed.
func (o *ownerState) wait(conn ConnID, reqID, index uint64) {
	o.park(waiter{conn: conn, reqID: reqID, index: index})
}

// park holds a request until its index is confirmed, or answers it at
// once if it is.
func (o *ownerState) park(w waiter) {
	if w.index == 0 {
		// The append failed and the process is halting. A torn write may
		// still leave the record on disk, so the request may have been
		// acted on: no reply, the client sees the connection drop.
		return
	}
	if w.index <= o.commit {
		o.answer(w, wire.StatusOK, 0, "")
		return
	}
	i, _ := slices.BinarySearchFunc(o.waiters, w, compareWaiters)
	o.waiters = slices.Insert(o.waiters, i, w)
}

// parkAll parks ws, requests that all wait for one index, as park would
// one after another: each goes before those already waiting for that
// index, so they end up in reverse order. A turn's acks all wait for its
// settles record, and parking each alone moved every one parked before
// it (a thousand acks a turn in cairn-bench drain: 4% of the owner's
// CPU); parkAll moves them once.
func (o *ownerState) parkAll(ws []waiter) {
	if len(ws) == 0 {
		return
	}
	if index := ws[0].index; index == 0 || index <= o.commit {
		for _, w := range ws {
			o.park(w)
		}
		return
	}
	for _, w := range ws {
		if w.index != ws[0].index {
			panic(fmt.Sprintf("node: queue %s parks requests for indexes %d and %d together", o.r.name, ws[0].index, w.index))
		}
	}
	slices.Reverse(ws)
	i, _ := slices.BinarySearchFunc(o.waiters, ws[0], compareWaiters)
	o.waiters = slices.Insert(o.waiters, i, ws...)
}

// compareWaiters orders waiters by the index they wait for.
func compareWaiters(a, b waiter) int { return cmp.Compare(a.index, b.index) }

// quorum is how many replicas, the owner included, must hold a record;
// the recovery core owns the definition, since its seal quorum is derived
// from it.
func quorum(p wire.Policy, members int) int {
	if bugs.Active(bugs.MajorityOfTwo) && p == wire.PolicyMajority && members > 2 {
		return 2 // Planted: a majority of three, whatever the set's size.
	}
	return recovery.Quorum(p, members)
}

// updateCommit moves the confirmed index to the largest index held
// durably by a quorum that includes the owner.
func (o *ownerState) updateCommit() {
	r := o.r
	if o.recovery != nil {
		o.stepRecovery(recovery.Progress{Facts: o.recoveryFacts()})
	}
	if !r.serving() && o.opening == 0 {
		return
	}
	c := r.log.DurableIndex()
	if bugs.Active(bugs.ConfirmBeforeSync) {
		c = r.log.LastIndex()
	}
	if need := quorum(o.policy, len(r.members)) - 1; need > 0 {
		held := make([]uint64, 0, len(o.followers))
		for _, f := range o.followers {
			held = append(held, min(f.match, f.durable))
		}
		slices.Sort(held)
		slices.Reverse(held)
		if need > len(held) {
			return
		}
		c = min(c, held[need-1])
	}
	if c <= o.commit {
		return
	}
	o.commit = c
	r.noteCommit(c)
	r.n.emit(event.NewQueueCommit(r.name, c, r.epoch))
	r.n.env.Boundary("queue.after.commit")
	if o.opening != 0 && c >= o.opening {
		o.finishOpening()
	}
	for len(o.waiters) > 0 && o.waiters[0].index <= c {
		w := o.waiters[0]
		o.waiters = o.waiters[1:]
		o.answer(w, wire.StatusOK, 0, "")
	}
	o.maybeCertify()
	o.askMoves(r.n.env.Now())
	o.pump()
}

// replicate sends each follower what it lacks: while serving, or while a
// recovery installs the recovered history.
func (o *ownerState) replicate() {
	if !o.r.serving() && !o.installing() && o.opening == 0 {
		return
	}
	for _, f := range o.followers {
		o.sendTo(f)
	}
}

// sendTo streams new entries to a follower in sync, or sends one probe
// page to a follower whose position is uncertain.
func (o *ownerState) sendTo(f *progress) {
	last := o.r.log.LastIndex()
	if f.next < o.r.log.FirstIndex() {
		// The follower needs records this log no longer holds.
		if !f.probeOutstanding {
			o.sendCheckpoint(f)
		}
		return
	}
	if f.probing {
		if f.probeOutstanding {
			return
		}
		o.sendPage(f, f.next, last)
		f.probeOutstanding, f.probeSentAt = true, o.r.n.env.Now()
		return
	}
	for f.next <= last {
		sent, ok := o.sendPage(f, f.next, last)
		if !ok {
			return
		}
		f.next = sent + 1
	}
}

// sendPage sends entries from..(at most last) in one bounded Append and
// returns the last index it carried.
func (o *ownerState) sendPage(f *progress, from, last uint64) (uint64, bool) {
	r := o.r
	prev := from - 1
	m := &wire.Append{Queue: r.name, Incarnation: r.inc, Epoch: r.epoch, PrevIndex: prev, PrevEpoch: r.epochOf(prev), Commit: o.commit, Stamp: r.n.leaseClock(), Rest: o.resting}
	if r.role == roleStale {
		return prev, false
	}
	if from <= last {
		if f.reader == nil || f.reader.Position() != from {
			if f.reader != nil {
				f.reader.Close()
			}
			f.reader = r.log.NewReader(from)
		}
		page, err := f.reader.Next(last, r.n.cfg.PageRecords, r.n.cfg.PageBytes)
		if err != nil {
			o.readFailed(err)
			return prev, false
		}
		for _, rec := range page {
			m.Entries = append(m.Entries, wire.Entry{Type: uint8(rec.Type), Body: bytes.Clone(rec.Body)})
		}
	}
	m.Delivered, f.counts = f.counts, nil
	f.sentAt = m.Stamp
	if r.n.appendTick == nil {
		r.n.appendTick = make(map[NodeID]uint64)
	}
	r.n.appendTick[f.id] = r.n.tickSeq
	r.n.env.Send(f.id, m)
	return prev + uint64(len(m.Entries)), true
}

// readFailed handles a failed read of the owner's own log.
func (o *ownerState) readFailed(err error) { o.r.readFailed(err) }

func (o *ownerState) progressOf(id NodeID) *progress {
	for _, f := range o.followers {
		if f.id == id {
			return f
		}
	}
	return nil
}

func (n *Node) onAppendReply(from NodeID, m *wire.AppendReply) {
	r := n.queues[m.Queue]
	if r == nil || r.inc != m.Incarnation || !(r.serving() || r.role == roleCandidate && (r.own.installing() || r.own.opening != 0)) {
		return
	}
	o := r.own
	f := o.progressOf(from)
	switch {
	case f == nil || m.Epoch < r.epoch:
		return // not a follower, or an answer to an older owner
	case m.Epoch > r.epoch:
		o.goStale(NodeID(m.Owner), fmt.Sprintf("%s has seen epoch %d, newer than this owner's %d", from, m.Epoch, r.epoch))
		return
	}
	o.noteFollowerDisk(f, m.DiskFull)
	if m.Last < f.match {
		// The follower restarted and lost entries it had not made durable.
		f.match = m.Last
	}
	if m.OK {
		o.onAccepted(f, m)
		return
	}
	if f.probing && m.Match+1 != f.next {
		return // the rejection of an append sent before the current probe
	}
	f.probing, f.probeOutstanding = true, false
	// Resume at the follower's hint (its last entry, or the start of its
	// conflicting run), never before what is known to match.
	f.next = max(f.match+1, min(m.Match, m.Last+1))
	o.sendTo(f)
}

func (o *ownerState) onAccepted(f *progress, m *wire.AppendReply) {
	f.match = max(f.match, m.Match)
	f.durable = m.Durable
	f.leaseFrom = max(f.leaseFrom, m.Stamp)
	if o.activationWaits && o.activationGranted() {
		if o.opening != 0 {
			// A quorum already holds the marker: the commit will not
			// move again to finish the opening.
			o.finishOpening()
		} else {
			o.r.n.reconcile(o.r.name) // finishes the recovery, if the metadata still wants it
			if o.r.own != o {
				return
			}
		}
	}
	if f.probing && m.Match+1 >= f.next {
		f.probing, f.probeOutstanding = false, false
	}
	f.next = max(f.next, f.match+1)
	o.updateCommit()
	o.sendTo(f)
	o.noteWakeAnswered()
}

// peerReset notes that a follower's process may have died: what it had
// not made durable may be gone, so its position must be probed again.
func (r *replica) peerReset(peer NodeID) {
	if !r.hasOwnerSide() || r.own == nil {
		return // a candidate counts its followers' progress toward activation too
	}
	o := r.own
	if f := o.progressOf(peer); f != nil {
		f.match = min(f.match, f.durable)
		f.probing, f.probeOutstanding = true, false
	}
}

// ownerTick sends heartbeats (which double as probes), retries a probe
// that got no answer, expires leases and promotes due delayed messages.
func (r *replica) ownerTick() {
	if !r.hasOwnerSide() {
		return
	}
	o := r.own
	if o.recovery != nil {
		o.stepRecovery(recovery.Tick{Facts: o.recoveryFacts()})
	}
	if !r.serving() && !o.installing() && o.opening == 0 && !o.activationWaits {
		return
	}
	if r.serving() {
		o.restTick()
	}
	now := r.n.env.Now()
	for _, f := range o.followers {
		if f.probing && f.probeOutstanding && now.Sub(f.probeSentAt) > 4*r.n.cfg.Tick {
			// No answer: a chunk of a checkpoint goes again from offset
			// 0, which asks the follower where its transfer stands.
			f.probeOutstanding, f.ckptOffset = false, 0
		}
		if f.probing || f.next < r.log.FirstIndex() {
			o.sendTo(f)
			continue
		}
		if !o.heartbeatDue(f) {
			continue
		}
		if f.reader != nil && f.next > r.log.LastIndex() {
			// Caught up: the reader's handle goes until the log grows,
			// so an idle queue holds one descriptor (its log's tail),
			// not one more per follower. A busy one reopens it at most
			// once a tick.
			f.reader.Close()
			f.reader = nil
		}
		o.sendPage(f, f.next, f.next-1) // a heartbeat: no entries, checks f.next-1
	}
	o.noteCutOff()
	o.ticks++
	o.certifyTick()
	o.maybeCertify() // the interval trigger, on a queue that confirms nothing new
	o.expireLeases(now)
	o.promoteDue(now)
	o.askMoves(now)
	o.pump()
}

// heartbeatDue reports whether a caught-up follower is due an empty
// append. An owner with subscribers sends one every tick: its delivery
// lease is short; so does a recovering candidate. So does the first
// queue this tick to reach a peer: appends are also what tells each node
// that its peers are alive, between the detector's pings, and a node
// that heard less from its peers would suspect them more often. Any
// other owner needs only to keep its quorum's grant well inside the
// limits its peers judge it by (the silence after which it steps back,
// and after which a follower holds requests for it), so it sends one
// when a quarter of the shorter has passed since the last append: a node
// with many idle queues then sends a fraction of the messages, and fewer
// grants can only make an owner step back sooner, never later.
func (o *ownerState) heartbeatDue(f *progress) bool {
	n := o.r.n
	if o.resting {
		// Seldom, and only to learn of a follower that restarted or was
		// sealed by a newer epoch (rest.go).
		now := n.leaseClock()
		return now-min(f.sentAt, now) >= uint64(o.restHeartbeatEvery())
	}
	if len(o.subs) > 0 || !o.r.serving() || n.appendTick[f.id] != n.tickSeq {
		return true
	}
	every := max(n.cfg.Tick, min(n.ownerSilenceLimit(), resetParkWindow)/4)
	now := n.leaseClock()
	return now-min(f.sentAt, now) >= uint64(every)
}

// installing reports whether a recovery is replicating the recovered
// history before activation.
func (o *ownerState) installing() bool {
	return o.recovery != nil && o.recovery.Stage() == recovery.StageInstall && o.built
}

// goStale marks this owner superseded: a replica holds a newer epoch, so
// nothing more it writes can be confirmed. Its clients hear that it is
// fenced, and who owns the queue now, if known.
func (o *ownerState) goStale(owner NodeID, why string) {
	if !o.r.writer() {
		return
	}
	o.staleOwner = owner
	o.r.become(roleStale, why)
	o.r.n.emit(event.NewQueueStale(o.r.name, o.r.epoch, why))
	o.stop(owner)
}

// stop ends this owner's service: waiting clients are told it is fenced
// (their requests may or may not survive in the next owner's history, so
// the answer is retryable and ambiguous), leases are dropped, readers
// closed.
func (o *ownerState) stop(owner NodeID) {
	o.r.n.emit(event.NewQueueOwnerStopped(o.r.name, o.r.epoch, uint32(owner)))
	o.endHandoff(owner)
	o.abortRebuild()
	waiters := o.waiters
	o.waiters = nil
	for _, w := range waiters {
		w.index = 0
		o.answer(w, wire.StatusFenced, owner, "")
	}
	o.refuseHeldPurges()
	// Subscribers hear, as a late answer to their subscribe request, that
	// this node no longer serves the queue; they subscribe elsewhere.
	for _, s := range o.subs {
		o.r.n.env.Reply(s.conn, &wire.Reply{ReqID: s.reqID, Status: wire.StatusFenced, Owner: uint32(owner)})
	}
	o.subs = nil
	for _, f := range o.followers {
		if f.reader != nil {
			f.reader.Close()
			f.reader = nil
		}
	}
	if o.recovery != nil {
		o.stepRecovery(recovery.Stop{Why: "the owner stopped"})
	}
	o.endRest()
}

// deliveryLease is how long, on the node's monotonic clock, a quorum's
// answers let an owner keep delivering. Deliveries are reads: an owner
// that a partition has cut from its followers, or that was stopped for a
// while, must stop serving before a recovery elsewhere can start serving
// the same messages. The clock is Env.Monotonic, read at the moment of
// each decision, because it keeps counting while a process is stopped:
// a count of the node's own timer ticks would not, and an owner resumed
// after a long pause would think its lease young.
const deliveryLease = 60 * time.Millisecond

// leaseClock is the node's monotonic clock as appends stamp it.
func (n *Node) leaseClock() uint64 {
	if bugs.Active(bugs.LeaseClockCountsTicks) {
		// Planted: the clock is the count of ticks this process ran.
		return n.tickSeq * uint64(n.cfg.Tick)
	}
	return uint64(n.env.Monotonic())
}

// leaseValid reports whether enough followers accepted appends this owner
// sent within the lease to make a quorum with it: none of them can have
// been sealed by a newer epoch before that, so no other owner can be
// serving yet. The first time a lease that held runs out, it says so
// once: an owner that keeps losing its lease under load delivers in fits.
func (o *ownerState) leaseValid() bool {
	age, ok := o.leaseAge()
	valid := ok && age < uint64(deliveryLease)
	if !valid && o.leaseHeld && ok {
		o.r.n.emit(event.NewQueueLeaseLapsed(o.r.name, o.r.epoch, time.Duration(age)))
	}
	o.leaseHeld = valid
	return valid
}

// leaseAge is how long ago, on the lease clock, this owner sent the
// appends whose acceptance makes the freshest quorum with it; ok is false
// while no quorum has accepted any.
func (o *ownerState) leaseAge() (age uint64, ok bool) {
	at, ok := o.quorumGrantAt()
	if !ok {
		return 0, false
	}
	now := o.r.n.leaseClock()
	return now - min(at, now), true
}

// quorumGrantAt is the send stamp, on the lease clock, of the appends
// whose acceptance makes the freshest quorum with this owner; ok is false
// while no quorum has accepted any. A queue whose quorum is the owner
// alone is always granted: it is stamped now.
func (o *ownerState) quorumGrantAt() (at uint64, ok bool) {
	need := quorum(o.policyOf(), len(o.r.members)) - 1
	if need <= 0 {
		return o.r.n.leaseClock(), true
	}
	// Every client request asks this (an owner cut off from its quorum
	// refuses it), so the stamps are sorted in place on the stack: replica
	// sets hold a handful of members.
	var stamps [8]uint64
	from := stamps[:0]
	for _, f := range o.followers {
		from = append(from, f.leaseFrom)
	}
	slices.Sort(from)
	if need > len(from) || from[len(from)-need] == 0 {
		return 0, false
	}
	return from[len(from)-need], true
}
