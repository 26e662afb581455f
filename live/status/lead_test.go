package status

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The stages before a first attempt come from the marks: the first
// suspicion of the old owner since it was last heard from, its
// confirmation, the leader's plan for the epoch and the attempt's start.
// Marks about other nodes, other queues or older stories do not count,
// and a retry has no lead of its own.
func TestLeadStages(t *testing.T) {
	t0 := time.Unix(9000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	marks := []Mark{
		{Time: at(0), Kind: MarkSuspect, Node: 3, By: 1},
		{Time: at(50), Kind: MarkRecovered, Node: 3, By: 1},
		{Time: at(100), Kind: MarkSuspect, Node: 2, By: 1},
		{Time: at(200), Kind: MarkSuspect, Node: 3, By: 2},
		{Time: at(210), Kind: MarkSuspect, Node: 3, By: 1},
		{Time: at(470), Kind: MarkConfirm, Node: 3, By: 1},
		{Time: at(480), Kind: MarkPlan, Queue: "other", Epoch: 5, Node: 1, From: 3},
		{Time: at(490), Kind: MarkPlan, Queue: "orders", Epoch: 5, Node: 2, From: 3},
		{Time: at(495), Kind: MarkPlan, Queue: "orders", Epoch: 5, Node: 2, From: 3},
	}
	first := Recovery{Queue: "orders", Epoch: 5, Attempt: 1, Start: at(500)}
	var got []string
	for _, s := range leadStages(first, marks) {
		got = append(got, fmt.Sprintf("%s@%d+%.0f", s.Name, s.Start.Sub(t0).Milliseconds(), s.TookSeconds*1e3))
	}
	if d := cmp.Diff([]string{"observation@200+270", "plan@470+20", "dispatch@490+10"}, got); d != "" {
		t.Errorf("lead stages (-want +got):\n%s", d)
	}
	retry := first
	retry.Attempt = 2
	if lead := leadStages(retry, marks); lead != nil {
		t.Errorf("a retry has lead stages %+v", lead)
	}
	unplanned := first
	unplanned.Epoch = 6
	if lead := leadStages(unplanned, marks); lead != nil {
		t.Errorf("an attempt with no plan has lead stages %+v", lead)
	}
}
