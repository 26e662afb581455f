package props

import (
	"slices"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// checkDeadLetters holds a move to a dead-letter queue to its word. A
// source owner asks the dead-letter queue to store a message only once
// the record that took it out of delivery is confirmed, so from the
// first ask on:
//
//   - the source queue never sends the message again: a confirmed
//     record survives every failover, and every later owner knows the
//     message left delivery. A retry of the message's publish that
//     comes once the deduplication window has forgotten the ID is a new
//     message under the same ID (the dedup-window checker holds the two
//     publish records at least the window apart on the owners' clocks,
//     which jumps can carry past the window early): the source log then
//     stores the ID again after the move, and its sends are not judged,
//     since they cannot be told from sends of the moved copy;
//   - the message is not lost: the dead-letter queue delivers it, or its
//     final owner's log holds it (a move still under way at the end is
//     a liveness failure, since the calm phase has time to finish it);
//   - the dead-letter queue holds it once: its owner's log has at most
//     one publish record of the ID, however often the move was asked.
func checkDeadLetters(ix *index) []sim.Violation {
	var out []sim.Violation
	add := func(v sim.Violation) {
		if len(out) < maxReports {
			out = append(out, v)
		}
	}
	type move struct {
		queue, target string
		id            wire.MessageID
	}
	first := make(map[move]sim.DeadLetterRecord)
	var order []move
	for _, d := range ix.h.DeadLetters {
		k := move{d.Queue, d.Target, d.ID}
		if _, seen := first[k]; !seen {
			first[k] = d
			order = append(order, k)
		}
	}
	for _, k := range order {
		asked := first[k]
		again := ix.storedAgain(k.queue, k.id)
		for _, s := range ix.sends[k.id] {
			if s.Queue == k.queue && s.Sent.At > asked.At && !again {
				add(safety("dead-letter", "%s was sent from %s by %s at %v, after %s asked %s to store it at %v%s",
					k.id, k.queue, s.From, s.Sent.At, asked.Node, k.target, asked.At, ix.life(k.id)))
			}
		}
		held := ix.logCopies(k.target, k.id)
		delivered := slices.ContainsFunc(ix.deliveries[k.id], func(d *sim.DeliveryRecord) bool { return d.Queue == k.target })
		// A purge of the source queue may settle a message mid-move,
		// before the dead-letter queue stored it: it is gone by request.
		// So may a purge of the dead-letter queue once the message was
		// asked to move there, and its log no longer show the copy.
		op := ix.publishes[k.id]
		purged := op != nil && op.Queue == k.queue && ix.purges != nil && ix.purges.excused(op)
		purged = purged || ix.purgedAfterMove(k.id)
		switch {
		case held > 1:
			add(safety("dead-letter", "%s's log holds %s %d times: moved from %s more than once%s", k.target, k.id, held, k.queue, ix.life(k.id)))
		case held == 0 && !delivered && purged:
		case held == 0 && !delivered && ix.settledFrom(k.queue, k.id):
			add(safety("dead-letter", "%s is lost: %s settled it after asking %s to store it, and %s neither delivered nor holds it%s",
				k.id, k.queue, k.target, k.target, ix.life(k.id)))
		case held == 0 && !delivered:
			add(liveness("dead-letter", "%s was still moving from %s to %s at the end of the run (first asked at %v)%s",
				k.id, k.queue, k.target, asked.At, ix.life(k.id)))
		}
	}
	return out
}

// finalReplicas lists the replicas of queue the queue's final owner
// holds at the end of the run; none if it had no owner.
func (ix *index) finalReplicas(queue string) []node.ReplicaDump {
	owner, ok := ix.owners[queue]
	if !ok {
		return nil
	}
	var out []node.ReplicaDump
	for _, r := range ix.h.Final[owner] {
		if r.Queue == queue {
			out = append(out, r)
		}
	}
	return out
}

// storedAgain reports whether the log the final owner of queue holds
// stores id again after a dead-letter record took it out of delivery.
func (ix *index) storedAgain(queue string, id wire.MessageID) bool {
	for _, r := range ix.finalReplicas(queue) {
		moved := false
		for _, e := range r.Entries {
			switch {
			case e.ID != id:
			case e.Type == "dead-letter":
				moved = true
			case e.Type == "publish" && moved:
				return true
			}
		}
	}
	return false
}

// logCopies counts the publish records of id in the log the final owner
// of queue holds. A log compacted past the publish counts it through its
// checkpoint instead, once.
func (ix *index) logCopies(queue string, id wire.MessageID) int {
	n := 0
	for _, r := range ix.finalReplicas(queue) {
		for _, e := range r.Entries {
			if e.Type == "publish" && e.ID == id {
				n++
			}
		}
		if n == 0 && r.Checkpoint != nil && (slices.Contains(r.Checkpoint.Live, id) || slices.Contains(r.Checkpoint.Published, id)) {
			n = 1
		}
	}
	return n
}

// settledFrom reports whether the final owner's log of queue settles id.
func (ix *index) settledFrom(queue string, id wire.MessageID) bool {
	for _, r := range ix.finalReplicas(queue) {
		for _, e := range r.Entries {
			if e.Type == "settle" && slices.Contains(e.IDs(), id) {
				return true
			}
		}
	}
	return false
}

// purgedAfterMove reports whether a purge of a dead-letter queue may have
// removed message id after its source queue's owner asked to move it
// there: the purge did not fail, and had not finished before the ask.
func (ix *index) purgedAfterMove(id wire.MessageID) bool {
	if ix.purges == nil {
		return false
	}
	for _, d := range ix.h.DeadLetters {
		if d.ID != id {
			continue
		}
		if slices.ContainsFunc(ix.purges.ops[d.Target], func(p *sim.OpRecord) bool {
			return p.Outcome != sim.OutcomeFailed && (p.Outcome == sim.OutcomePending || p.Done > d.At)
		}) {
			return true
		}
	}
	return false
}
