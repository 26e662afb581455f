package status

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// Cluster is the whole cluster as one node gathered it from every
// member's status: the document the dashboard draws and /dashboard.json
// serves. Build makes it from the readings; it is a pure function of
// them, so tools can build the same view.
type Cluster struct {
	// Self is the node that gathered the readings, and At when.
	Self uint32    `json:"self"`
	At   time.Time `json:"at"`
	// MetaLeader is the metadata leader of the highest term any node
	// reported (zero while none knows one), and MetaTerm that term.
	MetaLeader uint32 `json:"meta_leader"`
	MetaTerm   uint64 `json:"meta_term"`
	// Nodes lists every member, in ID order, read or not.
	Nodes []ClusterNode `json:"nodes"`
	// Queues lists every queue any node reported, by name.
	Queues []ClusterQueue `json:"queues"`
	// Marks are the moments every node reported (detector verdicts,
	// elections, plans), oldest first, an election once however many
	// nodes saw it.
	Marks []Mark `json:"marks"`
}

// ClusterNode is one member as the cluster view shows it.
type ClusterNode struct {
	ID       uint32 `json:"id"`
	HTTPAddr string `json:"http_addr,omitempty"`
	// State is "serving", "starting" or "draining" for a node that
	// answered, or, for one that did not, how it failed (ReachState);
	// Error then says why.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// WaitSeconds is how long its reading took.
	WaitSeconds float64 `json:"wait_seconds"`
	// MetaRole is "leader" or "follower" in the metadata group, as the
	// node itself knows it, and MetaTerm the term it knows; "" when it
	// did not answer or knows no leader.
	MetaRole string `json:"meta_role,omitempty"`
	MetaTerm uint64 `json:"meta_term,omitempty"`
	// Clients counts its client connections; PeersUp of Peers its peer
	// links are up.
	Clients int `json:"clients"`
	PeersUp int `json:"peers_up"`
	Peers   int `json:"peers"`
	// Owns counts the queues it serves as owner.
	Owns int   `json:"owns"`
	Host *Host `json:"host,omitempty"`
}

// ClusterQueue is one queue as the cluster view shows it. Its metadata
// (state, owner, epoch, replicas) and its figures come from the serving
// owner's view when the owner answered, otherwise from the answering
// node with the newest epoch, and Serving says which.
type ClusterQueue struct {
	Name     string `json:"name"`
	State    string `json:"queue_state"`
	Owner    uint32 `json:"owner"`
	Epoch    uint64 `json:"epoch"`
	Serving  bool   `json:"serving"`
	ViewFrom uint32 `json:"view_from"`
	// Replicas lists the replica set, placement owner first, each with
	// how far it is behind the owner's last index.
	Replicas []ReplicaLag `json:"replicas"`
	// Depth is the backlog, known only from a serving owner.
	Depth *Depth `json:"depth,omitempty"`
	// Rates are per second, over the time since the previous gathering;
	// nil for the first one.
	Rates *Rates `json:"rates,omitempty"`
	// LastIndex and Commit are the owner's; the checkpoint and retained
	// bytes those of the replica the view comes from.
	LastIndex            uint64  `json:"last_index"`
	Commit               uint64  `json:"commit"`
	RetainedBytes        int64   `json:"retained_bytes"`
	CheckpointIndex      uint64  `json:"checkpoint_index"`
	CertifiedIndex       uint64  `json:"certified_index"`
	CheckpointAgeSeconds float64 `json:"checkpoint_age_seconds"`
	Fenced               string  `json:"fenced,omitempty"`
	// DedupWindowSeconds is the queue's deduplication window, and
	// DedupDefault says it is the default of the node the view comes
	// from, the queue having been created without one.
	DedupWindowSeconds float64 `json:"dedup_window_seconds"`
	DedupDefault       bool    `json:"dedup_window_default,omitempty"`
	// DeadLetter and MaxDeliveries are the queue's delivery limit, if
	// it has one.
	DeadLetter    string `json:"dead_letter,omitempty"`
	MaxDeliveries uint32 `json:"max_deliveries,omitempty"`
	// Recoveries are the queue's latest recovery attempts, whichever node
	// ran them, oldest first, at most RecoveriesShown.
	Recoveries []Recovery `json:"recoveries"`
}

// ReplicaLag is one replica of a queue: the node, its role, its last
// index and how many records it is behind the owner's: by what the
// serving owner says the replica acknowledged, or else by the replica's
// own last index; nil when neither is known (no owner serves, or the
// owner knows nothing of it and its node did not answer).
type ReplicaLag struct {
	Node      uint32  `json:"node"`
	Role      string  `json:"role"`
	LastIndex *uint64 `json:"last_index,omitempty"`
	Lag       *uint64 `json:"lag,omitempty"`
	Fenced    string  `json:"fenced,omitempty"`
}

// Rates are a queue's traffic per second, summed over the nodes that
// answered both gatherings.
type Rates struct {
	Publish float64 `json:"publish_per_second"`
	Deliver float64 `json:"deliver_per_second"`
	Ack     float64 `json:"ack_per_second"`
	Nack    float64 `json:"nack_per_second"`
}

// Bounds on what a cluster view lists.
const (
	// RecoveriesShown is how many of each queue's attempts the view keeps.
	RecoveriesShown = 8
	// MarksShown is how many marks the view keeps, the newest.
	MarksShown = 200
)

// Sample is the traffic counters of one gathering, kept to compute the
// next one's rates.
type Sample struct {
	At     time.Time
	counts map[sampleKey]Traffic
}

type sampleKey struct {
	node  uint32
	queue string
}

// Build makes the cluster view from readings taken at at by node self.
// prev is the previous gathering's sample (nil for none), from which the
// rates are computed; the returned sample is for the next call.
func Build(self uint32, at time.Time, readings []Reading, prev *Sample) (*Cluster, *Sample) {
	c := &Cluster{Self: self, At: at, Nodes: []ClusterNode{}, Queues: []ClusterQueue{}, Marks: []Mark{}}
	for _, r := range readings {
		c.Nodes = append(c.Nodes, clusterNode(r))
		if s := r.Status; s != nil && s.MetaLeader != 0 && s.MetaTerm > c.MetaTerm {
			c.MetaLeader, c.MetaTerm = s.MetaLeader, s.MetaTerm
		}
	}
	slices.SortFunc(c.Nodes, func(x, y ClusterNode) int { return cmp.Compare(x.ID, y.ID) })
	sample := &Sample{At: at, counts: trafficOf(readings)}
	c.Marks = mergeMarks(readings)
	byName, recoveries := queueViews(readings), recoveriesByQueue(readings)
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		q := clusterQueue(name, byName[name], recoveries[name], prev, sample)
		for i := range q.Recoveries {
			q.Recoveries[i].Lead = leadStages(q.Recoveries[i], c.Marks)
		}
		c.Queues = append(c.Queues, q)
	}
	for i := range c.Nodes {
		for _, q := range c.Queues {
			if q.Serving && q.Owner == c.Nodes[i].ID {
				c.Nodes[i].Owns++
			}
		}
	}
	return c, sample
}

// clusterNode summarises one reading.
func clusterNode(r Reading) ClusterNode {
	n := ClusterNode{ID: r.ID, HTTPAddr: r.HTTPAddr, WaitSeconds: r.Took.Seconds()}
	s := r.Status
	if s == nil {
		n.State = ReachState(r.Err)
		if r.Err != nil {
			n.Error = r.Err.Error()
		}
		return n
	}
	n.State = "starting"
	switch {
	case s.Draining:
		n.State = "draining"
	case s.Started:
		n.State = "serving"
	}
	switch {
	case s.MetaLeader == 0:
	case s.MetaLeader == s.ID:
		n.MetaRole = "leader"
	default:
		n.MetaRole = "follower"
	}
	n.MetaTerm, n.Clients, n.Peers, n.Host = s.MetaTerm, s.Clients, len(s.Peers), s.Host
	for _, p := range s.Peers {
		if p.Connected {
			n.PeersUp++
		}
	}
	return n
}

// nodeQueue is one node's view of a queue.
type nodeQueue struct {
	node uint32
	q    Queue
}

// queueViews groups every answering node's views by queue name.
func queueViews(readings []Reading) map[string][]nodeQueue {
	out := map[string][]nodeQueue{}
	for _, r := range readings {
		if r.Status == nil {
			continue
		}
		for _, q := range r.Status.Queues {
			out[q.Name] = append(out[q.Name], nodeQueue{node: r.Status.ID, q: q})
		}
	}
	return out
}

// primary picks the view a queue's row is drawn from: the serving
// owner's, else the one with the newest epoch, else the lowest node's.
func primary(views []nodeQueue) nodeQueue {
	best := views[0]
	for _, v := range views[1:] {
		switch {
		case v.q.Active && !best.q.Active,
			v.q.Active == best.q.Active && v.q.Epoch > best.q.Epoch,
			v.q.Active == best.q.Active && v.q.Epoch == best.q.Epoch && v.node < best.node:
			best = v
		}
	}
	return best
}

// clusterQueue builds one queue's row from every node's view of it.
func clusterQueue(name string, views []nodeQueue, recoveries []Recovery, prev, cur *Sample) ClusterQueue {
	p := primary(views)
	q := ClusterQueue{
		Name: name, State: p.q.State, Owner: p.q.Owner, Epoch: p.q.Epoch, Serving: p.q.Active, ViewFrom: p.node,
		LastIndex: p.q.LastIndex, Commit: p.q.Commit, RetainedBytes: p.q.RetainedBytes, Fenced: p.q.Fenced,
		CheckpointIndex: p.q.CheckpointIndex, CertifiedIndex: p.q.CertifiedIndex, CheckpointAgeSeconds: p.q.CheckpointAgeSeconds,
		Depth: p.q.Depth, Replicas: []ReplicaLag{}, Recoveries: latestRecoveries(recoveries),
		DedupWindowSeconds: p.q.DedupWindowSeconds, DedupDefault: p.q.DedupDefault,
		DeadLetter: p.q.DeadLetter, MaxDeliveries: p.q.MaxDeliveries,
	}
	for _, id := range p.q.Replicas {
		q.Replicas = append(q.Replicas, replicaLag(id, views, p))
	}
	q.Rates = rates(name, views, prev, cur)
	return q
}

// replicaLag describes replica id of a queue against the primary view.
func replicaLag(id uint32, views []nodeQueue, p nodeQueue) ReplicaLag {
	r := ReplicaLag{Node: id, Role: "unknown"}
	for _, v := range views {
		if v.node != id {
			continue
		}
		last := v.q.LastIndex
		r.Role, r.LastIndex, r.Fenced = v.q.Role, &last, v.q.Fenced
		switch {
		case v.q.NoQuorum:
			r.Role = "owner, no quorum"
		case v.q.Resting:
			r.Role = "owner, resting"
		}
		if p.q.Active {
			lag := p.q.LastIndex - min(last, p.q.LastIndex)
			r.Lag = &lag
		}
	}
	// The serving owner knows what each follower acknowledged durable,
	// which is the lag that matters for confirmation, and knows it even
	// of a follower whose node did not answer.
	if p.q.Active {
		for _, f := range p.q.Followers {
			if f.Node == id {
				lag := f.Lag(p.q.LastIndex)
				r.Lag = &lag
			}
		}
	}
	return r
}

// recoveriesByQueue groups every node's recovery attempts by queue.
func recoveriesByQueue(readings []Reading) map[string][]Recovery {
	out := map[string][]Recovery{}
	for _, r := range readings {
		if r.Status == nil {
			continue
		}
		for _, a := range r.Status.Recoveries {
			out[a.Queue] = append(out[a.Queue], a)
		}
	}
	return out
}

// latestRecoveries orders one queue's attempts by start and keeps the
// latest RecoveriesShown.
func latestRecoveries(all []Recovery) []Recovery {
	out := slices.Clone(all)
	slices.SortStableFunc(out, func(x, y Recovery) int {
		return cmp.Or(x.Start.Compare(y.Start), cmp.Compare(x.Node, y.Node))
	})
	out = out[max(0, len(out)-RecoveriesShown):]
	if out == nil {
		out = []Recovery{}
	}
	return out
}

// mergeMarks lists every node's marks by time. An election is reported
// by every node that learns of it; it is kept once, at the earliest
// report.
func mergeMarks(readings []Reading) []Mark {
	out := []Mark{}
	for _, r := range readings {
		if r.Status != nil {
			out = append(out, r.Status.Marks...)
		}
	}
	slices.SortStableFunc(out, func(x, y Mark) int {
		return cmp.Or(x.Time.Compare(y.Time), cmp.Compare(x.By, y.By), strings.Compare(x.Kind, y.Kind))
	})
	type election struct {
		term uint64
		node uint32
	}
	seen := map[election]bool{}
	kept := out[:0]
	for _, m := range out {
		if m.Kind == MarkLeader {
			e := election{m.Term, m.Node}
			if seen[e] {
				continue
			}
			seen[e] = true
		}
		kept = append(kept, m)
	}
	return kept[max(0, len(kept)-MarksShown):]
}

// trafficOf collects every answering node's traffic counters.
func trafficOf(readings []Reading) map[sampleKey]Traffic {
	out := map[sampleKey]Traffic{}
	for _, r := range readings {
		if r.Status == nil {
			continue
		}
		for _, q := range r.Status.Queues {
			if q.Traffic != nil {
				out[sampleKey{r.Status.ID, q.Name}] = *q.Traffic
			}
		}
	}
	return out
}

// minRateWindow is the shortest interval rates are computed over: two
// gatherings closer than this say little.
const minRateWindow = 100 * time.Millisecond

// rates computes a queue's rates between two samples, over the nodes
// that report it in both and whose counters did not go back (a node that
// restarted counts from zero again). It returns nil when no node
// qualifies.
func rates(name string, views []nodeQueue, prev, cur *Sample) *Rates {
	if prev == nil || cur.At.Sub(prev.At) < minRateWindow {
		return nil
	}
	sec := cur.At.Sub(prev.At).Seconds()
	var r *Rates
	for _, v := range views {
		k := sampleKey{v.node, name}
		now, okNow := cur.counts[k]
		before, okBefore := prev.counts[k]
		if !okNow || !okBefore || now.Published < before.Published || now.Delivered < before.Delivered ||
			now.Acked < before.Acked || now.Nacked < before.Nacked {
			continue
		}
		if r == nil {
			r = &Rates{}
		}
		r.Publish += float64(now.Published-before.Published) / sec
		r.Deliver += float64(now.Delivered-before.Delivered) / sec
		r.Ack += float64(now.Acked-before.Acked) / sec
		r.Nack += float64(now.Nacked-before.Nacked) / sec
	}
	return r
}
