package node

import "github.com/cairnmq/cairn/event"

// What the operating system tells the failure detector: a peer's
// connection reset, and a new connection to it refused. Either comes
// within milliseconds of a process's death, where silence takes the
// detection policy's grace.

// detectReset reacts to a transport reset, in either mode: the operating
// system says the connection broke, which is what a killed process looks
// like to its peers, so it is verified at once (by the leader for a peer,
// by a follower for its leader) rather than waited out as silence. A peer
// that is alive answers the verification over a new connection within a
// few round trips; one whose process is gone cannot.
func (n *Node) detectReset(peer NodeID) {
	d := n.detector
	if d == nil || n.meta == nil {
		return
	}
	n.emit(event.NewDetectReset(uint32(peer)))
	w := d.watchOf(peer)
	if w != nil {
		w.resetSeq, w.resetAt = d.seq+1, d.ticks
	}
	if n.meta.isLeader() {
		if w != nil && w.verifyBy == 0 {
			d.verify(w)
		}
		return
	}
	if peer == n.meta.leader && d.leaderVerifyBy == 0 {
		d.verifyLeader(peer)
	}
}

// detectRefused ends at once, as failed, a verification under way of a
// peer (by the leader) or of the leader (by a follower) whose new
// connection was refused: the reset said the connection broke, the
// refusal says no process listens any more. Waiting out the
// verification's ticks could only hear from a process that restarted
// meanwhile, which the metadata brings back up when it answers. On
// loopback the refusal comes within a millisecond of the reset, where the
// verification took 30-40 ms of every failover after a SIGKILL. Without
// a verification under way, a refusal changes nothing: a peer that was
// never reached is left to the usual silence.
func (n *Node) detectRefused(peer NodeID) {
	d := n.detector
	if d == nil || n.meta == nil {
		return
	}
	n.emit(event.NewDetectRefused(uint32(peer)))
	if n.meta.isLeader() {
		if w := d.watchOf(peer); w != nil && w.verifyBy != 0 {
			w.verifyBy = 0
			d.suspect(w)
			d.confirm(w)
		}
		return
	}
	if peer == n.meta.leader && d.leaderVerifyBy != 0 && d.leaderVerified == peer {
		d.loseLeader()
	}
}
