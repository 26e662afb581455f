package node

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// detectTick is the detector's clock: it counts its own timer firings, so
// a jump of the wall clock never looks like silence.
const detectTick = 10 * time.Millisecond

// verifyTicks is how long a verification waits for an answer: a
// few round trips on a local network.
const verifyTicks = 3

// rttDecayTicks is how often a peer's longest observed ping wait
// (watch.waitMax) shrinks by one tick: a link that stalled gives its peer
// more time to answer for a few seconds after, then eager detection
// verifies after an interval again.
const rttDecayTicks = 20

const timerDetect TimerKind = 3

// campaignStaggerTicks orders the campaigns of followers that found their
// leader dead together: each waits this long per voter ahead of it in ID
// order (the dead leader not counted), so the first campaigns alone and
// the next only if the first could not win (its log was behind, or it is
// gone too). Campaigning together would split the vote and cost a whole
// election timeout.
const campaignStaggerTicks = 3

// campaignRetryTicks is how long after such a campaign a follower that
// still sees no leader campaigns again (staggered the same way): the
// vote split, most likely because a campaign crossed a slow message.
// Raft's own election timer would retry too, but hundreds of milliseconds
// later.
const campaignRetryTicks = 10

// watch is the metadata leader's view of one peer.
type watch struct {
	id        NodeID
	lastHeard uint64 // detector tick
	// lastPing is when the latest ping to this peer went out, and
	// lastPingSeq its number.
	lastPing    uint64
	lastPingSeq uint64
	// verifyBy is set while a verification is pending: the tick by which
	// the peer must have answered the ping numbered verifySeq (or a later
	// one). After a reset, or for the leader this node replaced, that is
	// the verification's own first ping: an earlier ping's answer proves
	// nothing, as it may have been sent just before the process died.
	// When the peer went quiet, it is the ping the silence was timed by
	// (verifyQuiet).
	verifyBy  uint64
	verifySeq uint64
	// awaited is the tick at which the oldest ping still unanswered was
	// sent (ping awaitedSeq), or zero when every ping was answered; eager
	// detection judges a peer by it (see check).
	awaited    uint64
	awaitedSeq uint64
	// waitMax is the longest a ping to this peer waited for its answer
	// lately, in ticks, decaying by one every rttDecayTicks: eager
	// detection waits that much longer before it verifies the peer
	// (idleLimit), so a link whose messages stall now and then is not
	// taken for a dead peer again and again, each time failing its
	// queues over.
	waitMax uint64
	// resetSeq is the first ping sent after the peer's connection last
	// reset. An answer to an earlier ping may come from the process
	// whose death the reset announced, slow on the way: it shows nothing
	// about the peer now.
	resetSeq uint64
	// vouched is when another node last said it heard from the peer
	// (onProbeAck): its silence counts from then, or from the oldest
	// unanswered ping if that went out later (quietFor). vouchedHeard is
	// lastHeard at that moment: while it stays the same, the leader's own
	// link has not been heard from since, and the peer is not vouched for
	// again (probeThroughOthers).
	vouched      uint64
	vouchedHeard uint64
	// answeredSeq is the latest ping the peer answered over the leader's
	// own link: a helper's word on an earlier probe adds nothing to it.
	answeredSeq uint64
	suspected   bool
	confirmed   bool
	// resetAt is when the peer's connection last reset; confirmedHeard,
	// when the peer was last heard before this leader last confirmed it
	// down (zero: never). flaps counts, decaying, how often lately a peer
	// confirmed down answered again with no reset since it was last heard
	// before (its process never died; a peer never heard before, just
	// starting, did not flap), and flapAt is when it last did or last
	// decayed (detectflap.go).
	resetAt, confirmedHeard uint64
	flaps, flapAt           uint64
	// synced is when this leader last proposed a correction of the
	// metadata's liveness view for the peer.
	synced uint64
}

// detector decides, on the metadata leader, which nodes are up; and, on
// a follower in eager mode, verifies a leader whose connection reset.
type detector struct {
	n       *Node
	ticks   uint64
	seq     uint64
	watches []*watch
	// leaderVerifyBy is a follower's deadline for an answer to ping
	// leaderVerifySeq from a leader whose connection reset; campaignAt is
	// when, the leader having failed to answer, this follower campaigns.
	leaderVerifyBy  uint64
	leaderVerifySeq uint64
	leaderVerified  NodeID
	// leaderCheckedAt is when this follower last began verifying its
	// leader, so a leader that answers pings while its raft traffic stays
	// silent is asked again once an interval, not every tick.
	leaderCheckedAt uint64
	campaignAt      uint64
	retryAt         uint64
	// lostLeader is the leader this follower found dead, until it
	// campaigns: a message the leader sent before it died may still
	// arrive and make raft follow it again.
	lostLeader NodeID
	// relays are the probes this node runs for others (onProbe).
	relays []relay
	// selfSynced is when this node, leading, last proposed that it is up
	// (zero: not yet in this term), because the metadata's liveness view
	// held it down.
	selfSynced uint64
}

func (n *Node) startDetector() {
	d := &detector{n: n}
	for _, id := range n.clusterNodes() {
		if id != n.cfg.ID {
			d.watches = append(d.watches, &watch{id: id})
		}
	}
	n.detector = d
	n.env.After(detectTick, Timer{Kind: timerDetect})
}

func (d *detector) policy() DetectionPolicy {
	if d.n.meta == nil || d.n.meta.state == nil {
		return d.n.cfg.Detection
	}
	return d.n.meta.state.detection
}

func (d *detector) ticksOf(t time.Duration) uint64 { return uint64((t + detectTick - 1) / detectTick) }

func (d *detector) watchOf(id NodeID) *watch {
	for _, w := range d.watches {
		if w.id == id {
			return w
		}
	}
	return nil
}

// onBecameLeader starts the new leader's view from scratch: everyone is
// presumed alive as of now.
//
// Two exceptions. Peers whose connection reset while this node followed,
// with nothing heard since, are verified at once. And the leader this
// node replaced: the election itself proves
// it has been silent for at least the election timeout, so its watch
// starts that far in the past and is verified at once; a dead leader that
// owned queues is then confirmed down within a few round trips.
func (n *Node) onBecameLeader(previous NodeID, silent time.Duration) {
	d := n.detector
	if d == nil {
		return
	}
	for _, w := range d.watches {
		w.lastHeard, w.verifyBy, w.suspected, w.confirmed = d.ticks, 0, false, n.meta.state.down[w.id]
		// A ping of an earlier term, when this node last led, is not
		// this term's evidence: the count of unanswered pings starts
		// with this term's first.
		w.awaited, w.vouched, w.vouchedHeard = 0, 0, 0
		if w.id == previous {
			w.lastHeard -= min(d.ticks, uint64(silent/detectTick))
			switch {
			case w.confirmed:
			case previous == d.lostLeader:
				// This node already verified it: its connection reset and
				// it answered no ping.
				d.suspect(w)
				d.confirm(w)
			default:
				d.verify(w) // it may be dead: find out in a few round trips
			}
			continue
		}
		if _, reset := n.resetAt[w.id]; reset && !w.confirmed {
			// Its connection reset while this node followed, and nothing
			// was heard from it since: a node that died with the old
			// leader is verified now, not waited out as silence.
			d.verify(w)
		}
	}
	d.lostLeader = 0
	d.selfSynced = 0
}

// detectPong notes that a peer answered a ping: it can send and receive.
func (n *Node) detectPong(from NodeID, seq uint64) {
	d := n.detector
	if d == nil || n.meta == nil {
		return
	}
	if from == n.meta.leader && seq >= d.leaderVerifySeq {
		d.leaderVerifyBy = 0
	}
	d.answerRelays(from, seq)
	w := d.watchOf(from)
	if w == nil {
		return
	}
	// An answer sent before the connection reset, by a process that may
	// be gone, is not heard from the peer: it neither ends a verification
	// nor clears a suspicion or a confirmation (seed 283854 of the long
	// sweep: two pongs n2 sent before it crashed reached the leader after
	// the reset, the second after the leader confirmed n2 down; the
	// leader proposed n2 up, confirmed it down again only after a whole
	// silence, and counted the wait to replace its replicas afresh). How
	// long it waited is still learned below: it waited on the link.
	heard := seq >= w.resetSeq
	if heard {
		w.lastHeard, w.answeredSeq = d.ticks, max(w.answeredSeq, seq)
	}
	if heard && seq >= w.verifySeq {
		w.verifyBy = 0
	}
	if seq >= w.awaitedSeq && w.awaited != 0 {
		// The wait counts even when it outlasted a verification: a peer
		// confirmed down that answers is most often one whose link
		// stalled. (It may be a process that restarted; the cap keeps
		// that from stretching idleLimit past three intervals.)
		w.waitMax = max(w.waitMax, min(d.ticks-w.awaited, 3*d.ticksOf(d.policy().Interval)))
		w.awaited = 0
		if w.lastPingSeq > seq {
			// Later pings are still out: the link may be stalled yet,
			// and how long they wait is what eager detection must learn.
			// Await the latest (the oldest's send time is not kept; the
			// latest went out no earlier), not the next one sent from now
			// on, which may leave after the stall and never see it.
			w.awaited, w.awaitedSeq = w.lastPing, w.lastPingSeq
		}
	}
	if heard {
		d.heardAgain(w)
	}
}

// heardAgain clears a suspicion or a confirmation of w, which answered:
// a leader that confirmed it down proposes it up again.
func (d *detector) heardAgain(w *watch) {
	n := d.n
	if !w.suspected && !w.confirmed {
		return
	}
	n.emit(event.NewDetectRecovered(uint32(w.id), w.confirmed))
	if w.confirmed && w.resetAt < w.confirmedHeard {
		w.flaps, w.flapAt = min(w.flaps+1, flapsMax), d.ticks
		n.emit(event.NewDetectFlapped(uint32(w.id), int(w.flaps)))
	}
	if w.confirmed && n.meta.isLeader() {
		n.meta.propose(command{kind: cmdNodeUp, node: w.id}, lifecycleTimeoutTicks, func(result) {})
	}
	w.suspected, w.confirmed = false, false
}

// verifyLeader pings this follower's leader and gives it verifyTicks to
// answer; checkLeader pings again each tick meanwhile.
func (d *detector) verifyLeader(leader NodeID) {
	d.seq++
	d.n.env.Send(leader, &wire.Ping{Seq: d.seq})
	d.leaderVerifyBy, d.leaderVerifySeq, d.leaderVerified = d.ticks+verifyTicks, d.seq, leader
	d.leaderCheckedAt = d.ticks
}

// leaderSilent reports whether this follower has heard nothing from its
// leader past leaderSilenceLimit and is not verifying or replacing it
// already. A leader sends every follower a heartbeat each metadata tick
// (50 ms), so its silence is counted from about when it stopped.
func (d *detector) leaderSilent() bool {
	n := d.n
	// The leader it knows may be itself while raft has already stepped
	// it down and the next Ready has not said so yet: it has no leader
	// to verify then.
	if n.meta.leader == 0 || n.meta.leader == n.cfg.ID || n.meta.isLeader() || d.leaderVerifyBy != 0 || d.lostLeader != 0 || n.meta.catchingUp {
		return false
	}
	p := d.policy()
	if d.leaderCheckedAt != 0 && d.ticks-d.leaderCheckedAt < d.ticksOf(p.Interval) {
		return false // it answered a verification lately: ask again only once an interval
	}
	return d.ticks-n.meta.heardAt >= d.leaderSilenceLimit(p)
}

// leaderSilenceLimit is how long, in ticks, a follower lets its leader be
// silent before it verifies it: as long as the metadata leader lets a
// peer's ping go unanswered under heartbeat detection, and an interval
// under eager detection.
func (d *detector) leaderSilenceLimit(p DetectionPolicy) uint64 {
	interval := d.ticksOf(p.Interval)
	if p.Mode == DetectEager {
		return interval
	}
	return heartbeatVerifyAfter(interval, d.ticksOf(p.Grace))
}

// verify pings w and gives it verifyTicks to answer that ping or a
// later one; check pings again each tick meanwhile. The other peers are
// asked to ping w too, and an answer through them counts as w's own.
func (d *detector) verify(w *watch) {
	d.seq++
	d.n.env.Send(w.id, &wire.Ping{Seq: d.seq})
	w.lastPing, w.lastPingSeq, w.verifyBy, w.verifySeq = d.ticks, d.seq, d.ticks+verifyTicks, d.seq
	d.probeThroughOthers(w, d.seq)
}

// hearsOthers reports whether a peer other than w, one this leader
// holds up, answers it now (no ping of its waits longer than a
// verification), or whether there is no such peer. In the swarm's
// noise, a leader whose links to every peer stalled at once confirmed a
// live owner down just before the stall ended (seed 442099 of the long
// sweep: its probe to the only other peer and that peer's answer took
// 170 and 46 ms), and its plan committed once the links were back; in a
// cluster, a leader whose own network stalls for a grace would fail
// every other node's queues over that way. Silent towards everyone, it
// is more likely the one cut off, and a leader cut off for good commits
// nothing it decides meanwhile: raft's quorum check deposes it.
func (d *detector) hearsOthers(w *watch) bool {
	others := false
	for _, o := range d.watches {
		if o == w || o.confirmed {
			continue
		}
		if o.awaited == 0 || d.quietFor(o) <= verifyTicks+1 {
			return true
		}
		others = true
	}
	return !others
}

// quietFor is how long, in ticks, w has been silent as far as this
// leader knows: since its oldest unanswered ping went out, or since
// another node last vouched for it, whichever is later. Call it only
// with a ping awaited.
func (d *detector) quietFor(w *watch) uint64 { return d.ticks - max(w.awaited, w.vouched) }

// verifyQuiet verifies a peer that went quiet: a ping to it went
// unanswered past eager detection's idle limit, or nothing was heard
// from it past heartbeat detection's grace. The answer to the oldest
// ping still unanswered, the one the silence was timed by, ends the
// verification as well as an answer to the verification's own pings
// does: it is what the monitor was waiting for, late, and it shows the
// peer alive after that ping went out, so the silence was the link's
// stall. The same answer arriving a tick after the confirmation would
// bring the peer back up at once (detectPong), so confirming it down
// meanwhile would only move its queues away and back. In the long sweep
// (seed 133399) the leader n4 confirmed the live n2 down 10 ms after the
// answers to the pings it had timed arrived, 170 ms late, and moved the
// queue dl off n2 in the middle of the recovery replacing its lost
// replica; the replacement was late by the whole second recovery.
//
// After a reset the rule is stricter (verify): answers to pings sent
// before it are not heard from the peer at all.
func (d *detector) verifyQuiet(w *watch) {
	awaited, seq := w.awaited, w.awaitedSeq
	d.verify(w)
	if awaited != 0 {
		w.verifySeq = seq
	}
}

// idleLimit is how long, in ticks, eager detection lets a ping to w go
// unanswered before it verifies w: an interval, or half as much again as
// the longest the peer's pings waited lately, up to three intervals. A
// link that stalls now and then (a retransmission on a lossy network)
// would otherwise have a live peer verified in the middle of a stall,
// when the verification's own pings wait behind it too, and confirmed
// down over and over: in the long sweep, one queue failed over 23 times
// in 7 s between two live nodes whose links stalled up to 215 ms each
// way. The first stall past an interval can still cost one failover;
// most after it do not. Three intervals keep eager detection's slowest
// confirmation of a silent peer (DetectionPolicy.Silence) near heartbeat
// detection's at the default interval and grace: 390 ms against 355 ms.
func (d *detector) idleLimit(w *watch, interval uint64) uint64 {
	return max(interval, min(w.waitMax+w.waitMax/2+1, 3*interval))
}

// mono is the node's monotonic clock, in detector ticks: a wall-clock
// jump never moves it.
func (n *Node) mono() uint64 {
	if n.detector == nil {
		return 0
	}
	return n.detector.ticks
}

// onDetectTimer runs the detector's clock.
func (n *Node) onDetectTimer() {
	n.env.After(detectTick, Timer{Kind: timerDetect})
	d := n.detector
	d.ticks++
	if !n.started {
		return
	}
	d.checkLeader()
	if n.meta.isLeader() {
		d.syncSelf()
		for _, w := range d.watches {
			d.check(w)
		}
	}
}

// checkLeader runs a follower's eager verification of its leader. If the
// leader does not answer in time, the follower stops honouring its lease
// at once (so another follower's campaign can win its vote) and campaigns
// itself after seeded jitter: every follower heard the reset at about the
// same moment, and campaigning together would split the vote.
func (d *detector) checkLeader() {
	n := d.n
	if d.leaderVerifyBy != 0 && (n.meta.leader != d.leaderVerified || n.meta.leader == n.cfg.ID) {
		d.leaderVerifyBy = 0 // the group moved on to another leader meanwhile
	}
	if d.leaderSilent() {
		// A leader silent for about the detection policy's grace is
		// verified as one whose connection reset is: a stopped or cut
		// off leader is replaced that much sooner than raft's election
		// timeout would, and one that answers keeps its place.
		d.verifyLeader(n.meta.leader)
	}
	if d.leaderVerifyBy != 0 && d.ticks <= d.leaderVerifyBy {
		d.seq++ // the first ping may have found no connection to travel on
		n.env.Send(n.meta.leader, &wire.Ping{Seq: d.seq})
	}
	if d.leaderVerifyBy != 0 && d.ticks > d.leaderVerifyBy {
		d.loseLeader()
	}
	if d.lostLeader != 0 && n.meta.leader != 0 && n.meta.leader != d.lostLeader {
		d.lostLeader, d.campaignAt, d.retryAt = 0, 0, 0 // another node leads now
	}
	if d.campaignAt != 0 && d.ticks >= d.campaignAt {
		d.campaignAt = 0
		if n.meta.leader == 0 || n.meta.leader == d.lostLeader {
			n.meta.campaign("the leader's connection reset and it did not answer")
			d.retryAt = d.ticks + campaignRetryTicks + campaignStaggerTicks*d.campaignRank()
		}
	}
	if d.retryAt != 0 && d.ticks >= d.retryAt {
		d.retryAt = 0
		if n.meta.leader == 0 && !n.meta.isLeader() {
			n.meta.campaign("the campaign after the leader's loss found no winner")
		}
	}
}

// loseLeader ends a verification of the leader that failed: this
// follower stops honouring its lease at once (so another follower's
// campaign can win its vote) and campaigns itself after its stagger.
func (d *detector) loseLeader() {
	n := d.n
	d.leaderVerifyBy = 0
	if !n.meta.isLeader() {
		n.emit(event.NewDetectLeaderLost(uint32(n.meta.leader)))
		d.lostLeader = n.meta.leader
		n.meta.forgetLeader()
		d.campaignAt = d.ticks + 1 + campaignStaggerTicks*d.campaignRank()
	}
}

// waitsToReplace reports whether peer is the leader this follower found
// dead and it has not campaigned to replace it yet.
func (d *detector) waitsToReplace(peer NodeID) bool {
	return d != nil && d.campaignAt != 0 && peer == d.lostLeader
}

// campaignRank counts the voters ahead of this node in ID order, the dead
// leader not counted.
func (d *detector) campaignRank() uint64 {
	rank := uint64(0)
	for _, id := range d.n.meta.conf.GetVoters() {
		if NodeID(id) < d.n.cfg.ID && NodeID(id) != d.lostLeader {
			rank++
		}
	}
	return rank
}

// check pings a peer on schedule and judges its silence.
func (d *detector) check(w *watch) {
	p := d.policy()
	interval, grace := d.ticksOf(p.Interval), d.ticksOf(p.Grace)
	if d.ticks-w.lastPing >= pingEvery(p, interval) {
		d.seq++
		d.n.env.Send(w.id, &wire.Ping{Seq: d.seq})
		w.lastPing, w.lastPingSeq = d.ticks, d.seq
		if w.awaited == 0 {
			w.awaited, w.awaitedSeq = d.ticks, d.seq
		}
	}
	if d.ticks%rttDecayTicks == 0 && w.waitMax > 0 {
		w.waitMax--
	}
	if w.flaps > 0 && d.ticks-w.flapAt >= flapDecayTicks {
		w.flaps, w.flapAt = w.flaps-1, d.ticks
	}
	d.probeEarly(w, p, interval, grace)
	if p.Mode == DetectEager && w.verifyBy == 0 && !w.suspected && w.awaited != 0 && d.quietFor(w) >= d.quietLimit(w, p, interval, grace) {
		d.verifyQuiet(w) // the idle-connection monitor: zero grace
	} else if w.verifyBy != 0 && d.ticks <= w.verifyBy && d.ticks != w.lastPing {
		// Ping again each tick of a verification: after a reset the first
		// ping may have found no connection to travel on, and a peer that
		// is alive is reconnected within a tick or two.
		d.seq++
		d.n.env.Send(w.id, &wire.Ping{Seq: d.seq})
		w.lastPing, w.lastPingSeq = d.ticks, d.seq
	}
	// A verification (after a reset, or the idle monitor's) that got no
	// answer in time confirms the peer down without a grace period.
	// Under heartbeat detection, the cautious mode, a leader that hears
	// no other peer either verifies on instead: it is more likely its own
	// links that stall. Eager detection acts on the first sign, as its
	// users chose.
	if w.verifyBy != 0 && d.ticks > w.verifyBy {
		d.suspect(w)
		if p.Mode == DetectEager || d.hearsOthers(w) {
			w.verifyBy = 0
			d.confirm(w)
		} else {
			w.verifyBy = d.ticks
		}
	}
	if p.Mode == DetectEager {
		d.syncView(w)
		return
	}
	// A peer that has left a ping unanswered for nearly the grace is
	// suspected and verified, as after a reset: it is confirmed down when
	// the grace has run out with no answer to that ping or to the
	// verification's own. A second grace would only make a stopped owner's
	// clients wait longer; a peer that is alive but slow answers, and a
	// later answer clears it.
	if !w.suspected && w.awaited != 0 && d.quietFor(w) >= d.quietLimit(w, p, interval, grace) {
		d.suspect(w)
		if w.verifyBy == 0 && !w.confirmed {
			d.verifyQuiet(w)
		}
	}
	d.syncView(w)
}

// heartbeatVerifyAfter is how long, in ticks, heartbeat detection lets a
// ping go unanswered before it verifies the peer, so that the peer is
// confirmed down once the ping has gone unanswered for the grace (at
// least an interval), the verification's own wait included. It used to
// count the interval and then the grace from the peer's last answer,
// which could be most of a ping period older than the silence: a
// SIGSTOPped owner was confirmed down 453 / 522 / 605 ms (median / p95 /
// max of 30 trials) after the stop, and is now 335 / 348 / 357 ms after,
// with pings a quarter interval apart (pingEvery), at the default 100 ms
// interval and 300 ms grace.
func heartbeatVerifyAfter(interval, grace uint64) uint64 {
	return max(interval, grace, verifyTicks+1) - verifyTicks
}

// pingEvery is how many ticks apart a leader pings each peer. Both modes
// judge a peer by its oldest unanswered ping, not by how long ago it last
// answered: the last answer can be a whole ping period old when the peer
// falls silent, and judging by it would, under eager detection, let a
// replacement serve before the silent owner has counted an interval
// without its quorum and stepped back (quorum.go), and would, under
// heartbeat detection, add up to that period to every silent failure's
// detection. A ping sent after the silence began is answered by nobody,
// so the count starts when it goes out; eager mode pings twice an
// interval, heartbeat mode (whose wait is longer, but whose goal is a
// stopped owner replaced within its grace and 100 ms) four times, so
// that such a ping goes out soon after the silence begins. A ping is a
// few bytes a peer.
func pingEvery(p DetectionPolicy, interval uint64) uint64 {
	if p.Mode == DetectEager {
		return max(1, interval/2)
	}
	return max(1, interval/4)
}

// syncView keeps the metadata's liveness view in step with this leader's
// own judgement. The view can be wrong: a deposed leader that could send
// but not receive may have declared everyone else down, and its entries
// commit under its successor. Corrections are proposed at most once per
// interval.
func (d *detector) syncView(w *watch) {
	n := d.n
	down := n.meta.state.down[w.id]
	if down == w.confirmed || d.ticks-w.synced < d.ticksOf(d.policy().Interval) || w.suspected && !w.confirmed {
		return
	}
	w.synced = d.ticks
	kind := cmdNodeUp
	if w.confirmed {
		kind = cmdNodeDown
	}
	n.meta.propose(command{kind: kind, node: w.id}, lifecycleTimeoutTicks, func(result) {})
}

// syncSelf corrects the metadata's liveness view of this node, the
// leader. The leader watches only its peers, so nothing else clears an
// entry that records it down: a previous leader may have confirmed it down
// while it was stopped, and it may have restarted and won an election
// since. Left standing, that entry makes this leader plan failovers away
// from its own queues and pass over its own replicas as recovery
// candidates for good, so a queue whose only complete live replica is here
// is never served again. A node that leads is alive, so it proposes
// itself up at once, and again once per interval until the entry clears.
func (d *detector) syncSelf() {
	n := d.n
	if !n.meta.state.down[n.cfg.ID] || (d.selfSynced != 0 && d.ticks-d.selfSynced < d.ticksOf(d.policy().Interval)) {
		return
	}
	d.selfSynced = d.ticks
	n.meta.propose(command{kind: cmdNodeUp, node: n.cfg.ID}, lifecycleTimeoutTicks, func(result) {})
}

func (d *detector) suspect(w *watch) {
	if w.suspected {
		return
	}
	w.suspected = true
	d.n.emit(event.NewDetectSuspect(uint32(w.id), time.Duration(d.ticks-w.lastHeard)*detectTick))
}

// confirm records the node as down in the metadata's liveness view.
func (d *detector) confirm(w *watch) {
	if w.confirmed {
		return
	}
	w.confirmed, w.confirmedHeard = true, w.lastHeard
	d.n.emit(event.NewDetectConfirm(uint32(w.id)))
	d.n.meta.propose(command{kind: cmdNodeDown, node: w.id}, lifecycleTimeoutTicks, func(result) {})
	// Plan the dead node's failovers in the same breath: the plans ride
	// the same raft batch as the entry that records it down, rather than
	// waiting for that entry to commit first.
	d.n.planFailoversFor(w.id)
}

// onMetaPolicyApplied reports liveness and policy changes.
func (n *Node) onMetaPolicyApplied(c command, res result) {
	switch c.kind {
	case cmdNodeDown:
		n.emit(event.NewMetaNodeDown(uint32(c.node)))
		n.planFailovers()
	case cmdNodeUp:
		n.emit(event.NewMetaNodeUp(uint32(c.node)))
	case cmdSetDetection:
		n.emit(event.NewMetaDetection(int(c.policy.Mode), c.policy.Interval, c.policy.Grace))
	}
}
