package live

import (
	"cmp"
	"container/list"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/status"
)

// Bounds on what the timeline remembers. The dashboard draws the last
// few attempts of each queue and the marks around them; older history is
// in the logs and the recovery histograms.
const (
	// attemptsPerQueue is how many recovery attempts each queue keeps.
	attemptsPerQueue = 8
	// maxTimelineQueues is how many queues keep attempts; a queue
	// recovering for the first time once the table is full pushes out the
	// queue whose last attempt began longest ago.
	maxTimelineQueues = 256
	// maxMarks is how many detector verdicts, elections and plans the
	// node keeps, newest last.
	maxMarks = 128
)

// timeline keeps the latest recovery attempts of each queue, stage by
// stage, and the moments around them (suspicions, elections, plans) for
// the dashboard. The node's goroutine writes it as events arrive; HTTP
// handlers read it, hence the lock. Every part is a bounded ring, so its
// memory does not grow with uptime or with the number of queues.
type timeline struct {
	mu   sync.Mutex
	self uint32
	// byQueue finds a queue's ring; order lists the rings from the one
	// whose latest attempt began longest ago to the newest.
	byQueue map[string]*list.Element
	order   *list.List
	marks   []status.Mark // oldest first, at most maxMarks
}

// attemptRing is one queue's latest attempts, oldest first.
type attemptRing struct {
	queue    string
	attempts []*status.Recovery
}

func newTimeline(self uint32) *timeline {
	return &timeline{self: self, byQueue: make(map[string]*list.Element), order: list.New()}
}

// observe folds one node event, stamped with the runtime's clock, into
// the timeline.
func (t *timeline) observe(now time.Time, ev event.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Name {
	case event.RecoveryStart:
		t.startAttempt(now, ev)
	case event.RecoveryStage:
		t.endStage(now, ev)
	case event.RecoveryDone:
		if a := t.open(ev.Queue(), ev.Epoch()); a != nil {
			a.RPCs, a.Bytes, a.Syncs = ev.RPCs(), ev.Bytes(), ev.Syncs()
			endAttempt(now, a, outcomeOK, "")
		}
	case event.QueueActive:
		if a := t.open(ev.Queue(), ev.Epoch()); a != nil {
			endAttempt(now, a, outcomeOK, "")
		}
	case event.RecoveryAbandoned:
		if a := t.open(ev.Queue(), ev.Epoch()); a != nil {
			endAttempt(now, a, outcomeAbandoned, ev.Why())
		}
	case event.QueueStale:
		t.endQueue(now, ev.Queue(), outcomeStale)
	case event.QueueFenced:
		t.endQueue(now, ev.Queue(), outcomeFenced)
	case event.QueueRetired:
		t.endQueue(now, ev.Queue(), outcomeRetired)
	default:
		if m, ok := markOf(t.self, now, ev); ok {
			t.addMark(m)
		}
	}
}

// startAttempt begins a new attempt of the event's queue. An attempt of
// the same queue still open ended without a word of its own: the node
// began again, which is a retry.
func (t *timeline) startAttempt(now time.Time, ev event.Event) {
	ring := t.ring(ev.Queue())
	if n := len(ring.attempts); n > 0 && ring.attempts[n-1].End.IsZero() {
		endAttempt(now, ring.attempts[n-1], stageRetry, "")
	}
	if len(ring.attempts) == attemptsPerQueue {
		ring.attempts = slices.Delete(ring.attempts, 0, 1)
	}
	ring.attempts = append(ring.attempts, &status.Recovery{
		Queue: ev.Queue(), Epoch: ev.Epoch(), Attempt: ev.Attempt(), Node: t.self, Start: now, Stages: []status.Stage{},
	})
}

// endStage records a stage of the open attempt; a stage that ended in a
// retry ends its attempt.
func (t *timeline) endStage(now time.Time, ev event.Event) {
	a := t.open(ev.Queue(), ev.Epoch())
	if a == nil {
		return
	}
	if len(a.Stages) < maxSummaryStages {
		took := ev.Elapsed()
		a.Stages = append(a.Stages, status.Stage{Name: ev.Stage(), Outcome: ev.Outcome(), Start: now.Add(-took), TookSeconds: took.Seconds()})
	}
	if ev.Outcome() == stageRetry {
		endAttempt(now, a, stageRetry, ev.Why())
	}
}

// endQueue ends q's open attempt, whatever its epoch: the replica that
// ran it stopped.
func (t *timeline) endQueue(now time.Time, q, outcome string) {
	el := t.byQueue[q]
	if el == nil {
		return
	}
	ring := el.Value.(*attemptRing)
	if n := len(ring.attempts); n > 0 && ring.attempts[n-1].End.IsZero() {
		endAttempt(now, ring.attempts[n-1], outcome, "")
	}
}

// endAttempt closes a with outcome.
func endAttempt(now time.Time, a *status.Recovery, outcome, why string) {
	a.End, a.Outcome = now, outcome
	if why != "" {
		a.Why = why
	}
}

// open returns q's open attempt into epoch, or nil.
func (t *timeline) open(q string, epoch uint64) *status.Recovery {
	el := t.byQueue[q]
	if el == nil {
		return nil
	}
	ring := el.Value.(*attemptRing)
	if n := len(ring.attempts); n > 0 {
		if a := ring.attempts[n-1]; a.End.IsZero() && a.Epoch == epoch {
			return a
		}
	}
	return nil
}

// ring returns q's ring, made newest, creating it (and pushing out the
// stalest ring if the table is full) if q has none.
func (t *timeline) ring(q string) *attemptRing {
	if el := t.byQueue[q]; el != nil {
		t.order.MoveToBack(el)
		return el.Value.(*attemptRing)
	}
	for t.order.Len() >= maxTimelineQueues {
		front := t.order.Front()
		delete(t.byQueue, front.Value.(*attemptRing).queue)
		t.order.Remove(front)
	}
	ring := &attemptRing{queue: q}
	t.byQueue[q] = t.order.PushBack(ring)
	return ring
}

// addMark appends m, dropping the oldest mark when the ring is full.
func (t *timeline) addMark(m status.Mark) {
	if len(t.marks) == maxMarks {
		t.marks = slices.Delete(t.marks, 0, 1)
	}
	t.marks = append(t.marks, m)
}

// markOf returns the mark ev makes on the timeline, if it makes one.
func markOf(self uint32, now time.Time, ev event.Event) (status.Mark, bool) {
	m := status.Mark{Time: now, By: self}
	switch ev.Name {
	case event.DetectSuspect:
		m.Kind, m.Node = status.MarkSuspect, ev.Node()
	case event.DetectConfirm:
		m.Kind, m.Node = status.MarkConfirm, ev.Node()
	case event.DetectRecovered:
		m.Kind, m.Node = status.MarkRecovered, ev.Node()
	case event.MetaLeader:
		m.Kind, m.Node, m.Term = status.MarkLeader, ev.Node(), ev.Term()
	case event.MetaCampaign:
		m.Kind, m.Node, m.Term = status.MarkCampaign, self, ev.Term()
	case event.MetaPlanRecovery:
		m.Kind, m.Node, m.From, m.Queue, m.Epoch = status.MarkPlan, ev.ToNode(), ev.FromNode(), ev.Queue(), ev.Epoch()
	case event.MetaPlanReplace:
		m.Kind, m.Node, m.From, m.Queue, m.Epoch = status.MarkReplace, ev.In(), ev.Out(), ev.Queue(), ev.Epoch()
	default:
		return status.Mark{}, false
	}
	return m, true
}

// snapshot copies the timeline: every queue's attempts, by queue name
// and then oldest first, and the marks, oldest first.
func (t *timeline) snapshot() ([]status.Recovery, []status.Mark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []status.Recovery
	for _, el := range t.byQueue {
		for _, a := range el.Value.(*attemptRing).attempts {
			c := *a
			c.Stages = slices.Clone(a.Stages)
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(x, y status.Recovery) int {
		return cmp.Or(strings.Compare(x.Queue, y.Queue), x.Start.Compare(y.Start))
	})
	return out, slices.Clone(t.marks)
}
