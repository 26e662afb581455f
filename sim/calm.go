package sim

import (
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
)

// Watching progress. Safety checkers judge what happened; liveness
// checkers also need what did not happen, and for how long: a queue that
// nobody served, a replica set that stayed short of a member. The world
// knows the ground truth (which processes run) and polls every running
// node's view of its queues on the serving schedule (serving.go), and
// records the spans in which a queue lacked service or redundancy. Props
// judge the spans against bounds derived from the scenario.

// ProcessChange is one process starting (Up) or going down.
type ProcessChange struct {
	At   time.Duration
	Node node.NodeID
	Up   bool
}

// UnservedSpan is a stretch of the calm phase in which no poll found a
// node serving Queue: an owner, not cut off from its quorum, in the
// newest epoch any running node's metadata names. From is the first
// such poll (or the start of the calm phase) and Until the first poll
// that found it served; Open says no poll did by the end of the run.
type UnservedSpan struct {
	Queue       string
	From, Until time.Duration
	Open        bool
}

// ReplicaDeficit is a stretch in which a member of Queue's replica set
// (as the freshest metadata any running node holds names it) was down
// while a node outside the set was up: a replacement was possible. It
// ends at the first poll that found every member up and the queue active
// (redundancy restored), or no node outside the set up (no replacement
// possible); Open says it lasted to the end of the run. Down is the
// first member found down.
type ReplicaDeficit struct {
	Queue       string
	Down        node.NodeID
	From, Until time.Duration
	Open        bool
}

// progressWatch keeps the spans still open between polls.
type progressWatch struct {
	unserved map[string]int // index into History.Unserved
	deficit  map[string]int // index into History.Deficits
	// slot numbers the workload's queues; views and up are each poll's
	// gathering, kept from poll to poll so that the 640 polls of a seed
	// do not allocate them afresh (they were 6% of a sweep's allocation).
	slot  map[string]int
	views [][]node.QueueView
	up    map[node.NodeID]bool
}

// freshestView picks, among views of one queue, the one with the newest
// metadata: the highest incarnation, then epoch, then an active state
// over any other (activation does not change the epoch).
func freshestView(views []node.QueueView) (node.QueueView, bool) {
	var best node.QueueView
	found := false
	for _, v := range views {
		if v.Incarnation == 0 {
			continue
		}
		newer := !found || v.Incarnation > best.Incarnation ||
			v.Incarnation == best.Incarnation && (v.Epoch > best.Epoch || v.Epoch == best.Epoch && v.State == "active" && best.State != "active")
		if newer {
			best, found = v, true
		}
	}
	return best, found
}

// served reports whether one of views is the queue's owner serving in
// the epoch fresh names.
func served(views []node.QueueView, fresh node.QueueView) bool {
	return slices.ContainsFunc(views, func(v node.QueueView) bool {
		return v.Role == "owner" && (!v.NoQuorum || v.Resting) && v.Incarnation == fresh.Incarnation && v.ReplicaEpoch >= fresh.Epoch
	})
}

// watchProgress runs at every poll: it sorts each workload queue's
// views out of what the running nodes said and opens or closes its spans.
func (w *World) watchProgress(nodes []nodeViews) {
	if w.sc.Workload == nil {
		return
	}
	pw := &w.progress
	queues := w.sc.Workload.Queues
	if pw.slot == nil {
		pw.slot = make(map[string]int, len(queues))
		for i, q := range queues {
			pw.slot[q.Name] = i
		}
		pw.views = make([][]node.QueueView, len(queues))
		pw.up = make(map[node.NodeID]bool)
	}
	for i := range pw.views {
		pw.views[i] = pw.views[i][:0]
	}
	clear(pw.up)
	for _, v := range nodes {
		pw.up[v.id] = true
		for _, q := range v.queues {
			if i, ok := pw.slot[q.Name]; ok {
				pw.views[i] = append(pw.views[i], q)
			}
		}
	}
	up := pw.up
	placeable := w.placeable()
	for i, q := range queues {
		views := pw.views[i]
		fresh, known := freshestView(views)
		if w.live {
			w.noteService(q.Name, known && served(views, fresh))
		}
		down, spare := node.NodeID(0), false
		if known {
			down, spare = deficitOf(fresh.Replicas, placeable, up)
		}
		w.noteDeficit(q.Name, down, spare, known && fresh.State == "active")
	}
}

// deficitOf names the first member of set that is not up (zero if all
// are) and says whether a node outside the set is up.
func deficitOf(set, all []node.NodeID, up map[node.NodeID]bool) (down node.NodeID, spare bool) {
	for _, id := range set {
		if !up[id] && down == 0 {
			down = id
		}
	}
	for _, id := range all {
		spare = spare || up[id] && !slices.Contains(set, id)
	}
	return down, spare
}

// noteService opens an unserved span at the first poll that finds the
// queue unserved and closes it at the first that finds it served.
func (w *World) noteService(queue string, ok bool) {
	if w.progress.unserved == nil {
		w.progress.unserved = make(map[string]int)
	}
	i, open := w.progress.unserved[queue]
	switch {
	case !ok && !open:
		w.progress.unserved[queue] = len(w.hist.Unserved)
		w.hist.Unserved = append(w.hist.Unserved, UnservedSpan{Queue: queue, From: w.now, Until: w.now, Open: true})
	case ok && open:
		w.hist.Unserved[i].Until, w.hist.Unserved[i].Open = w.now, false
		delete(w.progress.unserved, queue)
	}
}

// noteDeficit opens a deficit span when a member is down and a spare up,
// and closes it once every member is up in an active queue, or no spare
// is up.
func (w *World) noteDeficit(queue string, down node.NodeID, spare, active bool) {
	if w.progress.deficit == nil {
		w.progress.deficit = make(map[string]int)
	}
	i, open := w.progress.deficit[queue]
	switch {
	case !open && down != 0 && spare:
		w.progress.deficit[queue] = len(w.hist.Deficits)
		w.hist.Deficits = append(w.hist.Deficits, ReplicaDeficit{Queue: queue, Down: down, From: w.now, Until: w.now, Open: true})
	case open && (down == 0 && active || !spare):
		w.hist.Deficits[i].Until, w.hist.Deficits[i].Open = w.now, false
		delete(w.progress.deficit, queue)
	}
}

// closeProgress ends the spans still open when the run ends.
func (w *World) closeProgress() {
	for i := range w.hist.Unserved {
		if w.hist.Unserved[i].Open {
			w.hist.Unserved[i].Until = w.now
		}
	}
	for i := range w.hist.Deficits {
		if w.hist.Deficits[i].Open {
			w.hist.Deficits[i].Until = w.now
		}
	}
}

// delayBucket is the span of virtual time History.PeerDelays keeps one
// maximum for.
const delayBucket = 100 * time.Millisecond

// NotePeerDelay records that a message one node sent another at sent
// arrives at arrival.
func (h *History) NotePeerDelay(sent, arrival time.Duration) {
	i := int(sent / delayBucket)
	for len(h.PeerDelays) <= i {
		h.PeerDelays = append(h.PeerDelays, 0)
	}
	h.PeerDelays[i] = max(h.PeerDelays[i], arrival-sent)
}

// PeerDelayMax is the longest any message between nodes sent in [from,
// until] took to arrive (to the bucket: a message sent up to delayBucket
// before from may count). The network's links keep their messages in
// order, so a message drawn from a latency tail holds up every message
// behind it on its link: a link that carries a message every few
// milliseconds, with a tail drawn for a few percent of them, is slow for
// most of the time, and this maximum is about what each hop of a
// protocol round paid.
func (h *History) PeerDelayMax(from, until time.Duration) time.Duration {
	var longest time.Duration
	for i := max(0, int(from/delayBucket)); i < len(h.PeerDelays) && time.Duration(i)*delayBucket <= until; i++ {
		longest = max(longest, h.PeerDelays[i])
	}
	return longest
}
