package fifoheap

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// item is a test entry: a unique key, and whether it is still live (an
// entry that left its owner's state waits in the queue until it reaches
// the head, as a settled message does).
type item struct {
	key  uint64
	live bool
}

func (a *item) Before(b *item) bool { return a.key < b.key }

// TestTheFirstEntryIsAlwaysTheSmallest drives a queue as its users do
// (entries pushed with keys above every key so far, some taken and pushed
// back with their old keys, some dropped while they wait, filters) and
// holds it, after every step, to a model that keeps the live keys in a
// sorted slice: the first live entry is always the smallest live key, and
// the queue holds every live entry exactly once.
func TestTheFirstEntryIsAlwaysTheSmallest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Queue[*item]
		var live, taken []*item // live: the model, by key
		next := uint64(0)
		remove := func(x *item) {
			i := slices.Index(live, x)
			if i < 0 {
				t.Fatalf("item %d is not in the model", x.key)
			}
			live = slices.Delete(live, i, i+1)
		}
		insert := func(x *item) {
			i, _ := slices.BinarySearchFunc(live, x, func(a, b *item) int {
				if a.Before(b) {
					return -1
				}
				return 1
			})
			live = slices.Insert(live, i, x)
		}
		first := func() *item { // drops entries that left, as users do
			for {
				x, ok := q.First()
				if !ok || x.live {
					return x
				}
				q.Pop()
			}
		}
		for range rapid.IntRange(1, 3000).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3: // an entry with a key above all
				next += rapid.Uint64Range(1, 3).Draw(t, "gap")
				x := &item{key: next, live: true}
				q.Push(x)
				insert(x)
			case 4, 5, 6: // take the first
				x := first()
				if len(live) == 0 {
					if x != nil {
						t.Fatalf("the queue gave %d with nothing live", x.key)
					}
					continue
				}
				if x != live[0] {
					t.Fatalf("the queue gave key %d, want %d", x.key, live[0].key)
				}
				q.Pop()
				x.live = false
				remove(x)
				taken = append(taken, x)
			case 7: // one taken comes back with its old key
				if len(taken) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(taken)-1).Draw(t, "back")
				x := taken[i]
				taken = slices.Delete(taken, i, i+1)
				x.live = true
				q.Push(x)
				insert(x)
			case 8: // a waiting entry leaves its owner's state
				if len(live) == 0 {
					continue
				}
				x := live[rapid.IntRange(0, len(live)-1).Draw(t, "drop")]
				x.live = false
				remove(x)
			case 9:
				q.Filter(func(x *item) bool { return x.live })
				if !q.InOrder() || q.Len() != len(live) {
					t.Fatalf("filtered to %d entries (in order: %v), %d live", q.Len(), q.InOrder(), len(live))
				}
			}
			if q.Len() < len(live) {
				t.Fatalf("the queue holds %d entries, fewer than the %d live", q.Len(), len(live))
			}
		}
		// Refilled from All in no order, a copy gives the same entries in
		// the same order as the queue drained.
		var c Queue[*item]
		for x := range q.All() {
			if x.live {
				c.Push(x)
			}
		}
		for _, want := range live {
			if x := first(); x != want {
				t.Fatalf("draining: got %+v, want key %d", x, want.key)
			}
			q.Pop()
			if x, _ := c.First(); x != want {
				t.Fatalf("the copy gives %+v, want key %d", x, want.key)
			}
			c.Pop()
		}
		if x := first(); x != nil || c.Len() != 0 {
			t.Fatalf("draining: %+v left after every live one, the copy holds %d", x, c.Len())
		}
	})
}
