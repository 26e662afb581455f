package node

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// recoveryStage is where a recovery is.
type recoveryStage int

const (
	stageSeal    recoveryStage = iota // sealing replicas and collecting witnesses
	stageFetch                        // copying the chosen source's history
	stageInstall                      // replicating the recovered history under the new epoch
)

var stageNames = [...]string{"seal", "fetch", "install"}

func (s recoveryStage) String() string { return stageNames[s] }

// Resend intervals, in owner ticks.
const (
	sealResendTicks  = 5
	fetchResendTicks = 10
	fetchGiveUpTicks = 50
)

// witness is what a sealed replica reported holding.
type witness struct {
	node            NodeID
	first, last     uint64
	lastEpoch       uint64
	digest          storage.Digest
	historyID, proc uint64
	// suspect says the replica restarted over its storage and has not
	// been verified since: its disk may have lost what it reported.
	suspect bool
	// commit is the highest index the replica knows was confirmed.
	commit uint64
}

// recovery brings a queue back after its owner was lost. The candidate
// seals replicas at its new epoch (each then refuses the old owner) until
// the sealed set intersects every confirmation quorum; the witness with
// the most advanced history (highest last epoch, then last index) holds
// every confirmed record, because each confirmed record is durable on a
// confirmation quorum. The candidate copies what it lacks from that source
// in verified pages, appends a marker in its own epoch, and activates once
// an exact quorum holds the marker durably: the marker is what makes any
// later recovery prefer this history over anything older.
type recovery struct {
	o         *ownerState
	r         *replica
	epoch     uint64
	stage     recoveryStage
	witnesses []witness
	source    witness
	ticks     uint64
	// fetchSent is the tick of the fetch in flight, or 0.
	fetchSent          uint64
	fetchStart         uint64
	marker             uint64
	activationProposed bool
	// unsupported is set once the sealed witnesses were found to lack
	// records some of them know were confirmed (reported once).
	unsupported bool
	// sealSet is the replica set whose witnesses count toward the seal
	// quorum: the set before a pending replacement, else the current one.
	// A replacement holds nothing, so its witness proves nothing.
	sealSet []NodeID
	// sealedAt is when the seal quorum formed, on the monotonic clock: the
	// old owner's delivery lease cannot outlast it by more than the lease.
	sealedAt   uint64
	started    time.Time
	stageStart time.Time
	// The attempt's costs, reported when it ends: messages sent, payload
	// bytes copied, group commits of the log since the attempt began
	// (plus the sealing epoch write), and the attempt's number within
	// its epoch (1 for the first, more after retries).
	rpcs    int
	copied  int
	syncsAt uint64
	attempt int
}

// startRecovery begins recovering in the plan's epoch, sealing this
// replica first.
func (o *ownerState) startRecovery(q *QueueMeta) { o.startRecoveryAttempt(q, 1) }

// startRecoveryAttempt begins attempt number attempt of the recovery.
func (o *ownerState) startRecoveryAttempt(q *QueueMeta, attempt int) {
	r := o.r
	now := r.n.env.Now()
	sealSet := q.Replicas
	if len(q.Prior) > 0 {
		sealSet = q.Prior
	}
	rec := &recovery{o: o, r: r, epoch: q.Epoch, started: now, stageStart: now, syncsAt: r.log.SyncBatches(), attempt: attempt,
		sealSet: slices.Clone(sealSet)}
	o.recovery = rec
	if r.role != roleCandidate {
		r.become(roleCandidate, fmt.Sprintf("recovering epoch %d", q.Epoch))
	}
	r.n.emit(event.NewRecoveryStart(r.name, q.Epoch, attempt))
	r.follow.epochOwner = r.n.cfg.ID
	r.epoch = max(r.epoch, q.Epoch)
	r.n.env.Boundary("recovery.before.seal-persisted")
	r.persistEpoch(r.epoch, func() {
		r.n.env.Boundary("recovery.after.seal-persisted")
		if o.recovery == rec {
			rec.addWitness(r.witness())
		}
	})
	rec.sendSeals()
}

// witness describes what this replica holds.
func (r *replica) witness() witness {
	last := r.log.LastIndex()
	return witness{
		node: r.n.cfg.ID, first: r.log.FirstIndex(), last: last, lastEpoch: r.epochOf(last),
		digest: r.log.Digest(), historyID: r.identity.HistoryID, proc: r.n.process,
		suspect: r.suspect, commit: r.commitKnown,
	}
}

func (rec *recovery) sendSeals() {
	for _, m := range rec.sealSet {
		if m != rec.r.n.cfg.ID && !slices.ContainsFunc(rec.witnesses, func(w witness) bool { return w.node == m }) {
			rec.rpcs++
			rec.r.n.env.Send(m, &wire.Seal{Queue: rec.r.name, Incarnation: rec.r.inc, Epoch: rec.epoch})
		}
	}
}

// sealQuorum is how many sealed witnesses make a set that intersects every
// confirmation quorum of the policy.
func sealQuorum(p wire.Policy, members int) int {
	if bugs.Active(bugs.SkipSeal) {
		return 1
	}
	if p == wire.PolicyAll {
		return 1 // every confirmed record is on every replica
	}
	return members - quorum(p, members) + 1
}

func (rec *recovery) addWitness(w witness) {
	if rec.stage != stageSeal || slices.ContainsFunc(rec.witnesses, func(x witness) bool { return x.node == w.node }) ||
		!slices.Contains(rec.sealSet, w.node) {
		return
	}
	if w.historyID != rec.r.identity.HistoryID {
		rec.r.n.emit(event.NewRecoveryForeignHistory(rec.r.name, uint32(w.node)))
		return
	}
	if q := rec.r.n.meta.state.queues[rec.r.name]; q != nil && slices.Contains(q.Lost, w.node) {
		// A replica found damaged is no evidence, whatever it says now:
		// damage can leave a log that reopens clean but short.
		rec.r.n.emit(event.NewRecoveryLostWitness(rec.r.name, uint32(w.node)))
		return
	}
	rec.witnesses = append(rec.witnesses, w)
	slices.SortFunc(rec.witnesses, func(a, b witness) int { return cmp.Compare(a.node, b.node) })
	if rec.sealed() && rec.hasSelf() {
		rec.choose()
	}
}

// sealed reports whether the witnesses are enough to find every confirmed
// record even if one replica's disk lost writes it had reported synced.
// A seal quorum intersects every confirmation quorum; if none of its
// members is suspect, each intersection holds a replica that has what it
// reported. Otherwise one more witness than a seal quorum is needed: then
// every confirmation quorum meets the witnesses in two replicas, and at
// most one of them can have lost its copy. (The owner-only policy has no
// spare replica: a lost write on its owner loses what it confirmed.)
// The fault model allows one lying replica per queue at a time, so once
// a replica of the set was found damaged, the others are believed.
func (rec *recovery) sealed() bool {
	if bugs.Active(bugs.SkipSeal) {
		return true // planted: its own witness is enough
	}
	need := sealQuorum(rec.o.policyOf(), len(rec.sealSet))
	if rec.liarKnown() {
		return len(rec.witnesses) >= need
	}
	trusted := 0
	for _, w := range rec.witnesses {
		if !w.suspect {
			trusted++
		}
	}
	return trusted >= need || len(rec.witnesses) >= min(need+1, len(rec.sealSet))
}

func (rec *recovery) hasSelf() bool {
	return slices.ContainsFunc(rec.witnesses, func(w witness) bool { return w.node == rec.r.n.cfg.ID })
}

// policyOf is the queue's policy as the metadata has it.
func (o *ownerState) policyOf() wire.Policy {
	if q := o.r.n.meta.state.queues[o.r.name]; q != nil {
		return q.Policy
	}
	return o.policy
}

// liarKnown reports whether the metadata holds a replica of the seal set
// lost to damage.
func (rec *recovery) liarKnown() bool {
	q := rec.r.n.meta.state.queues[rec.r.name]
	return q != nil && slices.ContainsFunc(q.Lost, func(id NodeID) bool { return slices.Contains(rec.sealSet, id) })
}

// knownCommit is the highest index any witness knows was confirmed.
func (rec *recovery) knownCommit(self witness) uint64 {
	known := self.commit
	for _, w := range rec.witnesses {
		known = max(known, w.commit)
	}
	return known
}

// more reports whether witness a holds a more advanced history than b.
func more(a, b witness) bool {
	if a.lastEpoch != b.lastEpoch {
		return a.lastEpoch > b.lastEpoch
	}
	return a.last > b.last
}

// choose selects the source among the sealed witnesses: the most advanced
// history, this replica on a tie (it saves a copy).
func (rec *recovery) choose() {
	self := rec.r.witness()
	src := self
	for _, w := range rec.witnesses {
		better := more(w, src)
		if bugs.Active(bugs.ShortestSource) {
			better = more(src, w)
		}
		if better {
			src = w
		}
	}
	if known := rec.knownCommit(self); src.last < known {
		// A witness knows records up to known were confirmed, and no
		// witness holds them all: the sealed replicas lost some of them
		// (a disk that lied). Wait for the other replicas; if none holds
		// them either, the queue stays down and says why.
		if !rec.unsupported {
			rec.unsupported = true
			rec.r.n.emit(event.NewRecoveryUnsupported(rec.r.name, rec.epoch, known, src.last, uint32(src.node), len(rec.witnesses)))
		}
		return
	}
	rec.source = src
	rec.sealedAt = rec.r.n.leaseClock()
	rec.r.n.emit(event.NewRecoveryStageSealed(rec.endStage(), len(rec.witnesses), uint32(src.node), src.last, src.lastEpoch))
	if src.node == self.node || bugs.Active(bugs.InstallBeforeReadsDone) {
		rec.install()
		return
	}
	rec.stage = stageFetch
	rec.fetchStart = rec.ticks
	rec.sendFetch()
}

func (rec *recovery) sendFetch() {
	prev := rec.r.log.LastIndex()
	rec.fetchSent = rec.ticks + 1
	rec.rpcs++
	rec.r.n.env.Send(rec.source.node, &wire.Fetch{Queue: rec.r.name, Incarnation: rec.r.inc, Epoch: rec.epoch, PrevIndex: prev, PrevEpoch: rec.r.epochOf(prev)})
}

// onFetchReply takes one page from the source: drop a conflicting suffix
// of this log, or append the page; when the source's witnessed end is
// reached, the history must match its witnessed digest exactly.
func (rec *recovery) onFetchReply(from NodeID, m *wire.FetchReply) {
	r := rec.r
	if rec.stage != stageFetch || from != rec.source.node || m.Epoch != rec.epoch {
		return
	}
	rec.fetchSent = 0
	if !m.OK {
		if m.Hint >= r.log.LastIndex() || m.Last < rec.source.last {
			// A source that no longer holds what it witnessed (it
			// restarted, perhaps over a disk that lost writes, and its
			// refusal says where its log ends, not where ours conflicts)
			// must never make this log shorter.
			rec.restart("the source does not hold what it witnessed")
			return
		}
		if m.Hint < r.commitKnown {
			// Only this replica's own commit knowledge counts here: another
			// witness's commit says which indexes were confirmed, not that
			// this log's entries at them are the confirmed ones.
			r.n.emit(event.NewQueueRefusedTruncation(r.name, rec.epoch, uint32(from),
				fmt.Errorf("the source conflicts after %d, below the known commit %d", m.Hint, r.commitKnown)))
			rec.restart("the source's history conflicts with confirmed records")
			return
		}
		r.n.emit(event.NewQueueTruncate(r.name, m.Hint))
		if r.log.TruncateAfter(m.Hint) != nil {
			return
		}
		r.noteTruncated(m.Hint)
		rec.sendFetch()
		return
	}
	if err := r.acceptEntries(m.PrevIndex, rec.epoch, m.Entries); err != nil {
		rec.restart("a page from the source does not decode: " + err.Error())
		return
	}
	for _, e := range m.Entries {
		rec.copied += len(e.Body)
	}
	if r.log.LastIndex() < rec.source.last {
		rec.sendFetch()
		return
	}
	last := r.log.LastIndex()
	if last != rec.source.last || r.epochOf(last) != rec.source.lastEpoch || r.log.Digest() != rec.source.digest {
		r.n.emit(event.NewRecoveryContradiction(r.name, last, r.log.Digest().String(), rec.source.digest.String()))
		rec.restart("the copied history does not match the source's witness")
		return
	}
	r.n.emit(event.NewRecoveryStageFetched(rec.endStage(), rec.copied))
	rec.install()
}

// install makes this replica's history the recovered one: it rebuilds the
// served state from it, appends the epoch marker and replicates.
func (rec *recovery) install() {
	o, r := rec.o, rec.r
	rec.stage = stageInstall
	rec.stageStart = r.n.env.Now()
	state, err := r.buildState()
	if err != nil {
		r.readFailed(err)
		return
	}
	o.state = state
	for _, f := range o.followers {
		f.next, f.match, f.durable = r.log.LastIndex()+1, 0, 0
		f.probing, f.probeOutstanding = true, false
	}
	r.n.env.Boundary("recovery.before.install")
	rec.marker = o.append(record{typ: recordEpochMark})
	r.n.env.Boundary("recovery.after.install")
	rec.checkInstalled()
}

// checkInstalled proposes activation once an exact quorum, this replica
// among them, holds the marker durably.
func (rec *recovery) checkInstalled() {
	o, r := rec.o, rec.r
	if rec.stage != stageInstall || rec.activationProposed || rec.marker == 0 || r.log.DurableIndex() < rec.marker {
		return
	}
	need := quorum(o.policyOf(), len(r.members))
	if bugs.Active(bugs.ActivateWithoutQuorum) {
		need = 1
	}
	members := []NodeID{r.n.cfg.ID}
	for _, f := range o.followers {
		if len(members) < need && min(f.match, f.durable) >= rec.marker {
			members = append(members, f.id)
		}
	}
	if len(members) < need {
		return
	}
	// Wait out the old owner's delivery lease (with a margin for clock
	// rates): until then it might still hand out messages this owner would
	// hand out again.
	if r.n.leaseClock() < rec.sealedAt+uint64(deliveryLease)*5/4 {
		return
	}
	if bugs.Active(bugs.ActivateWithoutQuorum) {
		members = rec.padMembers(members)
	}
	slices.Sort(members)
	rec.activationProposed = true
	r.n.env.Boundary("recovery.before.activate")
	r.n.meta.propose(command{kind: cmdActivateRecovered, name: r.name, inc: r.inc, epoch: rec.epoch, node: r.n.cfg.ID,
		process: r.n.process, members: members}, lifecycleTimeoutTicks, func(res result) {
		rec.activationProposed = false
		if !res.ok {
			r.n.emit(event.NewRecoveryActivateFailed(r.name, res.detail))
		}
	})
}

// padMembers fills a too-small member list with replicas that hold
// nothing installed, which only the planted bug does.
func (rec *recovery) padMembers(members []NodeID) []NodeID {
	need := quorum(rec.o.policyOf(), len(rec.r.members))
	for _, m := range rec.r.members {
		if len(members) < need && !slices.Contains(members, m) {
			members = append(members, m)
		}
	}
	return members
}

// finishRecovery admits clients once the metadata has activated this
// owner: everything up to the marker is the confirmed history.
func (o *ownerState) finishRecovery(q *QueueMeta) {
	rec := o.recovery
	rec.r.n.emit(event.NewRecoveryStageInstalled(rec.endStage(), rec.marker))
	o.recovery = nil
	o.policy = q.Policy
	o.commit = max(o.commit, rec.marker)
	r := o.r
	r.becomeOwner("the recovery activated")
	r.noteCommit(o.commit)
	r.trust("installed a history selected from a seal")
	r.n.emit(event.NewRecoveryDone(event.Recovery{
		Queue: r.name, Epoch: rec.epoch, Took: r.n.env.Now().Sub(rec.started),
		RPCs: rec.rpcs, Bytes: rec.copied, Syncs: 1 + r.log.SyncBatches() - rec.syncsAt, Attempt: rec.attempt,
	}))
	r.n.emit(event.NewQueueActive(r.name, r.epoch, r.inc, r.log.LastIndex()))
	o.updateCommit()
	o.replicate()
	o.pump()
}

// endStage ends the current stage's timing and returns what every
// recovery.stage event reports of it; the caller adds how it ended.
func (rec *recovery) endStage() event.StageEnd {
	now := rec.r.n.env.Now()
	s := event.StageEnd{Queue: rec.r.name, Epoch: rec.epoch, Stage: rec.stage.String(), Took: now.Sub(rec.stageStart)}
	rec.stageStart = now
	return s
}

// restart abandons the attempt and starts over from sealing, in the same
// epoch: this process still owns it.
func (rec *recovery) restart(why string) {
	rec.r.n.emit(event.NewRecoveryStageRetry(rec.endStage(), why))
	o := rec.o
	q := o.r.n.meta.state.queues[o.r.name]
	o.recovery = nil
	if q != nil && q.State == QueueRecovering && q.Epoch == rec.epoch {
		o.startRecoveryAttempt(q, rec.attempt+1)
	}
}

func (rec *recovery) abandon(why string) {
	rec.r.n.emit(event.NewRecoveryAbandoned(rec.r.name, rec.epoch, why))
	rec.o.recovery = nil
}

// tick resends what got no answer.
func (rec *recovery) tick() {
	rec.ticks++
	switch rec.stage {
	case stageSeal:
		if rec.ticks%sealResendTicks == 0 {
			// The metadata may have learned of a damaged replica since
			// the last witness arrived, which changes what is enough.
			if rec.sealed() && rec.hasSelf() {
				rec.choose()
				return
			}
			rec.sendSeals()
		}
	case stageFetch:
		switch {
		case rec.ticks-rec.fetchStart > fetchGiveUpTicks:
			rec.restart("the source stopped answering")
		case rec.fetchSent != 0 && rec.ticks-rec.fetchSent > fetchResendTicks:
			rec.sendFetch()
		}
	case stageInstall:
		rec.checkInstalled()
	}
}

// String renders the recovery for debugging.
func (rec *recovery) String() string {
	return fmt.Sprintf("recovery{%s epoch=%d stage=%s witnesses=%d}", rec.r.name, rec.epoch, rec.stage, len(rec.witnesses))
}
