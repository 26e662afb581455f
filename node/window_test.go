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
			e := recentID{id: wire.MessageID{Producer: 1, Seq: next}, index: next, at: int64(next), settled: next%3 == 0}
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
			if w.sum() != sumOf(model) {
				t.Fatalf("the digest of the list differs from the slice's")
			}
			// The first and last blocks may be part full, and so may the
			// tail block of the decoded slice.
			if len(w.blocks) > len(model)/windowBlockLen+3 {
				t.Fatalf("%d entries in %d blocks: emptied blocks are kept", len(model), len(w.blocks))
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
		backing[i] = recentID{index: uint64(i + 1)}
	}
	w := windowListOf(backing[:windowBlockLen])
	w.push(recentID{index: 999999})
	if backing[windowBlockLen].index != windowBlockLen+1 {
		t.Fatalf("a push wrote into the slice past the list: entry %d is now %d", windowBlockLen, backing[windowBlockLen].index)
	}
	if w.len() != windowBlockLen+1 || len(w.blocks) != 2 {
		t.Fatalf("list of %d entries in %d blocks, want %d in 2", w.len(), len(w.blocks), windowBlockLen+1)
	}
}
