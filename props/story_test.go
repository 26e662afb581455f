package props

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// TestAViolationTellsTheQueuesStory builds a history in which a replica
// reopens short after reporting records durable, with a recovery in
// between: the durability violation must quote the recovery that chose
// its source, the fault that broke the replica, and nothing of another
// queue or from after the violation; a node repeating itself is told
// once, with a count.
func TestAViolationTellsTheQueuesStory(t *testing.T) {
	s := time.Second
	h := &sim.History{
		NodeEvents: []sim.NodeEvent{
			{At: 1 * s, Node: 2, Name: event.QueueReported, Queue: "q", Value: 10},
			{At: 5 * s, Node: 2, Name: event.QueueOpen, Queue: "q", Value: 4},
		},
		Story: []sim.StoryEvent{
			{At: 2 * s, Node: 1, Queue: "q", Text: "recovery.stage q=q epoch=2 stage=seal outcome=ok witnesses=2 source=n3"},
			{At: 2 * s, Node: 1, Queue: "other", Text: "recovery.start q=other epoch=7"},
			{At: 3 * s, Node: 2, Queue: "q", Text: "fault: lost writes from index 5 on"},
			{At: 3 * s, Node: 3, Queue: "q", Text: "queue.refused-truncation q=q epoch=2"},
			{At: 4 * s, Node: 3, Queue: "q", Text: "queue.refused-truncation q=q epoch=2"},
			{At: 6 * s, Node: 1, Queue: "q", Text: "queue.active q=q epoch=3"},
		},
	}
	vs := checkDurability(h)
	if len(vs) != 1 {
		t.Fatalf("%d violations, want the one reopened replica: %v", len(vs), vs)
	}
	got := vs[0].Detail
	for _, want := range []string{
		"story of q from 0s to 5s:",
		"2s           n1 recovery.stage q=q epoch=2 stage=seal outcome=ok witnesses=2 source=n3",
		"3s           n2 fault: lost writes from index 5 on",
		"n3 queue.refused-truncation q=q epoch=2 (and 1 more times until 4s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the violation does not tell %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"other", string(event.QueueActive)} {
		if strings.Contains(got, unwanted) {
			t.Errorf("the violation tells %q, outside its queue or window:\n%s", unwanted, got)
		}
	}
}

// TestALongStoryKeepsBothEnds checks that a story longer than twice
// storyHalf keeps its first and last storyHalf lines and says how many
// it left out.
func TestALongStoryKeepsBothEnds(t *testing.T) {
	h := &sim.History{}
	const n = 2*storyHalf + 5
	for i := range n {
		h.Story = append(h.Story, sim.StoryEvent{At: time.Duration(i) * time.Millisecond, Node: 1, Queue: "q", Text: fmt.Sprintf("step %d", i)})
	}
	got := queueStory(h, "q", 0, storyEnd)
	var told []string
	for _, line := range strings.Split(got, "\n") {
		if _, step, ok := strings.Cut(line, " n1 step "); ok {
			told = append(told, step)
		}
	}
	want := []string{}
	for i := range n {
		if i < storyHalf || i >= n-storyHalf {
			want = append(want, fmt.Sprint(i))
		}
	}
	if strings.Join(told, ",") != strings.Join(want, ",") || !strings.Contains(got, "... 5 more ...") {
		t.Fatalf("story of %d steps told steps %v, want %v and a note of the 5 left out:\n%s", n, told, want, got)
	}
}
