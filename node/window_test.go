package node

import (
	"slices"
	"testing"

	"github.com/cairnmq/cairn/wire"
	"pgregory.net/rapid"
)

// TestWindowListActsAsASlice runs random pushes, pops and reads against
// a plain slice of the same entries, across block boundaries.
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
		if rapid.Bool().Draw(t, "filled first") {
			n := rapid.IntRange(0, 3*windowBlockLen).Draw(t, "decoded")
			for range n {
				model = append(model, entry())
			}
			w = listOf(model)
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
			// Every block kept holds entries of the list: one emptied
			// is let go.
			for i, b := range w.blocks {
				if len(b.entries) == 0 || i == 0 && w.first >= b.start+uint64(len(b.entries)) {
					t.Fatalf("block %d of %d holds no entries (first %d, block from %d): emptied blocks are kept", i, len(w.blocks), w.first, b.start)
				}
			}
		}
		if !slices.Equal(w.slice(), model) {
			t.Fatal("the list's entries differ from the slice's")
		}
	})
}

// listOf makes a window list of entries.
func listOf(entries []recentID) windowList {
	var w windowList
	for _, e := range entries {
		w.push(e)
	}
	return w
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
			held += cap(b.entries)
		}
		if held > 4*windowBlockMin {
			t.Fatalf("a list of %d entries keeps room for %d", w.len(), held)
		}
	}
}

// TestCopiedWindowListsShareTheirBlocks checks that a list and its copy,
// pushed the same entries one behind the other (an owner's serving state
// and its checkpoint base), keep them in the same blocks, and that each
// still reads its own entries as a slice would.
func TestCopiedWindowListsShareTheirBlocks(t *testing.T) {
	// A base lags its owner's serving state by a tick's records, a few
	// thousand entries; a copy may lag further, by fewer blocks than the
	// share files.
	for _, lagBy := range []int{3000, 3*windowBlockLen + 100} {
		checkLaggingCopyShares(t, lagBy)
	}
}

// checkLaggingCopyShares pushes the same entries into a list and, lagBy
// entries behind, into its copy, and checks that the copy holds the same
// entries in the blocks its original made.
func checkLaggingCopyShares(t *testing.T, lagBy int) {
	t.Helper()
	var lead windowList
	for i := range 1000 {
		lead.push(newRecentID(wire.MessageID{Producer: 1, Seq: uint64(i)}, uint64(i+1), int64(i), false))
	}
	lag := lead.clone()
	var model []recentID
	for i := 1000; i < 10*windowBlockLen; i++ {
		e := newRecentID(wire.MessageID{Producer: 1, Seq: uint64(i)}, uint64(i+1), int64(i), i%2 == 1)
		model = append(model, e)
		lead.push(e)
		if len(model) > lagBy {
			lag.push(model[len(model)-lagBy-1])
		}
		if lead.len() > lagBy+2*windowBlockLen {
			lead.popFront()
		}
	}
	for _, e := range model[len(model)-lagBy:] {
		lag.push(e)
	}
	if !slices.Equal(lead.slice(), lag.slice()[lag.len()-lead.len():]) {
		t.Fatalf("lagging by %d: the copy holds other entries than its original", lagBy)
	}
	blocks := make(map[*windowBlock]bool)
	for _, b := range lead.blocks {
		blocks[b] = true
	}
	for _, b := range lag.blocks[len(lag.blocks)-len(lead.blocks):] {
		if !blocks[b] {
			t.Fatalf("lagging by %d: the copy keeps its own block for the entries from %d", lagBy, b.start)
		}
	}
}

// TestAWindowListThatDivergesCopiesTheBlockItShared checks that a copy
// pushed another entry than its original holds at that place goes on in
// a block of its own, and that neither list sees the other's entries.
func TestAWindowListThatDivergesCopiesTheBlockItShared(t *testing.T) {
	entry := func(seq uint64, settled bool) recentID {
		return newRecentID(wire.MessageID{Producer: 1, Seq: seq}, seq, int64(seq), settled)
	}
	var a windowList
	for i := range uint64(10) {
		a.push(entry(i, false))
	}
	b := a.clone()
	for i := uint64(10); i < 20; i++ {
		a.push(entry(i, false))
	}
	for i := uint64(10); i < 15; i++ {
		b.push(entry(i, false))
	}
	b.push(entry(15, true)) // not what a holds at this place
	b.push(entry(16, true))
	for i, e := range a.slice() {
		if e != entry(uint64(i), false) {
			t.Fatalf("the original's entry %d changed to %+v", i, e)
		}
	}
	got := b.slice()
	if len(got) != 17 || got[15] != entry(15, true) || got[16] != entry(16, true) || got[14] != entry(14, false) {
		t.Fatalf("the copy holds %+v", got)
	}
	if a.blocks[len(a.blocks)-1] == b.blocks[len(b.blocks)-1] {
		t.Fatal("the lists still share the block they disagree on")
	}
}

// TestCopiedWindowListsActAsSlices runs two lists, one a copy of the
// other, through random pushes of the same entries at different paces,
// random pops from either and, now and then, an entry only one of them
// pushes, each against a plain slice of its own entries.
func TestCopiedWindowListsActAsSlices(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		next := uint64(1)
		entry := func() recentID {
			e := newRecentID(wire.MessageID{Producer: 1, Seq: next}, next, int64(next), next%3 == 0)
			next++
			return e
		}
		var lists [2]windowList
		var models [2][]recentID
		for range rapid.IntRange(0, 2*windowBlockLen).Draw(t, "before the copy") {
			e := entry()
			lists[0].push(e)
			models[0] = append(models[0], e)
		}
		lists[1] = lists[0].clone()
		models[1] = slices.Clone(models[0])
		// pending holds what the first list pushed and the second has
		// yet to.
		var pending []recentID
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				for range rapid.IntRange(1, windowBlockLen).Draw(t, "pushes") {
					e := entry()
					lists[0].push(e)
					models[0] = append(models[0], e)
					pending = append(pending, e)
				}
			case 1:
				k := rapid.IntRange(0, len(pending)).Draw(t, "catch up")
				for _, e := range pending[:k] {
					lists[1].push(e)
					models[1] = append(models[1], e)
				}
				pending = pending[k:]
			case 2:
				i := rapid.IntRange(0, 1).Draw(t, "pop from")
				for range rapid.IntRange(0, len(models[i])).Draw(t, "pops") {
					if got := lists[i].popFront(); got != models[i][0] {
						t.Fatalf("list %d popped %+v, want %+v", i, got, models[i][0])
					}
					models[i] = models[i][1:]
				}
			case 3:
				i := rapid.IntRange(0, 1).Draw(t, "diverge")
				e := entry()
				lists[i].push(e)
				models[i] = append(models[i], e)
				if i == 1 {
					// The copy's pushes no longer follow the original's.
					pending = nil
				}
			}
			for i := range lists {
				if !slices.Equal(lists[i].slice(), models[i]) {
					t.Fatalf("list %d holds other entries than its slice", i)
				}
			}
		}
	})
}
