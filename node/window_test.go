package node

import (
	"slices"
	"testing"

	"github.com/cairnmq/cairn/wire"
	"pgregory.net/rapid"
)

// TestWindowListActsAsASlice runs random pushes, pops and reads against
// a plain slice of the same entries, across block boundaries and from
// lists made over a decoded slice.
func TestWindowListActsAsASlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var model []recentID
		next := uint64(1)
		entry := func() recentID {
			e := newRecentID(wire.MessageID{Producer: 1, Seq: next}, next, int64(next), next%3 == 0)
			next++
			return e
		}
		var w windowList
		if rapid.Bool().Draw(t, "from a slice") {
			n := rapid.IntRange(0, 3*windowBlockLen).Draw(t, "decoded")
			for range n {
				model = append(model, entry())
			}
			w = windowListOf(slices.Clone(model))
		}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				for range rapid.IntRange(1, 2*windowBlockLen).Draw(t, "pushes") {
					e := entry()
					w.push(e)
					model = append(model, e)
				}
			case 1:
				for range rapid.IntRange(0, len(model)).Draw(t, "pops") {
					if got := w.popFront(); got != model[0] {
						t.Fatalf("popped %+v, want %+v", got, model[0])
					}
					model = model[1:]
				}
			case 2:
				i := rapid.IntRange(0, len(model)).Draw(t, "read from")
				var got []recentID
				for e := range w.from(i) {
					got = append(got, e)
				}
				if !slices.Equal(got, model[i:]) {
					t.Fatalf("from(%d) gave %d entries, want %d", i, len(got), len(model)-i)
				}
			}
			if w.len() != len(model) {
				t.Fatalf("list holds %d entries, want %d", w.len(), len(model))
			}
			if len(model) > 0 && w.front() != model[0] {
				t.Fatalf("front %+v, want %+v", w.front(), model[0])
			}
			var want windowSum
			for _, e := range model {
				want.add(e)
			}
			if w.sum() != want {
				t.Fatalf("the digest of the list differs from the slice's")
			}
			// Every block kept holds entries: one emptied is let go.
			for i, b := range w.blocks {
				if len(b) == 0 || i == 0 && w.head >= len(b) {
					t.Fatalf("block %d of %d holds no entries (head %d): emptied blocks are kept", i, len(w.blocks), w.head)
				}
			}
		}
		if !slices.Equal(w.slice(), model) {
			t.Fatal("the list's entries differ from the slice's")
		}
	})
}

// TestAWindowListOverASliceNeverWritesPastABlock checks that pushing onto
// a list made over a slice leaves the rest of that slice alone: blocks
// are capped at their own end.
func TestAWindowListOverASliceNeverWritesPastABlock(t *testing.T) {
	backing := make([]recentID, windowBlockLen+10)
	for i := range backing {
		backing[i] = newRecentID(wire.MessageID{}, uint64(i+1), 0, false)
	}
	w := windowListOf(backing[:windowBlockLen])
	w.push(newRecentID(wire.MessageID{}, 999999, 0, false))
	if backing[windowBlockLen].index() != windowBlockLen+1 {
		t.Fatalf("a push wrote into the slice past the list: entry %d is now %d", windowBlockLen, backing[windowBlockLen].index())
	}
	if w.len() != windowBlockLen+1 || len(w.blocks) != 2 {
		t.Fatalf("list of %d entries in %d blocks, want %d in 2", w.len(), len(w.blocks), windowBlockLen+1)
	}
}

// TestAQuietWindowTakesSmallBlocks checks that a list that never holds
// more than a few entries (a quiet queue's window) keeps small blocks: a
// node may hold thousands of such queues, and a full block each would be
// hundreds of megabytes.
func TestAQuietWindowTakesSmallBlocks(t *testing.T) {
	var w windowList
	for i := range 10000 {
		w.push(newRecentID(wire.MessageID{}, uint64(i), 0, false))
		if w.len() > 3 {
			w.popFront()
		}
		held := 0
		for _, b := range w.blocks {
			held += cap(b)
		}
		if held > 4*windowBlockMin {
			t.Fatalf("a list of %d entries keeps room for %d", w.len(), held)
		}
	}
}
