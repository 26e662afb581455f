package props

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
)

// maxReports bounds how many violations one checker reports per run; the
// first is what matters, the count says how widespread.
const maxReports = 3

// checkTotalQueue: every confirmed publish is delivered, unless a purge
// removed it first (purge.go); every message the owner's final log holds
// (the ground truth of unknown outcomes) is delivered, with the same
// exception; the queue drains (in the calm phase consumers ack all they
// get, so every delivered message ends settled); nothing is delivered
// that was never published; nothing reported failed happened.
func checkTotalQueue(ix *index) []sim.Violation {
	var out []sim.Violation
	add := func(v sim.Violation) {
		if len(out) < maxReports {
			out = append(out, v)
		}
	}
	for _, op := range ix.h.Ops {
		if op.Kind != "publish" {
			continue
		}
		delivered := len(ix.deliveries[op.ID]) > 0
		if !delivered && op.Outcome != sim.OutcomeFailed && (ix.purges.excused(&op) || ix.purgedAfterMove(op.ID)) {
			continue // a purge removed it (or its dead-letter copy) before anyone took it
		}
		switch {
		case op.Outcome == sim.OutcomeOK && !delivered && !ix.inLog[op.ID]:
			add(safety("total-queue", "confirmed message %s is lost: never delivered and not in the owner's log%s", op.ID, ix.life(op.ID)))
		case op.Outcome == sim.OutcomeOK && !delivered:
			add(liveness("total-queue", "confirmed message %s was not delivered by the end of the run%s", op.ID, ix.life(op.ID)))
		case op.Outcome != sim.OutcomeFailed && ix.inLog[op.ID] && !delivered:
			add(liveness("total-queue", "message %s (outcome %s) is in the owner's log but was never delivered%s", op.ID, op.Outcome, ix.life(op.ID)))
		case op.Outcome == sim.OutcomeFailed && (delivered || ix.inLog[op.ID]):
			add(safety("total-queue", "publish of %s was reported failed (%s) but happened%s", op.ID, op.Status, ix.life(op.ID)))
		case delivered && !ix.ackedOK[op.ID] && !ix.settledInLog[op.ID]:
			add(liveness("total-queue", "message %s was delivered but never settled: the queue did not drain%s", op.ID, ix.life(op.ID)))
		}
	}
	for _, d := range ix.h.Deliveries {
		if ix.publishes[d.ID] == nil {
			add(safety("total-queue", "delivered %s, which no client published%s", d.ID, ix.life(d.ID)))
		}
	}
	return out
}

// checkSettled: once an ack was confirmed, the owner never sends the
// message again from that queue. Stamps are the simulator's ground truth
// of send order. (A message moved to a dead-letter queue keeps its ID
// there, and an ack on the source queue says nothing about that copy.)
func checkSettled(ix *index) []sim.Violation {
	var out []sim.Violation
	for _, op := range ix.h.Ops {
		if op.Kind != "ack" || op.Outcome != sim.OutcomeOK || op.Replied.IsZero() {
			continue
		}
		for _, d := range ix.sends[op.ID] {
			if d.Queue == op.Queue && op.Replied.Before(d.Sent) && len(out) < maxReports {
				out = append(out, safety("settled-stays-settled", "%s was delivered at %v after its ack was confirmed at %v%s",
					op.ID, d.Sent, op.Replied, ix.life(op.ID)))
			}
		}
	}
	return out
}

// checkIntact: every delivery carries the payload its message was
// published with, byte for byte. Frames are checked on the wire and on
// disk; this holds the whole path to it, from the publish through logs,
// replication, recovery, checkpoints and dead-letter moves to the
// consumer.
func checkIntact(ix *index) []sim.Violation {
	var out []sim.Violation
	for _, d := range ix.h.Deliveries {
		pub := ix.publishes[d.ID]
		if pub == nil || pub.Sum == d.Sum || len(out) >= maxReports {
			continue
		}
		out = append(out, safety("payload-intact", "%s was delivered from %s at %v with a payload whose digest is %016x; it was published with %016x%s",
			d.ID, d.From, d.Received, d.Sum, pub.Sum, ix.life(d.ID)))
	}
	return out
}

// checkDurability holds each replica to its word: after a restart it must
// still hold every record it reported durable, except where a newer owner
// made it truncate or a lost-writes fault took records from its disk.
func checkDurability(h *sim.History) []sim.Violation {
	claimed := make(map[replicaKeyOf]uint64)
	// rotten holds, per replica a rot fault broke while its node ran,
	// the last record before the decayed one: the replica goes on
	// reporting what it wrote after it, but can never again hold more
	// than that, until the damage is cut away or the replica replaced.
	rotten := make(map[replicaKeyOf]uint64)
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		k := replicaKeyOf{e.Node, e.Queue, e.Inc}
		if e.Name == event.QueueTruncate || e.Name == sim.EventLostWrites || e.Name == sim.EventRot {
			for _, k := range incarnationsOf(claimed, rotten, k) {
				noteLoss(claimed, rotten, k, e.Name, e.Value)
			}
			continue
		}
		switch e.Name {
		case event.QueueReported, event.QueueDurable:
			claimed[k] = max(claimed[k], e.Value)
			if sound, ok := rotten[k]; ok {
				claimed[k] = min(claimed[k], sound)
			}
		case event.QueueReplaced, event.QueueRetired:
			// The metadata replaced this replica and the node dropped it
			// (retired first, its files going after): if the node joins
			// the set again, it starts from nothing.
			delete(claimed, k)
			delete(rotten, k)
		case sim.EventLostDisk:
			// Every replica on the node went with its disk: the node
			// starts from nothing, and owes nothing it said before.
			maps.DeleteFunc(claimed, func(c replicaKeyOf, _ uint64) bool { return c.node == e.Node })
			maps.DeleteFunc(rotten, func(c replicaKeyOf, _ uint64) bool { return c.node == e.Node })
		case event.QueueOpen:
			if e.Value < claimed[k] && len(out) < maxReports {
				out = append(out, safety("replica-durability", "%s reopened %s at %v holding %d records after reporting %d durable%s",
					e.Node, e.Queue, e.At, e.Value, claimed[k], queueStory(h, e.Queue, 0, e.At)))
			}
		}
	}
	return out
}

// replicaKeyOf names one node's replica of one incarnation of a queue
// (the events a replica emits name their incarnation).
// A queue deleted and made again under its name is another incarnation,
// whose replica owes nothing the old one said.
type replicaKeyOf struct {
	node  node.NodeID
	queue string
	inc   uint64
}

// incarnationsOf lists the replicas a loss event k is about: k itself
// when it names its incarnation, and otherwise (the simulator's faults,
// which act on files, not incarnations) every incarnation of k's queue
// on k's node that claimed or rotted anything, in incarnation order.
func incarnationsOf(claimed, rotten map[replicaKeyOf]uint64, k replicaKeyOf) []replicaKeyOf {
	if k.inc != 0 {
		return []replicaKeyOf{k}
	}
	var out []replicaKeyOf
	for _, m := range []map[replicaKeyOf]uint64{claimed, rotten} {
		for _, c := range slices.SortedFunc(maps.Keys(m), byIncarnation) {
			if c.node == k.node && c.queue == k.queue && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, byIncarnation)
	return out
}

// byIncarnation orders one node's replicas of one queue by incarnation.
func byIncarnation(a, b replicaKeyOf) int {
	switch {
	case a.node != b.node:
		return int(a.node) - int(b.node)
	case a.queue != b.queue:
		return strings.Compare(a.queue, b.queue)
	case a.inc < b.inc:
		return -1
	case a.inc > b.inc:
		return 1
	}
	return 0
}

// noteLoss lowers what replica k owes after a truncation a newer owner
// asked for, writes its disk lost, or a record that decayed: after
// index value it no longer owes anything, and a decayed replica can hold
// no more than that until the damage is cut away.
func noteLoss(claimed, rotten map[replicaKeyOf]uint64, k replicaKeyOf, name event.Name, value uint64) {
	claimed[k] = min(claimed[k], value)
	switch name {
	case event.QueueTruncate:
		if sound, ok := rotten[k]; ok && value < sound {
			delete(rotten, k) // the decayed record is gone
		}
	case sim.EventRot:
		if sound, ok := rotten[k]; !ok || value < sound {
			rotten[k] = value
		}
	}
}

// nodesByEvent maps each queue to the nodes that recorded the named event
// for it.
func nodesByEvent(h *sim.History, name event.Name) map[string]map[node.NodeID]bool {
	out := make(map[string]map[node.NodeID]bool)
	for _, e := range h.NodeEvents {
		if e.Name != name {
			continue
		}
		if out[e.Queue] == nil {
			out[e.Queue] = make(map[node.NodeID]bool)
		}
		out[e.Queue][e.Node] = true
	}
	return out
}

// entryView is what replicas must agree on, record by record.
type entryView struct {
	Index uint64
	Type  string
	Epoch uint64
	ID    wire.MessageID
	// More is the rest of a settle record's IDs, rendered, so views
	// compare with ==.
	More string
}

// checkConvergence compares every replica of a queue with its owner's:
// their common history must be identical (safety), and after the quiet
// end of the run every replica must have caught up (liveness).
func checkConvergence(h *sim.History) []sim.Violation {
	var out []sim.Violation
	byQueue := make(map[string]map[node.NodeID]node.ReplicaDump)
	var queues []string
	for _, id := range sortedNodes(h.Final) {
		if _, gone := h.Removed[id]; gone {
			// The cluster let the node go: it holds no replica the
			// metadata names, and nothing brings what it kept up to date.
			continue
		}
		for _, r := range h.Final[id] {
			if byQueue[r.Queue] == nil {
				byQueue[r.Queue] = make(map[node.NodeID]node.ReplicaDump)
				queues = append(queues, r.Queue)
			}
			byQueue[r.Queue][id] = r
		}
	}
	slices.Sort(queues)
	owners := finalLogs(h)
	fenced, rotted := nodesByEvent(h, event.QueueFenced), nodesByEvent(h, sim.EventRot)
	frozen := frozenCommits(h)
	for _, q := range queues {
		for _, v := range compareReplicas(q, owners[q], byQueue[q], fenced[q], rotted[q], frozen[q]) {
			if v.Kind == sim.Safety {
				v.Detail += queueStory(h, q, 0, storyEnd)
			}
			out = append(out, v)
		}
	}
	return out
}

// frozenCommits maps each queue to the replicas whose node fenced them
// and never started again afterwards, each with the highest index any
// owner of the queue had reported confirmed when the fence came. Such a
// replica takes no part from its fence on, so nothing can make it drop
// the unconfirmed suffix it held then, and a later epoch may well have
// written other records at those indexes.
func frozenCommits(h *sim.History) map[string]map[node.NodeID]uint64 {
	lastStart := make(map[node.NodeID]time.Duration)
	for _, p := range h.Processes {
		if p.Up {
			lastStart[p.Node] = p.At
		}
	}
	commit := make(map[string]uint64)
	out := make(map[string]map[node.NodeID]uint64)
	for _, e := range h.NodeEvents {
		switch e.Name {
		case event.QueueCommit:
			commit[e.Queue] = max(commit[e.Queue], e.Value)
		case event.QueueFenced:
			if e.At < lastStart[e.Node] {
				// A later process reopened the replica and may follow
				// again: it must converge like any other.
				continue
			}
			if out[e.Queue] == nil {
				out[e.Queue] = make(map[node.NodeID]uint64)
			}
			out[e.Queue][e.Node] = commit[e.Queue]
		}
	}
	return out
}

// compareReplicas compares each replica of q with the owner's (or, when
// a rot broke the owner's, with the replica finalLogs took instead). A
// replica that cannot be read is a failure unless its node found the
// damage itself and fenced the replica (which also reports it lost to
// the metadata), or a rot fault broke it: a bit that decayed where no
// read has reached yet is as unknown to its node as to its disk. A
// fenced replica that still reads (damage can leave a log that reopens
// clean but short) is compared only through the index the queue had
// confirmed when it was fenced (frozen): everything it holds up to there
// must be the confirmed history, and what lies beyond was never confirmed
// and could never be truncated.
func compareReplicas(q string, owner node.NodeID, reps map[node.NodeID]node.ReplicaDump, fenced, rotted map[node.NodeID]bool, frozen map[node.NodeID]uint64) []sim.Violation {
	var out []sim.Violation
	own, ok := reps[owner]
	if !ok {
		return []sim.Violation{liveness("convergence", "queue %s: the owner %s holds no replica at the end", q, owner)}
	}
	if own.Err != nil {
		return []sim.Violation{liveness("convergence", "queue %s: the owner's replica is unreadable: %v", q, own.Err)}
	}
	for _, id := range slices.Sorted(maps.Keys(reps)) {
		r := reps[id]
		switch {
		case id == owner:
			continue
		case r.Err != nil && (fenced[id] || rotted[id]):
			continue
		case r.Err != nil:
			out = append(out, liveness("convergence", "queue %s: replica on %s is unreadable: %v", q, id, r.Err))
			continue
		}
		mine := views(r.Entries)
		cut, isFrozen := frozen[id]
		if isFrozen {
			mine = slices.DeleteFunc(mine, func(e entryView) bool { return e.Index > cut })
		}
		a, b := commonRange(views(own.Entries), mine)
		n := min(len(a), len(b))
		if i := firstDifference(a[:n], b[:n]); i >= 0 {
			lo, hi := max(0, i-3), min(n, i+4)
			out = append(out, safety("convergence", "queue %s: %s and %s disagree from index %d (-owner +replica):\n%s",
				q, owner, id, a[i].Index, cmp.Diff(a[lo:hi], b[lo:hi])))
			continue
		}
		ownLast, last := lastIndex(own), lastIndex(r)
		// A log a rot left empty (its only records decayed into what
		// reads as a torn tail) ends below its checkpoint's cut, which
		// lastIndex then reports: its digest covers none of what it is
		// compared at (seed 142627 of the long sweep).
		emptiedByRot := rotted[id] && len(r.Entries) == 0
		if ownLast == last && own.Digest != r.Digest && (!isFrozen || last <= cut) && !emptiedByRot {
			out = append(out, safety("convergence", "queue %s: %s and %s end at the same index %d but with digests %s and %s",
				q, owner, id, last, own.Digest, r.Digest))
		}
		if last < ownLast && !fenced[id] && !rotted[id] {
			// A fenced replica takes no part any more, and one a rot
			// broke may read back short where a decayed frame looks
			// like a torn tail: neither is expected to catch up.
			out = append(out, liveness("convergence", "queue %s: replica on %s ends at index %d, the owner at %d, after the quiet end",
				q, id, last, ownLast))
		}
	}
	return out
}

func views(es []node.LogEntry) []entryView {
	out := make([]entryView, len(es))
	for i, e := range es {
		out[i] = entryView{e.Index, e.Type, e.Epoch, e.ID, fmt.Sprint(e.More)}
	}
	return out
}

// commonRange drops from each log the entries before the other's first:
// replicas compact at their own pace, so each may retain a different
// prefix of the same history.
func commonRange(a, b []entryView) ([]entryView, []entryView) {
	if len(a) == 0 || len(b) == 0 {
		return a, b
	}
	start := max(a[0].Index, b[0].Index)
	from := func(es []entryView) []entryView {
		i := 0
		for i < len(es) && es[i].Index < start {
			i++
		}
		return es[i:]
	}
	return from(a), from(b)
}

// lastIndex is the index a replica's history ends at: its last entry, or
// its checkpoint's cut when the log after it is empty.
func lastIndex(r node.ReplicaDump) uint64 {
	if n := len(r.Entries); n > 0 {
		return r.Entries[n-1].Index
	}
	if r.Checkpoint != nil {
		return r.Checkpoint.Cut
	}
	return 0
}

func firstDifference(a, b []entryView) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// checkFIFO: for one producer and queue, if a confirmed immediate publish
// finished before the next was invoked, its first delivery was sent first.
func checkFIFO(ix *index) []sim.Violation {
	type key struct {
		client int
		queue  string
	}
	var order []key
	runs := make(map[key][]*sim.OpRecord)
	for i := range ix.h.Ops {
		op := &ix.h.Ops[i]
		if op.Kind != "publish" || op.Outcome != sim.OutcomeOK || op.Delay > 0 {
			continue
		}
		k := key{op.Client, op.Queue}
		if runs[k] == nil {
			order = append(order, k)
		}
		runs[k] = append(runs[k], op)
	}
	var out []sim.Violation
	for _, k := range order {
		ops := runs[k]
		for i := 1; i < len(ops) && len(out) < maxReports; i++ {
			p1, p2 := ops[i-1], ops[i]
			d1, d2 := ix.firstSent(p1.ID), ix.firstSent(p2.ID)
			if p1.Done < p2.Invoked && d1 != nil && d2 != nil && d2.Sent.Before(d1.Sent) {
				out = append(out, safety("fifo", "producer %d on %s: %s was confirmed before %s was published, yet delivered after it (%v > %v)%s%s",
					k.client, k.queue, p1.ID, p2.ID, d1.Sent, d2.Sent, ix.life(p1.ID), ix.life(p2.ID)))
			}
		}
	}
	return out
}

func (ix *index) firstSent(id wire.MessageID) *sim.DeliveryRecord {
	var first *sim.DeliveryRecord
	for _, d := range ix.sends[id] {
		if first == nil || d.Sent.Before(first.Sent) {
			first = d
		}
	}
	return first
}

// checkConfirmedConflicts fails a run in which a replica was asked to
// drop a record at or below a commit index it had been told: the owner or
// recovery source that asked holds a history without a confirmed record.
// The replica refuses, so the record survives there, but the protocol
// already went wrong.
func checkConfirmedConflicts(h *sim.History) []sim.Violation {
	var out []sim.Violation
	for _, e := range h.NodeEvents {
		if e.Name == event.QueueRefusedTruncation && len(out) < maxReports {
			out = append(out, safety("confirmed-conflict", "%s was asked at %v to drop a confirmed record of %s (epoch %d)%s",
				e.Node, e.At, e.Queue, e.Epoch, queueStory(h, e.Queue, 0, e.At)))
		}
	}
	return out
}
