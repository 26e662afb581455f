package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// threeNodes returns readings of a three-node cluster at t: n1 owns
// "orders" (last index 100) with n2 behind by 10, and n3 did not answer.
// published is n1's publish counter for the queue.
func threeNodes(t0 time.Time, published uint64) []Reading {
	orders := func(role string, last uint64) Queue {
		q := Queue{Name: "orders", State: "active", Role: role, Owner: 1, Epoch: 4, Replicas: []uint32{1, 2, 3}, LastIndex: last}
		if role == "owner" {
			q.Active, q.Commit = true, last
			q.Depth = &Depth{Ready: 7, Leased: 2, Consumers: 1}
			q.Traffic = &Traffic{Published: published, Delivered: published / 2}
		}
		return q
	}
	rec := Recovery{Queue: "orders", Epoch: 4, Attempt: 1, Node: 1, Start: t0.Add(-time.Second), End: t0.Add(-900 * time.Millisecond), Outcome: "ok",
		Stages: []Stage{{Name: "seal", Outcome: "ok", Start: t0.Add(-time.Second), TookSeconds: 0.05}}}
	leader := Mark{Time: t0.Add(-2 * time.Second), Kind: MarkLeader, Node: 2, Term: 7}
	return []Reading{
		{Target: Target{ID: 1, HTTPAddr: "h1"}, Status: &Node{ID: 1, Started: true, MetaLeader: 2, MetaTerm: 7, Clients: 3,
			Peers: []Peer{{ID: 2, Connected: true}, {ID: 3}}, Queues: []Queue{orders("owner", 100)},
			Recoveries: []Recovery{rec}, Marks: []Mark{leader, {Time: t0.Add(-1500 * time.Millisecond), Kind: MarkSuspect, By: 1, Node: 3}}}},
		{Target: Target{ID: 2, HTTPAddr: "h2"}, Status: &Node{ID: 2, Started: true, MetaLeader: 2, MetaTerm: 7,
			Queues: []Queue{orders("follower", 90)}, Marks: []Mark{{Time: leader.Time.Add(time.Millisecond), Kind: MarkLeader, Node: 2, Term: 7, By: 2}}}},
		{Target: Target{ID: 3, HTTPAddr: "h3"}, Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED), Took: 3 * time.Millisecond},
	}
}

// The cluster view draws a queue from its serving owner, gives each
// replica its lag behind the owner (unknown for a node that did not
// answer), says which node could not be read and how, keeps an election
// once however many nodes report it, and derives rates from two
// gatherings.
func TestBuildClusterView(t *testing.T) {
	t0 := time.Unix(5000, 0)
	first, sample := Build(1, t0, threeNodes(t0, 1000), nil)
	if first.Queues[0].Rates != nil {
		t.Errorf("rates %+v from a single gathering", first.Queues[0].Rates)
	}
	c, _ := Build(1, t0.Add(2*time.Second), threeNodes(t0, 1600), sample)

	if c.MetaLeader != 2 || c.MetaTerm != 7 {
		t.Errorf("metadata leader n%d term %d, want n2 term 7", c.MetaLeader, c.MetaTerm)
	}
	var states []string
	for _, n := range c.Nodes {
		states = append(states, fmt.Sprintf("n%d:%s:%s", n.ID, n.State, n.MetaRole))
	}
	if d := cmp.Diff([]string{"n1:serving:follower", "n2:serving:leader", "n3:down:"}, states); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if c.Nodes[2].Error == "" || c.Nodes[0].Owns != 1 || c.Nodes[0].PeersUp != 1 || c.Nodes[0].Peers != 2 {
		t.Errorf("nodes %+v: n3 needs its error, n1 owns 1 queue with 1 of 2 peers up", c.Nodes)
	}
	if len(c.Queues) != 1 {
		t.Fatalf("%d queues, want 1", len(c.Queues))
	}
	q := c.Queues[0]
	if !q.Serving || q.ViewFrom != 1 || q.Owner != 1 || q.Epoch != 4 || q.Depth == nil || q.Depth.Ready != 7 {
		t.Errorf("queue %+v: want the serving owner n1's view with its depth", q)
	}
	var lags []string
	for _, r := range q.Replicas {
		lag := "?"
		if r.Lag != nil {
			lag = fmt.Sprint(*r.Lag)
		}
		lags = append(lags, fmt.Sprintf("n%d:%s:%s", r.Node, r.Role, lag))
	}
	if d := cmp.Diff([]string{"n1:owner:0", "n2:follower:10", "n3:unknown:?"}, lags); d != "" {
		t.Errorf("replica lags (-want +got):\n%s", d)
	}
	if q.Rates == nil || q.Rates.Publish != 300 || q.Rates.Deliver != 150 {
		t.Errorf("rates %+v, want 300 publishes and 150 deliveries a second", q.Rates)
	}
	if len(q.Recoveries) != 1 || q.Recoveries[0].Stages[0].Name != "seal" {
		t.Errorf("recoveries %+v, want n1's one attempt", q.Recoveries)
	}
	var kinds []string
	for _, m := range c.Marks {
		kinds = append(kinds, m.Kind)
	}
	if d := cmp.Diff([]string{MarkLeader, MarkSuspect}, kinds); d != "" {
		t.Errorf("marks (-want +got):\n%s", d)
	}
}

// A node whose counters went back (it restarted) gives no rate rather
// than a negative one, and the document has every list, empty or not, so
// a page need not test for null.
func TestBuildClusterViewEdges(t *testing.T) {
	t0 := time.Unix(5000, 0)
	_, sample := Build(1, t0, threeNodes(t0, 1000), nil)
	c, _ := Build(1, t0.Add(time.Second), threeNodes(t0, 10), sample)
	if r := c.Queues[0].Rates; r != nil {
		t.Errorf("rates %+v after the counters went back, want none", r)
	}
	empty, _ := Build(1, t0, []Reading{{Target: Target{ID: 1}, Err: errors.New("refused")}}, nil)
	b, err := json.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	for _, k := range []string{"nodes", "queues", "marks"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("%s is %v in %s, want a list", k, doc[k], b)
		}
	}
}

// An owner that lost its quorum says so, and is not the queue's serving
// owner: its row shows it as such, and the queue reads as unserved.
func TestBuildClusterViewOwnerWithoutQuorum(t *testing.T) {
	t0 := time.Unix(5000, 0)
	readings := threeNodes(t0, 1000)
	q := &readings[0].Status.Queues[0]
	q.Active, q.NoQuorum = false, true
	c, _ := Build(1, t0, readings, nil)
	row := c.Queues[0]
	if row.Serving {
		t.Errorf("the queue reads as served by an owner without its quorum: %+v", row)
	}
	if got := row.Replicas[0].Role; got != "owner, no quorum" {
		t.Errorf("the cut-off owner's replica reads %q, want %q", got, "owner, no quorum")
	}
}
