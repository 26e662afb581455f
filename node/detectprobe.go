package node

import (
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/wire"
)

// Indirect probes. The metadata leader judges a peer by its own link to
// it, and a link can stall on its own: in the swarm's noise a ping and
// its answer can each wait behind a 150 ms tail, and the leader then
// takes a live owner for dead and moves its queues away (seed 437658 of
// the long sweep: n1 confirmed the live n3 down 17 ms before n3's late
// answers arrived, and failed two queues over). So whenever the leader
// verifies a peer, it also asks each other peer it hears from to ping
// the suspect for it (wire.Probe). A helper that hears the suspect answer
// says so (wire.ProbeAck), and the leader counts that as an answer of its
// own: the verification ends and the silence is counted afresh. A peer
// that is dead, stopped or cut off from everyone answers nobody, so its
// detection is not delayed; only a peer that the rest of the cluster
// still reaches keeps its queues.
//
// Not for good, though: a peer is vouched for once per silence of the
// leader's own link. A node the leader cannot reach cannot follow the
// metadata either (it applies no new entry, proposes no checkpoint, sees
// no membership change), so if the link stays silent through a second
// verification, the peer is confirmed down as before, one silence later.
// A stall of the link ends well within that: a cut does not.

// relayLimit bounds the probes a node runs for others at once. A leader
// verifies at most each of its peers, and a deposed leader's probes may
// still arrive for a few ticks; the oldest are dropped past the bound.
const relayLimit = 16

// relay is a probe this node runs for requester: it pinged target with
// its own ping numbered ping, for requester's probe numbered seq.
type relay struct {
	requester, target NodeID
	seq, ping         uint64
	// until is the detector tick after which the probe is dropped
	// unanswered: the requester's verification is over by then.
	until uint64
}

// probeThroughOthers asks every peer the leader hears from, w aside, to
// ping w on its behalf; seq is the verification's own ping. It asks
// nobody when others vouched for w already and the leader's link to w
// has stayed silent since.
func (d *detector) probeThroughOthers(w *watch, seq uint64) {
	if w.vouchedThisSilence() {
		return
	}
	for _, helper := range d.watches {
		if helper == w || helper.suspected || helper.confirmed || helper.verifyBy != 0 {
			continue
		}
		d.n.env.Send(helper.id, &wire.Probe{Seq: seq, Target: uint64(w.id)})
	}
}

// vouchedThisSilence reports whether another node vouched for w since
// the leader's own link to it was last heard from.
func (w *watch) vouchedThisSilence() bool { return w.vouched != 0 && w.vouchedHeard == w.lastHeard }

// probeEarly asks the other peers about w once its silence is half way
// to a verification, so that a helper whose own link to w stalls too
// still has time to answer before the verification ends. A verification
// that starts with no vouch in hand asks once more (verify).
func (d *detector) probeEarly(w *watch, p DetectionPolicy, interval, grace uint64) {
	limit := d.quietLimit(w, p, interval, grace)
	if w.awaited == 0 || w.verifyBy != 0 || w.suspected || d.quietFor(w) != max(1, limit/2) {
		return
	}
	// The probes' number is not a ping's: no ping carries it, and the
	// acks that echo it are told apart from pongs by their kind.
	d.seq++
	d.probeThroughOthers(w, d.seq)
}

// onProbe pings the probe's target for the node that asked. A node asked
// about itself answers at once.
func (n *Node) onProbe(from NodeID, m *wire.Probe) {
	d := n.detector
	if d == nil {
		return
	}
	target := NodeID(m.Target)
	if target == n.cfg.ID {
		n.env.Send(from, &wire.ProbeAck{Seq: m.Seq, Target: m.Target})
		return
	}
	if target == from || d.watchOf(target) == nil {
		return // not a peer this node knows of
	}
	kept := d.relays[:0]
	for _, r := range d.relays {
		if d.ticks <= r.until {
			kept = append(kept, r)
		}
	}
	d.relays = kept
	if len(d.relays) == relayLimit {
		d.relays = append(d.relays[:0], d.relays[1:]...)
	}
	d.seq++
	n.env.Send(target, &wire.Ping{Seq: d.seq})
	d.relays = append(d.relays, relay{requester: from, target: target, seq: m.Seq, ping: d.seq, until: d.ticks + verifyTicks + 1})
}

// answerRelays tells each node that asked about from that it answered,
// once from answers a ping this node sent for it (or a later one).
func (d *detector) answerRelays(from NodeID, seq uint64) {
	kept := d.relays[:0]
	for _, r := range d.relays {
		if r.target == from && seq >= r.ping {
			d.n.env.Send(r.requester, &wire.ProbeAck{Seq: r.seq, Target: uint64(from)})
			continue
		}
		kept = append(kept, r)
	}
	d.relays = kept
}

// onProbeAck hears a peer through another node: the leader counts it as
// the peer's own answer to the ping numbered m.Seq. It ends a
// verification that the ping belongs to, clears a suspicion or a
// confirmation, and restarts the count of the peer's silence; the pings
// still out on the leader's own link keep timing that link's stall, for
// eager detection to learn (detectPong).
func (n *Node) onProbeAck(from NodeID, m *wire.ProbeAck) {
	d := n.detector
	if d == nil || n.meta == nil || !n.meta.isLeader() {
		return
	}
	w := d.watchOf(NodeID(m.Target))
	if w == nil || m.Seq < w.resetSeq || m.Seq < w.answeredSeq || w.vouchedThisSilence() {
		// A reset came since, the peer answered a later ping itself, or
		// another helper vouched for it in this silence already.
		return
	}
	n.emit(event.NewDetectVouched(uint32(w.id), uint32(from)))
	w.vouched, w.vouchedHeard = d.ticks, w.lastHeard
	if m.Seq >= w.verifySeq {
		w.verifyBy = 0
	}
	d.heardAgain(w)
}
