// Package recovery holds the decisions of an owner recovery as a pure
// state machine. A driver (the node) feeds it inputs: its own seal
// becoming durable, seal replies, fetch pages, the completion of what it
// asked the driver to do, install progress, metadata outcomes and ticks.
// Each input returns actions as data: messages to send, log changes to
// make, the activation to propose, the attempt to restart or abandon, and
// the events to emit, in the order the driver must carry them out. The
// core does no I/O, reads no clock and keeps no reference to the node:
// everything it needs to know about the replica arrives in the input's
// Facts.
//
// One attempt moves through three stages:
//
//	seal    seal this replica (SealSelf) and every other replica of the
//	        seal set (Send Seal); wait for Sealed and SealReply inputs
//	        until the witnesses are enough (sealed) and include this
//	        replica, then choose the source.
//	fetch   when the source is another replica: ask it for pages (Send
//	        Fetch), truncate a conflicting suffix (Truncate, answered by
//	        Truncated) or append each page (AppendPage, answered by
//	        PageAppended) until this log ends where the source's witness
//	        said, with the witnessed digest.
//	install rebuild the served state and append this epoch's marker
//	        (Install, answered by Installed); once an exact quorum holds
//	        the marker durably and the old owner's delivery lease ran out,
//	        propose activation (ProposeActivation, answered by
//	        ActivationResult); when the metadata activates this owner
//	        (Activated), become owner (Activate) and admit clients (Admit).
//
// A failure restarts the attempt from sealing in the same epoch (Restart);
// a stopped owner abandons it (Abandon); a replica sealed at a newer
// epoch makes this candidate stale (Stale).
package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Resend and give-up intervals, in owner ticks.
const (
	sealResendTicks  = 5
	fetchResendTicks = 10
	fetchGiveUpTicks = 50
)

// Core is one recovery attempt: the candidate seals replicas at its new
// epoch (each then refuses the old owner) until the sealed set intersects
// every confirmation quorum; the witness with the most advanced history
// (highest last epoch, then last index) holds every confirmed record,
// because each confirmed record is durable on a confirmation quorum. The
// candidate copies what it lacks from that source in verified pages,
// appends a marker in its own epoch, and activates once an exact quorum
// holds the marker durably: the marker is what makes any later recovery
// prefer this history over anything older.
type Core struct {
	cfg       Config
	stage     Stage
	witnesses []Witness
	source    Witness
	ticks     uint64
	// fetchSent is the tick (plus one) of the fetch in flight, or 0;
	// fetchHeard is the tick the source last answered (or the fetch
	// stage began): a source that goes on answering, page after page or
	// chunk after chunk of a checkpoint, is never given up on.
	fetchSent  uint64
	fetchHeard uint64
	// pageBytes is the payload of the page handed to the driver to
	// append, counted as copied once the driver says it was appended.
	pageBytes          int
	marker             uint64
	activationProposed bool
	// installed is set once an exact quorum held this attempt's marker:
	// only then may an activation end the attempt.
	installed bool
	// admitted is set once the planted bug admit-before-install-quorum
	// made this candidate the owner ahead of its activation; the attempt
	// then lives on only to propose that activation and hear of it.
	admitted bool
	// unsupported is set once the sealed witnesses were found to lack
	// records some of them know were confirmed (reported once).
	unsupported bool
	// leaseGrantsEnd is, on this node's lease clock, the latest moment
	// any witness may have let an older owner renew its delivery lease.
	// The witnesses meet every quorum the old owner's lease needs, and a
	// sealed witness grants nothing more, so the old owner's lease cannot
	// outlast this by more than the lease.
	leaseGrantsEnd uint64
	// released says the old owner answered the seal itself, released
	// (wire.SealReply.Released): the new owner holds nothing back.
	released   bool
	stageStart time.Time
	// The attempt's costs, reported when it ends: messages sent and
	// payload bytes copied.
	rpcs   int
	copied int
}

// New returns the core of one recovery attempt. It panics on a
// configuration that cannot work: that is a bug in the driver.
func New(cfg Config) *Core {
	if cfg.Self == 0 || cfg.Epoch == 0 || cfg.Attempt < 1 {
		panic(fmt.Sprintf("recovery: invalid config: self %d, epoch %d, attempt %d", cfg.Self, cfg.Epoch, cfg.Attempt))
	}
	cfg.SealSet = slices.Clone(cfg.SealSet)
	return &Core{cfg: cfg, stageStart: cfg.Now}
}

// Epoch is the epoch the attempt recovers into.
func (c *Core) Epoch() uint64 { return c.cfg.Epoch }

// Stage is where the attempt is.
func (c *Core) Stage() Stage { return c.stage }

// Start begins the attempt: it reports the start, seals this replica and
// asks every other replica of the seal set for its seal.
func (c *Core) Start() []Action {
	acts := []Action{Emit{event.NewRecoveryStart(c.cfg.Queue, c.cfg.Epoch, c.cfg.Attempt)}, SealSelf{Epoch: c.cfg.Epoch}}
	return append(acts, c.sendSeals()...)
}

// Step takes one input and returns what the driver must do, in order.
func (c *Core) Step(in Input) []Action {
	switch in := in.(type) {
	case Sealed:
		return c.addWitness(in.Self, in.Facts)
	case SealReply:
		return c.onSealReply(in)
	case FetchReply:
		return c.onFetchReply(in)
	case CheckpointOffered:
		return c.onCheckpointOffered(in)
	case Truncated:
		return c.onTruncated(in)
	case PageAppended:
		return c.onPageAppended(in)
	case Installed:
		return c.onInstalled(in)
	case Progress:
		return c.checkInstalled(in.Facts)
	case ActivationResult:
		return c.onActivationResult(in)
	case Activated:
		return c.onActivated(in)
	case ChunkReceived:
		return c.onChunkReceived(in)
	case Tick:
		return c.onTick(in.Facts)
	case Stop:
		return []Action{Emit{event.NewRecoveryAbandoned(c.cfg.Queue, c.cfg.Epoch, in.Why)}, Abandon{Why: in.Why}}
	}
	panic(fmt.Sprintf("recovery: unknown input %T", in))
}

// ---- seal: collect witnesses until they intersect every confirmation quorum.

// sendSeals asks every replica of the seal set that has not answered yet.
func (c *Core) sendSeals() []Action {
	var acts []Action
	for _, m := range c.cfg.SealSet {
		if m != c.cfg.Self && !c.has(m) {
			c.rpcs++
			acts = append(acts, Send{To: m, Msg: &wire.Seal{Queue: c.cfg.Queue, Incarnation: c.cfg.Incarnation, Epoch: c.cfg.Epoch}})
		}
	}
	return acts
}

// onSealReply takes a replica's answer to a seal. A refusal that names a
// newer epoch means this plan is stale; an answer in another incarnation
// or epoch is a straggler and proves nothing about this attempt.
func (c *Core) onSealReply(in SealReply) []Action {
	m := in.Msg
	switch {
	case m.Incarnation != c.cfg.Incarnation:
		return nil
	case !m.OK && m.Epoch > c.cfg.Epoch:
		// The metadata will say what happened; stop here.
		return []Action{Stale{Owner: m.Owner, Why: "a replica was sealed at a newer epoch"}}
	case m.OK && m.Epoch == c.cfg.Epoch:
		if m.Released && m.HistoryID == c.cfg.HistoryID && slices.Contains(c.cfg.SealSet, in.From) {
			// The old owner stopped when sealed, and nothing older was
			// still delivering: there is no lease to wait out. It holds
			// whenever the answer comes, even after the source is chosen.
			c.released = true
		}
		w := Witness{Node: in.From, First: m.First, Last: m.Last, LastEpoch: m.LastEpoch, HistoryID: m.HistoryID,
			Process: m.Instance, Suspect: m.Suspect, Commit: m.Commit, LeaseGrantAgo: m.LeaseGrantAgo}
		copy(w.Digest[:], m.Digest)
		return c.addWitness(w, in.Facts)
	}
	return nil
}

// addWitness counts one sealed replica's witness, once, if it belongs to
// the seal set and is evidence at all, and chooses the source as soon as
// the witnesses are enough and include this replica.
func (c *Core) addWitness(w Witness, f Facts) []Action {
	if c.stage != StageSeal || c.has(w.Node) || !slices.Contains(c.cfg.SealSet, w.Node) {
		return nil
	}
	if w.HistoryID != c.cfg.HistoryID {
		return []Action{Emit{event.NewRecoveryForeignHistory(c.cfg.Queue, w.Node)}}
	}
	if slices.Contains(f.Lost, w.Node) {
		// A replica found damaged is no evidence, whatever it says now:
		// damage can leave a log that reopens clean but short.
		return []Action{Emit{event.NewRecoveryLostWitness(c.cfg.Queue, w.Node)}}
	}
	c.witnesses = append(c.witnesses, w)
	// The witness was sent no earlier than now on this clock, so now
	// minus its age is no earlier than its last grant.
	c.leaseGrantsEnd = max(c.leaseGrantsEnd, f.LeaseClock-min(w.LeaseGrantAgo, f.LeaseClock))
	slices.SortFunc(c.witnesses, func(a, b Witness) int { return cmp.Compare(a.Node, b.Node) })
	if c.sealed(f) && c.has(c.cfg.Self) {
		return c.choose(f)
	}
	return nil
}

// SealQuorum is how many sealed witnesses make a set that intersects
// every confirmation quorum of the policy among members replicas.
func SealQuorum(p wire.Policy, members int) int {
	if bugs.Active(bugs.SkipSeal) {
		return 1
	}
	if p == wire.PolicyAll {
		return 1 // every confirmed record is on every replica
	}
	return members - Quorum(p, members) + 1
}

// Quorum is how many replicas, the owner included, must hold a record
// before the policy confirms it.
func Quorum(p wire.Policy, members int) int {
	switch p {
	case wire.PolicyAll:
		return members
	case wire.PolicyOwnerOnly:
		return 1
	default:
		return members/2 + 1
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
func (c *Core) sealed(f Facts) bool {
	if bugs.Active(bugs.SkipSeal) {
		return true // planted: its own witness is enough
	}
	need := SealQuorum(f.Policy, len(c.cfg.SealSet))
	if c.liarKnown(f) {
		return len(c.witnesses) >= need
	}
	trusted := 0
	for _, w := range c.witnesses {
		if !w.Suspect {
			trusted++
		}
	}
	return trusted >= need || len(c.witnesses) >= min(need+1, len(c.cfg.SealSet))
}

// liarKnown reports whether the metadata holds a replica of the seal set
// lost to damage.
func (c *Core) liarKnown(f Facts) bool {
	return slices.ContainsFunc(f.Lost, func(id uint32) bool { return slices.Contains(c.cfg.SealSet, id) })
}

func (c *Core) has(node uint32) bool {
	return slices.ContainsFunc(c.witnesses, func(w Witness) bool { return w.Node == node })
}

// knownCommit is the highest index any witness, or this replica now,
// knows was confirmed.
func (c *Core) knownCommit(self Witness) uint64 {
	known := self.Commit
	for _, w := range c.witnesses {
		known = max(known, w.Commit)
	}
	return known
}

// more reports whether witness a holds a more advanced history than b.
func more(a, b Witness) bool {
	if a.LastEpoch != b.LastEpoch {
		return a.LastEpoch > b.LastEpoch
	}
	return a.Last > b.Last
}

// choose selects the source among the sealed witnesses: the most advanced
// history, this replica (as it is now) on a tie, since that saves a copy.
func (c *Core) choose(f Facts) []Action {
	self := f.Self
	src := self
	for _, w := range c.witnesses {
		better := more(w, src)
		if bugs.Active(bugs.ShortestSource) {
			better = more(src, w)
		}
		if better {
			src = w
		}
	}
	if known := c.knownCommit(self); src.Last < known {
		// A witness knows records up to known were confirmed, and no
		// witness holds them all: the sealed replicas lost some of them
		// (a disk that lied). Wait for the other replicas; if none holds
		// them either, the queue stays down and says why.
		if c.unsupported {
			return nil
		}
		c.unsupported = true
		return []Action{Emit{event.NewRecoveryUnsupported(c.cfg.Queue, c.cfg.Epoch, known, src.Last, src.Node, len(c.witnesses))}}
	}
	c.source = src
	acts := []Action{Emit{event.NewRecoveryStageSealed(c.endStage(f.Now), len(c.witnesses), src.Node, src.Last, src.LastEpoch)}}
	if src.Node == self.Node || bugs.Active(bugs.InstallBeforeReadsDone) {
		return append(acts, c.install(f.Now)...)
	}
	c.stage = StageFetch
	c.fetchHeard = c.ticks
	return append(acts, c.sendFetch(self))
}

// ---- fetch: copy what this replica lacks from the source, verified.

// sendFetch asks the source for the page after where this log ends.
func (c *Core) sendFetch(self Witness) Action {
	c.fetchSent = c.ticks + 1
	c.rpcs++
	return Send{To: c.source.Node, Msg: &wire.Fetch{Queue: c.cfg.Queue, Incarnation: c.cfg.Incarnation, Epoch: c.cfg.Epoch,
		PrevIndex: self.Last, PrevEpoch: self.LastEpoch}}
}

// onFetchReply takes one page from the source: drop a conflicting suffix
// of this log, or append the page.
func (c *Core) onFetchReply(in FetchReply) []Action {
	m, self := in.Msg, in.Self
	if m.Incarnation != c.cfg.Incarnation || c.stage != StageFetch || in.From != c.source.Node || m.Epoch != c.cfg.Epoch {
		return nil
	}
	c.fetchSent, c.fetchHeard = 0, c.ticks
	if m.OK {
		c.pageBytes = 0
		for _, e := range m.Entries {
			c.pageBytes += len(e.Body)
		}
		return []Action{AppendPage{Prev: m.PrevIndex, Epoch: c.cfg.Epoch, Entries: m.Entries}}
	}
	if m.Hint >= self.Last || m.Last < c.source.Last {
		// A source that no longer holds what it witnessed (it restarted,
		// perhaps over a disk that lost writes, and its refusal says
		// where its log ends, not where ours conflicts) must never make
		// this log shorter.
		return c.restart(in.Now, "the source does not hold what it witnessed")
	}
	if m.Hint < self.Commit && self.Last > self.Commit {
		// The hint is where the source's run of one epoch began, not
		// where the two logs part: the entries up to this replica's
		// commit are confirmed, so any source worth its selection holds
		// them too. Drop only the suffix past them and ask again from
		// there; if the source refuses even that, it is a conflict.
		return []Action{Emit{event.NewQueueTruncate(c.cfg.Queue, c.cfg.Incarnation, self.Commit)}, Truncate{After: self.Commit}}
	}
	if m.Hint < self.Commit {
		// Only this replica's own commit knowledge counts here: another
		// witness's commit says which indexes were confirmed, not that
		// this log's entries at them are the confirmed ones.
		err := fmt.Errorf("the source conflicts after %d, below the known commit %d", m.Hint, self.Commit)
		acts := []Action{Emit{event.NewQueueRefusedTruncation(c.cfg.Queue, c.cfg.Epoch, in.From, err)}}
		return append(acts, c.restart(in.Now, "the source's history conflicts with confirmed records")...)
	}
	return []Action{Emit{event.NewQueueTruncate(c.cfg.Queue, c.cfg.Incarnation, m.Hint)}, Truncate{After: m.Hint}}
}

// onCheckpointOffered takes the source's checkpoint in place of the pages
// it no longer holds. A checkpoint below what this replica knows was
// confirmed would replace confirmed records with an older state: the
// attempt starts over instead.
func (c *Core) onCheckpointOffered(in CheckpointOffered) []Action {
	m, self := in.Msg, in.Self
	if m.Incarnation != c.cfg.Incarnation || c.stage != StageFetch || in.From != c.source.Node || m.Epoch != c.cfg.Epoch {
		return nil
	}
	c.fetchSent, c.fetchHeard = 0, c.ticks
	if m.Cut < self.Commit || m.Cut > c.source.Last || m.Cut <= self.Last && m.Cut >= self.First {
		return c.restart(in.Now, fmt.Sprintf("the source's checkpoint at %d does not fit this log (%d..%d, commit %d)", m.Cut, self.First, self.Last, self.Commit))
	}
	c.pageBytes = len(m.State)
	return []Action{TakeCheckpoint{From: in.From, Msg: m}}
}

// onChunkReceived notes a chunk of the checkpoint the source sends in
// place of pages: the source is answering, and the fetch that asked for
// the checkpoint need not be sent again while its chunks come.
func (c *Core) onChunkReceived(in ChunkReceived) []Action {
	if c.stage != StageFetch || in.From != c.source.Node {
		return nil
	}
	c.fetchHeard = c.ticks
	if c.fetchSent != 0 {
		c.fetchSent = c.ticks + 1
	}
	return nil
}

// onTruncated asks for the page after the shortened log.
func (c *Core) onTruncated(in Truncated) []Action {
	if c.stage != StageFetch {
		return nil
	}
	return []Action{c.sendFetch(in.Self)}
}

// onPageAppended fetches on until the source's witnessed end is reached;
// there the history must match its witness exactly: last index, its
// epoch, and the digest of the whole history.
func (c *Core) onPageAppended(in PageAppended) []Action {
	if c.stage != StageFetch {
		return nil
	}
	if in.Err != nil {
		return c.restart(in.Now, "a page from the source does not decode: "+in.Err.Error())
	}
	c.copied += c.pageBytes
	self, src := in.Self, c.source
	if self.Last < src.Last {
		return []Action{c.sendFetch(self)}
	}
	if self.Last != src.Last || self.LastEpoch != src.LastEpoch || self.Digest != src.Digest {
		acts := []Action{Emit{event.NewRecoveryContradiction(c.cfg.Queue, self.Last, self.Digest.String(), src.Digest.String())}}
		return append(acts, c.restart(in.Now, "the copied history does not match the source's witness")...)
	}
	acts := []Action{Emit{event.NewRecoveryStageFetched(c.endStage(in.Now), c.copied)}}
	return append(acts, c.install(in.Now)...)
}

// ---- install: make this history the recovered one, then activate.

// install hands the driver the installation: rebuild the served state
// from this log, append the epoch marker and replicate.
func (c *Core) install(now time.Time) []Action {
	c.stage = StageInstall
	c.stageStart = now
	return []Action{Install{}}
}

// onInstalled notes where the marker landed (0 if the append failed: the
// process is halting) and checks whether activation may be proposed.
func (c *Core) onInstalled(in Installed) []Action {
	if c.stage != StageInstall {
		return nil
	}
	c.marker = in.Marker
	return c.checkInstalled(in.Facts)
}

// checkInstalled proposes activation once an exact quorum, this replica
// among them, holds the marker durably. It does not wait for the old
// owner's delivery lease: a sealed quorum already keeps the old owner from
// confirming anything, so publishes can be admitted at once, and the
// messages the old owner might still hand out are held back after
// activation instead (Activate.HoldUntil).
func (c *Core) checkInstalled(f Facts) []Action {
	if c.stage != StageInstall || c.activationProposed || c.marker == 0 || f.Durable < c.marker {
		return nil
	}
	if bugs.Active(bugs.AdmitBeforeInstallQuorum) && !c.admitted {
		return c.admitEarly(f)
	}
	need := Quorum(f.Policy, len(f.Members))
	if bugs.Active(bugs.ActivateWithoutQuorum) {
		need = 1
	}
	members := []uint32{c.cfg.Self}
	for _, fl := range f.Followers {
		if len(members) < need && fl.Held >= c.marker {
			members = append(members, fl.Node)
		}
	}
	if len(members) < need {
		return nil
	}
	if bugs.Active(bugs.ActivateWithoutQuorum) {
		members = padMembers(members, Quorum(f.Policy, len(f.Members)), f.Members)
	}
	slices.Sort(members)
	c.activationProposed, c.installed = true, true
	return []Action{ProposeActivation{Members: members}}
}

// admitEarly is the planted bug admit-before-install-quorum: the
// candidate becomes owner and admits clients as soon as its own copy of
// the marker is durable, before an exact quorum holds it and before the
// metadata activated the epoch. It returns no proposal: admitting makes
// the driver report progress at once, and that progress proposes the
// activation as usual once a quorum holds the marker. The attempt goes on
// (Activate.Early) so that the proposal is still made.
func (c *Core) admitEarly(f Facts) []Action {
	c.admitted = true
	return []Action{
		Emit{event.NewRecoveryStageInstalled(c.endStage(f.Now), c.marker)},
		Activate{Marker: c.marker, Policy: f.Policy, HoldUntil: c.holdUntil(), Early: true},
		Admit{},
	}
}

// padMembers fills a too-small member list with replicas that hold
// nothing installed, which only the planted bug does.
func padMembers(members []uint32, need int, all []uint32) []uint32 {
	for _, m := range all {
		if len(members) < need && !slices.Contains(members, m) {
			members = append(members, m)
		}
	}
	return members
}

// onActivationResult lets a failed proposal be made again (the next
// progress or tick retries it) and reports why it failed.
func (c *Core) onActivationResult(in ActivationResult) []Action {
	c.activationProposed = false
	if in.OK {
		return nil
	}
	return []Action{Emit{event.NewRecoveryActivateFailed(c.cfg.Queue, in.Detail)}}
}

// onActivated ends the attempt once the metadata activated this owner:
// everything up to the marker is the confirmed history. An activation
// that comes before this attempt's marker holds on a quorum is an earlier
// attempt's, in the same epoch by the same process, whose proposal timed
// out here but committed all the same: it says nothing of what this
// attempt installed (it may not even have rebuilt its state), so the
// attempt goes on, and the activation ends it once its own marker holds
// (the driver reports the activation again when its own proposal is
// refused).
func (c *Core) onActivated(in Activated) []Action {
	done := event.Recovery{
		Queue: c.cfg.Queue, Epoch: c.cfg.Epoch, Took: in.Now.Sub(c.cfg.Now), RPCs: c.rpcs, Bytes: c.copied,
		Syncs: 1 + in.SyncBatches - c.cfg.SyncBatches, Attempt: c.cfg.Attempt,
	}
	if bugs.Active(bugs.AdmitBeforeInstallQuorum) && c.admitted {
		// Planted: the owner serves already (admitEarly), so the
		// activation only ends the attempt; activating it again would
		// make an owner of an owner.
		return []Action{Emit{event.NewRecoveryDone(done)}, Abandon{Why: "the metadata activated an owner that serves already"}}
	}
	if !c.installed {
		return nil
	}
	return []Action{
		Emit{event.NewRecoveryStageInstalled(c.endStage(in.Now), c.marker)},
		Activate{Marker: c.marker, Policy: in.Policy, HoldUntil: c.holdUntil(), ServeFrom: c.ServeFrom()},
		Emit{event.NewRecoveryDone(done)},
		Admit{},
	}
}

// holdUntil is when, on the lease clock, the old owner's delivery lease
// has surely run out: it could renew it only with appends a witness
// accepted before its last grant, and a margin covers clock rates. Zero
// if the old owner itself answered that it stopped (released).
//
// Since the new owner serves only from ServeFrom, and the silence limit
// it counts is never longer than the delivery lease, the old owner has
// stopped delivering (it steps back at that limit) before the new one
// serves; the hold outlasts that wait only by the lease's margin over a
// detection interval shorter than it, and is kept as a second guard.
// The planted bug that skipped it, deliver-leased-before-expiry, was
// retired at that change: nothing could catch it any more.
func (c *Core) holdUntil() uint64 {
	if c.released {
		return 0
	}
	return c.leaseGrantsEnd + uint64(c.cfg.DeliveryLease)*5/4
}

// ServeFrom is when, on the lease clock, the owner the metadata
// activated may start delivering and settling: when no older owner or
// candidate can still serve on its quorum's acceptances. Zero if the old
// owner itself answered that it stopped (released). Publishes need no
// such wait, and are admitted from the activation on: an older owner's
// quorum meets a sealed witness, which accepts none of its appends, so it
// confirms nothing more, and it never sees what the new owner confirms.
//
// An older owner serves only while a quorum of its replicas accepted
// appends it sent within the silence limit, and steps back after that
// (node/quorum.go); a late candidate of an older epoch starts serving by
// the same rule. Every such quorum meets the sealed witnesses, and a
// sealed witness accepts nothing older, so the older owner's quorum goes
// stale at the latest a silence limit after the witnesses' last grants
// (leaseGrantsEnd), with a margin for clock rates. The failure detector
// alone does not ensure this: the metadata leader judges a node silent
// by its own link, and may plan a recovery while a follower still takes
// the old owner's appends (seed 374216 of the long sweep: a candidate
// whose disk stalled applied the activation of its epoch 2 after epoch 4
// had activated, on a quorum made fresh by such a follower).
func (c *Core) ServeFrom() uint64 {
	if bugs.Active(bugs.ServeBeforeGrantsOutwaited) || c.released {
		return 0
	}
	return c.leaseGrantsEnd + uint64(c.cfg.SilenceLimit)*5/4
}

// ---- time, restarts.

// onTick resends what got no answer. In the seal stage the metadata may
// have learned of a damaged replica since the last witness arrived, which
// changes what is enough; a fetch the source stopped answering restarts
// the attempt; an install whose activation failed proposes it again.
func (c *Core) onTick(f Facts) []Action {
	c.ticks++
	switch c.stage {
	case StageSeal:
		if c.ticks%sealResendTicks != 0 {
			return nil
		}
		if c.sealed(f) && c.has(c.cfg.Self) {
			acts := c.choose(f)
			if c.unsupported && c.stage == StageSeal {
				// The witnesses so far lack what is known confirmed. A
				// replica whose seal or answer was lost may hold it: ask
				// again, or the attempt waits on a message that is gone.
				acts = append(acts, c.sendSeals()...)
			}
			return acts
		}
		return c.sendSeals()
	case StageFetch:
		switch {
		case c.ticks-c.fetchHeard > fetchGiveUpTicks:
			return c.restart(f.Now, "the source stopped answering")
		case c.fetchSent != 0 && c.ticks-c.fetchSent > fetchResendTicks:
			return []Action{c.sendFetch(f.Self)}
		}
		return nil
	default:
		return c.checkInstalled(f)
	}
}

// endStage ends the current stage's timing and returns what every
// recovery.stage event reports of it; the caller adds how it ended.
func (c *Core) endStage(now time.Time) event.StageEnd {
	s := event.StageEnd{Queue: c.cfg.Queue, Epoch: c.cfg.Epoch, Stage: c.stage.String(), Took: now.Sub(c.stageStart)}
	c.stageStart = now
	return s
}

// restart abandons the attempt and starts over from sealing, in the same
// epoch: this process still owns it, if the metadata still holds the plan.
func (c *Core) restart(now time.Time, why string) []Action {
	return []Action{Emit{event.NewRecoveryStageRetry(c.endStage(now), why)}, Restart{Attempt: c.cfg.Attempt + 1, Why: why}}
}

// String renders the attempt for debugging and tests.
func (c *Core) String() string {
	ids := make([]string, len(c.witnesses))
	for i, w := range c.witnesses {
		ids[i] = fmt.Sprintf("n%d", w.Node)
	}
	return fmt.Sprintf("recovery{%s epoch=%d attempt=%d stage=%s witnesses=%v source=n%d marker=%d rpcs=%d copied=%d}",
		c.cfg.Queue, c.cfg.Epoch, c.cfg.Attempt, c.stage, ids, c.source.Node, c.marker, c.rpcs, c.copied)
}
