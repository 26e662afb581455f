package props

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// Stats summarizes a queue history for the one-line report.
type Stats struct {
	Published, Confirmed, Unknown, Failed int
	Delivered, Duplicates, Acked          int
	Failovers                             int
}

// String renders the stats.
func (s Stats) String() string {
	return fmt.Sprintf("published=%d confirmed=%d unknown=%d failed=%d delivered=%d dup=%d acked=%d failovers=%d",
		s.Published, s.Confirmed, s.Unknown, s.Failed, s.Delivered, s.Duplicates, s.Acked, s.Failovers)
}

// index gathers a history by message ID.
type index struct {
	h          *sim.History
	publishes  map[wire.MessageID]*sim.OpRecord
	deliveries map[wire.MessageID][]*sim.DeliveryRecord // received by a client
	sends      map[wire.MessageID][]*sim.DeliveryRecord // sent by an owner (ground truth)
	// inLog says whether the owner's final log holds a publish of the ID;
	// settledInLog whether it holds a settle record for it.
	inLog        map[wire.MessageID]bool
	settledInLog map[wire.MessageID]bool
	// ackedOK holds IDs with a confirmed ack.
	ackedOK map[wire.MessageID]bool
	// owners names each queue's final owner (finalOwners).
	owners map[string]node.NodeID
	// purges is what the history says about purges (purge.go).
	purges *purgeView
}

// finalOwners names, per queue, the node that activated the highest epoch:
// the owner at the end of the run, wherever failovers moved it.
func finalOwners(h *sim.History) map[string]node.NodeID {
	owners := make(map[string]node.NodeID)
	epochs := make(map[string]uint64)
	for _, e := range h.NodeEvents {
		if e.Name == event.QueueActive && e.Epoch >= epochs[e.Queue] {
			owners[e.Queue], epochs[e.Queue] = e.Node, e.Epoch
		}
	}
	return owners
}

// finalLogs names, per queue, the replica whose log the checkers take as
// the queue's history at the end: the final owner's, unless a rot fault
// struck that replica. The owner may never have read what decayed (it
// went on serving from what it had read before, unaware), and what is
// left on its disk then reads as damage, or, when the decayed record was
// the last, as a torn tail: the log reads clean but short, even empty
// (seed 634238 of the long sweep: the owner of an idle queue lost its
// only record to a rot and its log read empty). The history is then the
// readable replica, of those no rot struck, that reaches furthest; a
// restart would have failed the queue over to one of those. Only when
// none is readable does the rotted owner's log stand.
func finalLogs(h *sim.History) map[string]node.NodeID {
	logs := finalOwners(h)
	rotted := nodesByEvent(h, sim.EventRot)
	for _, q := range slices.Sorted(maps.Keys(logs)) {
		if owner := logs[q]; !rotted[q][owner] {
			continue
		}
		var best uint64
		for _, id := range sortedNodes(h.Final) {
			if _, gone := h.Removed[id]; gone {
				continue // the cluster let it go: nothing kept its replica current
			}
			for _, r := range h.Final[id] {
				if r.Queue == q && r.Err == nil && !rotted[q][id] && lastIndex(r) > best {
					logs[q], best = id, lastIndex(r)
				}
			}
		}
	}
	return logs
}

func newIndex(h *sim.History) *index {
	ix := &index{
		h:          h,
		publishes:  make(map[wire.MessageID]*sim.OpRecord),
		deliveries: make(map[wire.MessageID][]*sim.DeliveryRecord),
		sends:      make(map[wire.MessageID][]*sim.DeliveryRecord),
		inLog:      make(map[wire.MessageID]bool),

		settledInLog: make(map[wire.MessageID]bool),
		ackedOK:      make(map[wire.MessageID]bool),
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Kind == "publish":
			ix.publishes[op.ID] = op
		case op.Kind == "ack" && op.Outcome == sim.OutcomeOK:
			ix.ackedOK[op.ID] = true
		}
	}
	for i := range h.Deliveries {
		d := &h.Deliveries[i]
		ix.deliveries[d.ID] = append(ix.deliveries[d.ID], d)
	}
	for i := range h.Sends {
		d := &h.Sends[i]
		ix.sends[d.ID] = append(ix.sends[d.ID], d)
	}
	owners := finalLogs(h)
	ix.owners = owners
	for _, id := range sortedNodes(h.Final) {
		for _, r := range h.Final[id] {
			if owners[r.Queue] != id {
				continue
			}
			for _, e := range r.Entries {
				switch e.Type {
				case "publish":
					ix.inLog[e.ID] = true
				case "settle":
					for _, id := range e.IDs() {
						ix.settledInLog[id] = true
					}
				}
			}
			if r.Checkpoint != nil {
				ix.addCheckpoint(r)
			}
		}
	}
	ix.purges = newPurgeView(ix, owners)
	return ix
}

// addCheckpoint counts what an owner's checkpoint holds as held: its live
// messages and settled IDs stand for the records compaction dropped. A
// settle older than the deduplication window leaves no trace at all, so
// every published ID that is not live at the end (in the checkpoint or
// published after its cut and not settled since) counts as settled.
func (ix *index) addCheckpoint(r node.ReplicaDump) {
	c := r.Checkpoint
	live := make(map[wire.MessageID]bool)
	for _, id := range c.Live {
		ix.inLog[id], live[id] = true, true
	}
	for _, id := range c.Settled {
		ix.inLog[id], ix.settledInLog[id] = true, true
	}
	for _, e := range r.Entries {
		switch {
		case e.Index <= c.Cut:
		case e.Type == "publish":
			live[e.ID] = true
		case e.Type == "settle":
			for _, id := range e.IDs() {
				delete(live, id)
			}
		}
	}
	for _, op := range ix.h.Ops {
		if op.Kind == "publish" && op.Queue == r.Queue && !live[op.ID] {
			ix.settledInLog[op.ID] = true
		}
	}
}

func sortedNodes(m map[node.NodeID][]node.ReplicaDump) []node.NodeID {
	return slices.Sorted(maps.Keys(m))
}

// CheckQueue runs every queue checker over a history; ownerOnly names the
// queues that confirm on their owner alone.
func CheckQueue(h *sim.History, ownerOnly map[string]bool) ([]sim.Violation, Stats) {
	ix := newIndex(h)
	var out []sim.Violation
	out = append(out, checkTotalQueue(ix)...)
	out = append(out, checkSettled(ix)...)
	out = append(out, checkIntact(ix)...)
	out = append(out, checkPurges(ix, ownerOnly)...)
	out = append(out, checkExclusiveDelivery(ix, ownerOnly)...)
	out = append(out, checkDeliveryHandover(ix)...)
	out = append(out, checkExtendedLeases(ix)...)
	out = append(out, checkQuietSubscribers(ix)...)
	out = append(out, checkDeadLetters(ix)...)
	out = append(out, checkDeliveryCounts(ix)...)
	out = append(out, checkMembershipAnswers(h)...)
	out = append(out, checkBadRequests(h)...)
	out = append(out, checkDurability(h)...)
	out = append(out, checkEpochDurability(h)...)
	out = append(out, checkConfirmedConflicts(h)...)
	out = append(out, checkConvergence(h)...)
	out = append(out, checkCheckpoints(h)...)
	out = append(out, checkFIFO(ix)...)
	out = append(out, checkOneLeaderPerTerm(h)...)
	out = append(out, checkMetaAgreement(h)...)
	out = append(out, checkEpochs(h)...)
	out = append(out, checkNoServiceBeforeActivation(ix)...)
	out = append(out, checkRecoveredActivation(h)...)
	out = append(out, checkOneServingOwner(h)...)
	out = append(out, checkSoundReplicasStay(h)...)
	return out, stats(ix)
}

func stats(ix *index) Stats {
	var s Stats
	for _, op := range ix.h.Ops {
		switch {
		case op.Kind == "publish":
			s.Published++
			switch op.Outcome {
			case sim.OutcomeOK:
				s.Confirmed++
			case sim.OutcomeFailed:
				s.Failed++
			default:
				s.Unknown++
			}
		case op.Kind == "ack" && op.Outcome == sim.OutcomeOK:
			s.Acked++
		}
	}
	for _, e := range ix.h.NodeEvents {
		if e.Name == event.RecoveryDone {
			s.Failovers++
		}
	}
	s.Delivered = len(ix.deliveries)
	s.Duplicates = len(ix.h.Deliveries) - s.Delivered
	return s
}

// life renders everything the history knows about one message.
func (ix *index) life(id wire.MessageID) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n    life of %s:", id)
	for _, op := range ix.h.Ops {
		if op.ID == id && (op.Kind == "publish" || op.Kind == "ack" || op.Kind == "nack" || op.Kind == "extend") ||
			op.Kind == "purge" && ix.publishes[id] != nil && op.Queue == ix.publishes[id].Queue {
			fmt.Fprintf(&b, "\n      %-7s client=%d q=%s invoked=%v done=%v outcome=%s status=%s index=%d replied=%v",
				op.Kind, op.Client, op.Queue, op.Invoked, op.Done, op.Outcome, op.Status, op.Index, op.Replied)
		}
	}
	for _, d := range ix.sends[id] {
		fmt.Fprintf(&b, "\n      sent    client=%d from=%s lease=%d attempt=%d at=%v", d.Client, d.From, d.Lease, d.Attempt, d.Sent)
	}
	for _, d := range ix.deliveries[id] {
		fmt.Fprintf(&b, "\n      receive client=%d from=%s lease=%d attempt=%d sent=%v received=%v",
			d.Client, d.From, d.Lease, d.Attempt, d.Sent, d.Received)
	}
	for _, nid := range sortedNodes(ix.h.Final) {
		for _, r := range ix.h.Final[nid] {
			for _, e := range r.Entries {
				if slices.Contains(e.IDs(), id) {
					fmt.Fprintf(&b, "\n      on-disk %s q=%s %s index=%d epoch=%d", nid, r.Queue, e.Type, e.Index, e.Epoch)
				}
			}
		}
	}
	if op := ix.publishes[id]; op != nil {
		// What happened to the queue from the publish on is what can
		// have lost, duplicated or reordered it.
		b.WriteString(queueStory(ix.h, op.Queue, op.Invoked, storyEnd))
	}
	return b.String()
}

func safety(checker, format string, args ...any) sim.Violation {
	return sim.Violation{Kind: sim.Safety, Checker: checker, Detail: fmt.Sprintf(format, args...)}
}

func liveness(checker, format string, args ...any) sim.Violation {
	return sim.Violation{Kind: sim.Liveness, Checker: checker, Detail: fmt.Sprintf(format, args...)}
}
