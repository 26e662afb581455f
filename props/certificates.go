package props

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// The agreed-checkpoint protocol promises two things no loss checker can
// see, because a replica compacts only below its own durable checkpoint
// at a confirmed index and so loses nothing by breaking them: a replica
// drops log segments only below a cut the metadata certified, and the
// metadata certifies a cut only after every replica of the set reported
// a durable checkpoint there, all with the same state. Both are judged
// from the node events of the run, in the order the simulator saw them.

// ckptEvent is one node event the checkpoint protocol checkers read: who
// emitted it and when.
type ckptEvent struct {
	At    time.Duration
	Node  node.NodeID
	Event event.Event
}

// ckptAudit collects, in order, the events the checkpoint protocol
// checkers judge.
type ckptAudit struct {
	events []ckptEvent
}

// observe keeps e if a checkpoint protocol checker reads it.
func (a *ckptAudit) observe(now time.Duration, id node.NodeID, e event.Event) {
	switch e.Name {
	case event.CheckpointDurable, event.CheckpointProposed, event.CheckpointCertified, event.QueueCompacted, event.QueueRetired,
		event.MetaDeleted:
		a.events = append(a.events, ckptEvent{At: now, Node: id, Event: e})
	}
}

// check runs both checkers over what was collected.
func (a *ckptAudit) check() []sim.Violation {
	return append(checkCompactionAfterCertificate(a.events), checkCertificateReceipts(a.events)...)
}

// queueInc names one incarnation of a queue: a queue deleted and created
// again under its name starts its certificates over.
type queueInc struct {
	queue string
	inc   uint64
}

// replicaOf names one node's replica of a queue incarnation.
type replicaOf struct {
	node node.NodeID
	queueInc
}

// replicaKey is the replica an event is about: the emitting node's
// replica of the queue incarnation the event names.
func replicaKey(ev ckptEvent) replicaOf {
	return replicaOf{ev.Node, queueInc{ev.Event.Queue(), ev.Event.Inc()}}
}

// checkCompactionAfterCertificate: when a replica's first retained index
// becomes F, it dropped every record through F-1, so some node must
// already have applied a certificate of that queue incarnation with a cut
// at or past F-1, and the replica's own newest durable checkpoint must
// reach F-1 too. A replica that takes a checkpoint from another and
// resets its log reports no compaction: that path is judged by the
// checkpoint checker instead.
func checkCompactionAfterCertificate(evs []ckptEvent) []sim.Violation {
	certified := make(map[queueInc]uint64)
	own := make(map[replicaOf]uint64)
	var out []sim.Violation
	for _, ev := range evs {
		e, k := ev.Event, replicaKey(ev)
		switch e.Name {
		case event.CheckpointCertified:
			certified[k.queueInc] = max(certified[k.queueInc], e.Index())
		case event.CheckpointDurable:
			own[k] = e.Index()
		case event.QueueRetired:
			delete(own, k) // a node that joins the set again starts without a checkpoint
		case event.QueueCompacted:
			through := e.Index() - 1
			var why string
			switch {
			case through > certified[k.queueInc]:
				why = fmt.Sprintf("the newest certificate any node had applied was at %d", certified[k.queueInc])
			case through > own[k]:
				why = fmt.Sprintf("its own newest durable checkpoint was at %d", own[k])
			default:
				continue
			}
			if len(out) < maxReports {
				out = append(out, safety("compaction-after-certificate",
					"queue %s (incarnation %x): %s dropped its log through index %d at %v, but %s",
					k.queue, k.inc, ev.Node, through, ev.At, why))
			}
		}
	}
	return out
}

// certificate names one certificate as proposed and applied: the cut of a
// queue incarnation, the epoch of the owner that proposed it and the
// replica set it names.
type certificate struct {
	queueInc
	cut, epoch uint64
	members    string
}

// certificateOf reads the certificate a proposal or application names.
func certificateOf(e event.Event) certificate {
	return certificate{queueInc{e.Queue(), e.Inc()}, e.Index(), e.Epoch(), memberList(e.Members())}
}

// memberList renders a replica set in the order the event gives it, which
// is the order the owner proposed it in.
func memberList(ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = node.NodeID(id).String()
	}
	return strings.Join(parts, ",")
}

// checkCertificateReceipts: when an owner proposes a certificate, every
// replica it names must already hold a durable checkpoint at the cut
// (built, taken from another replica, or found on its disk at a restart:
// only such a checkpoint can have answered with a receipt), and those
// checkpoints must hold one state. Every certificate a node applies must
// be one an owner proposed, so every applied certificate is backed.
func checkCertificateReceipts(evs []ckptEvent) []sim.Violation {
	held := make(map[replicaOf]*heldCheckpoints)
	deleted := make(map[queueInc]bool)
	proposed := make(map[certificate]bool)
	applied := make(map[certificate]bool)
	var out []sim.Violation
	add := func(v sim.Violation) {
		if len(out) < maxReports {
			out = append(out, v)
		}
	}
	for _, ev := range evs {
		e, k := ev.Event, replicaKey(ev)
		switch e.Name {
		case event.CheckpointDurable:
			if held[k] == nil {
				held[k] = &heldCheckpoints{digests: make(map[uint64]string)}
			}
			held[k].digests[e.Index()] = e.Digest()
			held[k].latest = e.Index()
		case event.MetaDeleted:
			deleted[k.queueInc] = true
		case event.QueueRetired:
			if deleted[k.queueInc] {
				// Its queue was deleted: an owner that has not applied the
				// deletion yet may still propose a certificate on the
				// receipt the replica gave before it retired, which was
				// true then, and a deleted queue's certificate lets no one
				// drop anything anyone will read.
				continue
			}
			// The replica is gone the moment it retires; a replaced one's
			// files are removed later (queue.replaced), and by then the
			// node may hold a new replica of the same incarnation, with
			// checkpoints of its own (seed 855850: a node replaying its
			// metadata after a lost disk retired its replica and made a
			// new one, which installed a checkpoint before the old files
			// were gone; their removal was taken for the new one's).
			delete(held, k)
		case event.CheckpointProposed:
			c := certificateOf(e)
			proposed[c] = true
			if why := unbackedMembers(held, c, e.Members()); why != "" {
				add(safety("certificate-has-every-receipt", "queue %s (incarnation %x): %s proposed at %v, in epoch %d, a certificate of cut %d naming %s, but %s",
					c.queue, c.inc, ev.Node, ev.At, c.epoch, c.cut, c.members, why))
			}
		case event.CheckpointCertified:
			c := certificateOf(e)
			if !applied[c] && !proposed[c] {
				add(safety("certificate-has-every-receipt", "queue %s (incarnation %x): %s applied at %v a certificate of cut %d in epoch %d naming %s that no owner proposed",
					c.queue, c.inc, ev.Node, ev.At, c.cut, c.epoch, c.members))
			}
			applied[c] = true
		}
	}
	return out
}

// heldCheckpoints is every durable checkpoint one replica reported: the
// state digest at each cut, and the cut of the latest report (which a
// restart after a lost write can move back).
type heldCheckpoints struct {
	digests map[uint64]string
	latest  uint64
}

// unbackedMembers says which members of c held no durable checkpoint at
// its cut, or that their checkpoints there disagree; "" when every member
// backs it.
func unbackedMembers(held map[replicaOf]*heldCheckpoints, c certificate, members []uint32) string {
	var missing []string
	digests := make(map[string]string) // digest -> the first member holding it
	var order []string
	for _, m := range members {
		id := node.NodeID(m)
		h := held[replicaOf{id, c.queueInc}]
		if h == nil {
			missing = append(missing, fmt.Sprintf("%s (no checkpoint yet)", id))
			continue
		}
		d, ok := h.digests[c.cut]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (latest checkpoint at %d)", id, h.latest))
			continue
		}
		if _, seen := digests[d]; !seen {
			digests[d] = id.String()
			order = append(order, d)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Sprintf("%s held no durable checkpoint at that cut", strings.Join(missing, ", "))
	case len(order) > 1:
		parts := make([]string, len(order))
		for i, d := range order {
			parts[i] = digests[d] + " holds state " + d
		}
		return "their checkpoints at that cut disagree: " + strings.Join(parts, ", ")
	}
	return ""
}
