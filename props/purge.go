package props

import (
	"maps"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// Purges. A purge removes every message its queue holds where its record
// lands in the log: every message published at a lower index. Those need
// not be delivered; everything published after it still must be, and
// nothing it removed may be handed out once the purge was confirmed.
//
// What the history knows of a purge's place, and how sure it is:
//
//   - A confirmed purge's reply carries its record's index, and a
//     confirmed publish's reply carries its own. Confirmed records keep
//     their indexes through every failover, so a confirmed publish at a
//     lower index than a confirmed purge was removed by it, and one at a
//     higher index was not, whatever the clocks said. Client times alone
//     could not tell this much: a publish confirmed after the purge was
//     sent, or sent before the purge was confirmed, may land on either
//     side of it, so only a publish confirmed before the purge was sent
//     is certainly before it, and the indexes settle the rest.
//   - A purge record in the final owner's log is in the history for
//     certain, with the boundary it settles through, and so is a publish
//     record there: every purge after a publish that the log still holds
//     is in the log too, since compaction drops only a prefix.
//   - A purge whose outcome the client never learned, once compaction
//     dropped its record, leaves no trace of where it landed. A message
//     whose publish the final log no longer holds either may then have
//     been removed by it if it was published before the purge ended and
//     is not live at the end; it is excused, since nothing else can be
//     concluded. Such runs are rare, and a message lost outright still
//     fails wherever a certain purge or its own log record shows it.
//   - Such a purge need not have ended when its client gave up on it:
//     a request sent before then may be parked by an owner still
//     recovering, or deferred by a recovered owner's hold, and written
//     after messages published later (seed 110194: a purge's last
//     request, sent 0.6 ms before its client gave up, reached a
//     candidate owner after a later publish had and was written behind
//     it). Owners report each purge record they write, named by the
//     purge's token, so its end is the later of the client's give-up
//     and its last write; a purge no owner wrote never happened.
//   - A confirmed publish's reply carries its own record's index only
//     while its owner remembers that record. A retry that comes once the
//     publish has left the deduplication window, while the message's
//     settle is still in it, is answered with the settle's index (seed
//     338067: a purge settled three messages, a clock jumped forward
//     aged their publishes out of the new owner's window, and their
//     retries were confirmed with the purge's own index). No publish
//     record can sit where a purge record certainly sits, so a publish
//     confirmed with such a purge's index was settled by that purge: it
//     was published at or before its boundary.

// purgeView is what the history says about purges and where messages
// were published.
type purgeView struct {
	// throughs lists, per queue, the boundaries of the purges certainly
	// in its history: every message published at or before one is gone.
	throughs map[string][]uint64
	// ops are the purge operations, per queue, that may have happened.
	ops map[string][]*sim.OpRecord
	// logIndex is the index of each message's publish record in the
	// final owner's log of its queue, where it still holds one.
	logIndex map[queueMessage]uint64
	// restored is the index of each message's last publish record in
	// the final owner's log, where it holds more than one: a retry that
	// came once the deduplication window had forgotten the ID was stored
	// again, a new message under the old ID.
	restored map[queueMessage]uint64
	// live holds the messages unsettled in the final owner's history.
	live map[queueMessage]bool
	// purgeAt maps, per queue, the index of each purge record certainly
	// in its history to the boundary that purge settles through.
	purgeAt map[string]map[uint64]uint64
	// written is when an owner last wrote each purge, by its token.
	written map[queueMessage]time.Duration
	// end is when the run ended, the end of a purge still pending.
	end time.Duration
}

// queueMessage names a message in one queue: a message moved to a
// dead-letter queue keeps its ID there, under another index.
type queueMessage struct {
	queue string
	id    wire.MessageID
}

// newPurgeView reads the purge operations and the final owners' logs,
// and marks every message a purge record there settles as settled.
func newPurgeView(ix *index, owners map[string]node.NodeID) *purgeView {
	v := &purgeView{
		throughs: make(map[string][]uint64), ops: make(map[string][]*sim.OpRecord),
		logIndex: make(map[queueMessage]uint64), restored: make(map[queueMessage]uint64), live: make(map[queueMessage]bool),
		written: make(map[queueMessage]time.Duration), purgeAt: make(map[string]map[uint64]uint64),
	}
	for _, w := range ix.h.PurgeWrites {
		k := queueMessage{w.Queue, w.Token}
		v.written[k] = max(v.written[k], w.At)
	}
	for i := range ix.h.Ops {
		op := &ix.h.Ops[i]
		v.end = max(v.end, op.Done, op.Invoked)
		if op.Kind != "purge" || op.Outcome == sim.OutcomeFailed {
			continue
		}
		v.ops[op.Queue] = append(v.ops[op.Queue], op)
		if op.Outcome == sim.OutcomeOK && op.Index > 0 {
			v.throughs[op.Queue] = append(v.throughs[op.Queue], op.Index-1)
			v.notePurge(op.Queue, op.Index, op.Index-1)
		}
	}
	for _, id := range sortedNodes(ix.h.Final) {
		for _, r := range ix.h.Final[id] {
			if owners[r.Queue] == id {
				v.readLog(ix, r)
			}
		}
	}
	return v
}

// readLog replays one final owner's history far enough to know which
// messages are live at its end, where each publish record sits, and
// what its purge records settled.
func (v *purgeView) readLog(ix *index, r node.ReplicaDump) {
	// live maps each unsettled message to its publish index, and order
	// lists them as they came, so purges and the end are judged in a
	// fixed order.
	live := make(map[wire.MessageID]uint64)
	var order []wire.MessageID
	var cut uint64
	if c := r.Checkpoint; c != nil {
		cut = c.Cut
		for _, id := range c.Live {
			live[id] = 0 // published at or before the cut
			order = append(order, id)
		}
	}
	for _, e := range r.Entries {
		switch e.Type {
		case "publish":
			k := queueMessage{r.Queue, e.ID}
			if _, seen := v.logIndex[k]; !seen {
				v.logIndex[k] = e.Index
			} else {
				v.restored[k] = e.Index
			}
		case "purge":
			v.throughs[r.Queue] = append(v.throughs[r.Queue], e.Through)
			v.notePurge(r.Queue, e.Index, e.Through)
		}
		if e.Index <= cut {
			continue
		}
		switch e.Type {
		case "publish":
			if _, dup := live[e.ID]; !dup {
				live[e.ID] = e.Index
				order = append(order, e.ID)
			}
		case "settle":
			for _, id := range e.IDs() {
				delete(live, id)
			}
		case "purge":
			for _, id := range order {
				if at, ok := live[id]; ok && at <= e.Through {
					delete(live, id)
					ix.settledInLog[id] = true
				}
			}
		}
	}
	for _, id := range order {
		if _, ok := live[id]; ok {
			v.live[queueMessage{r.Queue, id}] = true
		}
	}
}

// notePurge records that the purge record at index, settling through
// through, is certainly in queue's history.
func (v *purgeView) notePurge(queue string, index, through uint64) {
	if v.purgeAt[queue] == nil {
		v.purgeAt[queue] = make(map[uint64]uint64)
	}
	v.purgeAt[queue][index] = through
}

// publishIndex is where op's message was published in the queue's log,
// if the history says: at most that index. A publish confirmed with a
// certain purge's index was answered with the index of the purge that
// settled it (see the rules above), so it was published at or before that
// purge's boundary, which is returned.
func (v *purgeView) publishIndex(op *sim.OpRecord) (uint64, bool) {
	if at, ok := v.logIndex[queueMessage{op.Queue, op.ID}]; ok {
		return at, true
	}
	if op.Outcome == sim.OutcomeOK && op.Index > 0 {
		if through, ok := v.purgeAt[op.Queue][op.Index]; ok {
			return through, true
		}
		return op.Index, true
	}
	return 0, false
}

// excused reports whether a purge may have removed the message op
// published, so that it need not be delivered (see the rules above).
func (v *purgeView) excused(op *sim.OpRecord) bool {
	if at, ok := v.publishIndex(op); ok {
		for _, through := range v.throughs[op.Queue] {
			if at <= through {
				return true
			}
		}
	}
	if _, inLog := v.logIndex[queueMessage{op.Queue, op.ID}]; inLog || v.live[queueMessage{op.Queue, op.ID}] {
		return false
	}
	for _, p := range v.ops[op.Queue] {
		if p.Outcome == sim.OutcomeOK && p.Index > 0 && op.Outcome == sim.OutcomeOK && op.Index > 0 {
			continue // both indexes known: judged above
		}
		end := p.Done
		switch p.Outcome {
		case sim.OutcomePending:
			end = v.end
		case sim.OutcomeUnknown:
			end = max(end, v.written[queueMessage{p.Queue, p.ID}])
		}
		if op.Invoked < end {
			return true
		}
	}
	return false
}

// checkPurges: no owner hands out a message a confirmed purge removed
// once the purge was confirmed (sends are the simulator's ground truth);
// and on a queue that was purged, no confirmed message that no purge
// covers is settled without ever being delivered: a purge that reaches
// past its own place in the log removes what was published after it.
// Owner-only queues are left out of the first rule, as exclusive-delivery
// leaves them out: nothing bounds how long an old owner of one delivers.
func checkPurges(ix *index, ownerOnly map[string]bool) []sim.Violation {
	var out []sim.Violation
	add := func(v sim.Violation) {
		if len(out) < maxReports {
			out = append(out, v)
		}
	}
	v := ix.purges
	for _, q := range slices.Sorted(maps.Keys(v.ops)) {
		for _, p := range v.ops[q] {
			if p.Outcome != sim.OutcomeOK || p.Index == 0 || p.Replied.IsZero() || ownerOnly[q] {
				continue
			}
			for _, d := range ix.h.Sends {
				// A copy in a dead-letter queue has no publish of its
				// own to place it: only messages published to q are
				// judged.
				pub := ix.publishes[d.ID]
				if d.Queue != q || pub == nil || pub.Queue != q || !p.Replied.Before(d.Sent) {
					continue
				}
				if v.restored[queueMessage{q, d.ID}] > p.Index {
					// Its ID was stored again after this purge, once the
					// deduplication window, measured on owners' clocks,
					// had forgotten it: the copy sent may be that new
					// message, which the purge did not remove (seed
					// 881265: an owner whose clock had jumped back 3 s
					// stamped the first record, and a retry 2 s later
					// was past the 5 s window on the next owner's clock).
					continue
				}
				if at, ok := v.publishIndex(pub); ok && at < p.Index {
					add(safety("purged-stays-purged", "%s, published at index %d, was sent by %s at %v after the purge at index %d was confirmed at %v%s",
						d.ID, at, d.From, d.Sent, p.Index, p.Replied, ix.life(d.ID)))
				}
			}
		}
	}
	// A message moved to its dead-letter queue was settled by its
	// deliveries' count, sent whether or not a client received them: the
	// dead-letter checker judges the move, not this one.
	movedAway := make(map[queueMessage]bool)
	for _, d := range ix.h.DeadLetters {
		movedAway[queueMessage{d.Queue, d.ID}] = true
	}
	for _, op := range ix.h.Ops {
		if op.Kind != "publish" || op.Outcome != sim.OutcomeOK || len(v.ops[op.Queue]) == 0 || len(ix.deliveries[op.ID]) > 0 ||
			movedAway[queueMessage{op.Queue, op.ID}] {
			continue
		}
		at, known := v.publishIndex(&op)
		if known && ix.inLog[op.ID] && !v.live[queueMessage{op.Queue, op.ID}] && ix.settledInLog[op.ID] && !v.excused(&op) {
			add(safety("purge-cut", "confirmed message %s, published at index %d after every purge of %s, was settled without ever being delivered%s",
				op.ID, at, op.Queue, ix.life(op.ID)))
		}
	}
	return out
}
