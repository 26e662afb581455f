package node

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestReadyQueueGivesTheSmallestKeyFirst drives a readyQueue as a queue
// state does (messages made ready with keys above every key so far, some
// taken and put back with their old keys, some settled while they wait,
// compactions) and holds it, after every step, to a model that keeps the
// live keys in a sorted slice: the first live entry is always the
// smallest live key, and the queue holds every live entry exactly once.
func TestReadyQueueGivesTheSmallestKeyFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q readyQueue
		var live []*message // the model: live entries by key
		var taken []*message
		next := uint64(0)
		remove := func(m *message) {
			i := slices.Index(live, m)
			if i < 0 {
				t.Fatalf("message %d is not in the model", m.index)
			}
			live = slices.Delete(live, i, i+1)
		}
		insert := func(m *message) {
			i, _ := slices.BinarySearchFunc(live, m, func(a, b *message) int {
				if a.key.less(b.key) {
					return -1
				}
				return 1
			})
			live = slices.Insert(live, i, m)
		}
		first := func() *message {
			for {
				m, _ := q.first()
				if m == nil || m.inHeap {
					return m
				}
				q.pop()
			}
		}
		steps := rapid.IntRange(1, 3000).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3: // a publish or a promote: a key above all
				next += rapid.Uint64Range(1, 3).Draw(t, "gap")
				m := &message{index: next, key: readyKey{at: next, index: next}, inHeap: true}
				q.push(m)
				insert(m)
			case 4, 5, 6: // a delivery takes the first
				m := first()
				if len(live) == 0 {
					if m != nil {
						t.Fatalf("the queue gave message %d with nothing live", m.index)
					}
					continue
				}
				if m != live[0] {
					t.Fatalf("the queue gave key %+v, want %+v", m.key, live[0].key)
				}
				q.pop()
				m.inHeap = false
				remove(m)
				taken = append(taken, m)
			case 7: // a nack or an expiry puts a taken one back
				if len(taken) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(taken)-1).Draw(t, "back")
				m := taken[i]
				taken = slices.Delete(taken, i, i+1)
				m.inHeap = true
				q.push(m)
				insert(m)
			case 8: // a settle of a waiting message, left for later
				if len(live) == 0 {
					continue
				}
				m := live[rapid.IntRange(0, len(live)-1).Draw(t, "settle")]
				m.inHeap = false
				remove(m)
			case 9:
				q.compact(func(m *message) bool { return m.inHeap })
				q.checkOrder("q")
				if q.len() != len(live) {
					t.Fatalf("compacted to %d entries, %d live", q.len(), len(live))
				}
			}
			if q.len() < len(live) {
				t.Fatalf("the queue holds %d entries, fewer than the %d live", q.len(), len(live))
			}
		}
		// Drained, the queue gives every live entry once, in key order;
		// a copy gives the same.
		c := q.copyMapped(func(m *message) bool { return m.inHeap }, func(m *message) *message { return m })
		for _, want := range live {
			if m := first(); m != want {
				t.Fatalf("draining: got %+v, want key %+v", m, want.key)
			}
			q.pop()
		}
		if m := first(); m != nil {
			t.Fatalf("draining: message %d left after every live one", m.index)
		}
		if c.len() != len(live) {
			t.Fatalf("the copy holds %d entries, want the %d live", c.len(), len(live))
		}
		for _, want := range live {
			if m, _ := c.first(); m != want {
				t.Fatalf("the copy gives %+v, want key %+v", m, want.key)
			}
			c.pop()
		}
	})
}

// BenchmarkReadyDrain makes 200,000 messages ready in publish order and
// takes them all, as an owner draining a backlog does: the cost of one
// message's way through the ready queue.
func BenchmarkReadyDrain(b *testing.B) {
	const backlog = 200_000
	msgs := make([]message, backlog)
	for b.Loop() {
		s := newQueueState("orders")
		for i := range msgs {
			msgs[i] = message{index: uint64(i + 1), key: readyKey{at: uint64(i + 1), index: uint64(i + 1)}}
			s.pushReady(&msgs[i])
		}
		for range backlog {
			if s.popReady() == nil {
				b.Fatal("the ready queue ran dry before the backlog did")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*backlog), "ns/msg")
}
