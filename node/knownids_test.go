package node

import (
	"cmp"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairnmq/cairn/wire"
)

// modelIDs is what knownIDs must behave as: one map from each ID to its
// remembered indexes.
type modelIDs map[wire.MessageID]idIndexes

func (m modelIDs) note(id wire.MessageID, index uint64, settled bool) {
	e := m[id]
	if settled {
		e.settled = index
	} else {
		e.published = index
	}
	m[id] = e
}

func (m modelIDs) forget(id wire.MessageID, index uint64, settled bool) {
	e, ok := m[id]
	if !ok {
		return
	}
	slot := &e.published
	if settled {
		slot = &e.settled
	}
	if *slot != index {
		return
	}
	*slot = 0
	if e == (idIndexes{}) {
		delete(m, id)
		return
	}
	m[id] = e
}

func (m modelIDs) sorted(settled bool) []idIndex {
	var out []idIndex
	for _, id := range slices.SortedFunc(maps.Keys(m), compareIDs) {
		index := m[id].published
		if settled {
			index = m[id].settled
		}
		if index != 0 {
			out = append(out, idIndex{id: id, index: index})
		}
	}
	return out
}

// noted is one record a test's window noted, oldest first, as a state's
// window lists them.
type noted struct {
	id      wire.MessageID
	index   uint64
	settled bool
}

// TestKnownIDsBehaveAsOneMap drives knownIDs and the map model with the
// same notes and forgets, drawn as a window makes them (IDs noted in
// order, forgotten oldest first) and out of order too (sequences that go
// back, repeat or skip, acks of IDs long forgotten, forgets of records
// never noted), and holds them to the same answers throughout.
func TestKnownIDsBehaveAsOneMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, m := newKnownIDs(), modelIDs{}
		var window []noted // what was noted, oldest first, as a state's window lists it
		next := map[uint64]uint64{}
		index := uint64(0)
		pickID := func(t *rapid.T) wire.MessageID {
			producer := rapid.Uint64Range(1, 3).Draw(t, "producer")
			switch rapid.IntRange(0, 9).Draw(t, "how") {
			case 0: // anywhere, often below what the run holds
				return wire.MessageID{Producer: producer, Seq: rapid.Uint64Range(0, next[producer]+3).Draw(t, "seq")}
			case 1, 2: // one noted before: an ack, or a retry
				if len(window) > 0 {
					return window[rapid.IntRange(0, len(window)-1).Draw(t, "earlier")].id
				}
			}
			next[producer] += rapid.Uint64Range(1, 2).Draw(t, "gap")
			return wire.MessageID{Producer: producer, Seq: next[producer]}
		}
		steps := rapid.IntRange(1, 400).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2:
				id, settled := pickID(t), rapid.Bool().Draw(t, "settled")
				index++
				k.note(id, index, settled)
				m.note(id, index, settled)
				window = append(window, noted{id, index, settled})
			case 3, 4: // the window forgets its oldest
				if len(window) > 0 {
					e := window[0]
					window = window[1:]
					k.forget(e.id, e.index, e.settled)
					m.forget(e.id, e.index, e.settled)
				}
			case 5: // a forget of a record that is not the one remembered
				id := pickID(t)
				at := rapid.Uint64Range(1, index+1).Draw(t, "at")
				settled := rapid.Bool().Draw(t, "settled")
				k.forget(id, at, settled)
				m.forget(id, at, settled)
			}
			k.shrink()
			for producer := uint64(1); producer <= 3; producer++ {
				for seq := uint64(0); seq <= next[producer]+1; seq++ {
					id := wire.MessageID{Producer: producer, Seq: seq}
					got, ok := k.lookup(id)
					want, wantOK := m[id]
					if got != want || ok != wantOK {
						t.Fatalf("lookup %s: got %+v %v, want %+v %v", id, got, ok, want, wantOK)
					}
				}
			}
		}
		for _, settled := range []bool{false, true} {
			got, want := k.sorted(settled), m.sorted(settled)
			if !slices.Equal(got, want) {
				t.Fatalf("sorted(%v): got %v, want %v", settled, got, want)
			}
		}
		if published, settled := len(m.sorted(false)), len(m.sorted(true)); k.published != published || k.settled != settled {
			t.Fatalf("counts %d and %d, want %d and %d", k.published, k.settled, published, settled)
		}
		c := k.clone()
		if !c.equal(&k) || !k.equal(&c) {
			t.Fatal("a clone is not equal to its original")
		}
		if len(window) > 0 {
			e := window[len(window)-1]
			c.note(e.id, e.index+1000, !e.settled)
			if c.equal(&k) || k.equal(&c) {
				t.Fatal("a clone noted one more record is still equal to its original")
			}
		}
	})
}

// TestARunFindsEverySequenceItHolds holds find to a binary search over
// runs with gaps, emptied entries and a dropped front, across blocks, for
// every sequence in and around them.
func TestARunFindsEverySequenceItHolds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p producerIDs
		seq := rapid.Uint64Range(0, 5).Draw(t, "first")
		entries := rapid.IntRange(0, 2).Draw(t, "blocks")*runBlockLen + rapid.IntRange(0, runBlockLen-1).Draw(t, "more")
		for range entries {
			p.push(seqIndexes{seq: seq, idIndexes: idIndexes{published: seq + 1}})
			seq += rapid.Uint64Range(1, rapid.Uint64Range(1, 40).Draw(t, "spread")).Draw(t, "gap")
		}
		for i := range rapid.IntRange(0, p.n).Draw(t, "dropped") {
			p.at(i).idIndexes = idIndexes{}
		}
		p.dropFront()
		live := slices.Collect(p.entries)
		if len(live) != p.n {
			t.Fatalf("the run lists %d entries and counts %d", len(live), p.n)
		}
		for s := uint64(0); s <= seq+2; s++ {
			at, want := slices.BinarySearchFunc(live, s, func(e seqIndexes, s uint64) int { return cmp.Compare(e.seq, s) })
			i, ok := p.find(s)
			if ok != want || (ok && i != at) {
				t.Fatalf("find(%d) = %d, %v; want %d, %v", s, i, ok, at, want)
			}
		}
	})
}

// TestAWindowOfManyBlocksBehavesAsOneMap runs a long window of one
// producer, IDs in order with acks and forgets behind them, far enough
// that its run fills and drops many blocks, and holds it to the model.
func TestAWindowOfManyBlocksBehavesAsOneMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k, m := newKnownIDs(), modelIDs{}
		var window []noted
		seq, index := uint64(0), uint64(0)
		keep := rapid.IntRange(1, 3*runBlockLen).Draw(t, "window")
		for range rapid.IntRange(runBlockLen, 6*runBlockLen).Draw(t, "steps") {
			index++
			var e noted
			if len(window) > 0 && rapid.IntRange(0, 3).Draw(t, "ack") == 0 {
				e = noted{window[rapid.IntRange(max(0, len(window)-50), len(window)-1).Draw(t, "acked")].id, index, true}
			} else {
				seq += rapid.Uint64Range(1, 2).Draw(t, "gap")
				e = noted{wire.MessageID{Producer: 7, Seq: seq}, index, false}
			}
			k.note(e.id, e.index, e.settled)
			m.note(e.id, e.index, e.settled)
			window = append(window, e)
			for len(window) > keep {
				f := window[0]
				window = window[1:]
				k.forget(f.id, f.index, f.settled)
				m.forget(f.id, f.index, f.settled)
			}
			k.shrink()
		}
		for s := uint64(0); s <= seq+1; s++ {
			id := wire.MessageID{Producer: 7, Seq: s}
			got, ok := k.lookup(id)
			want, wantOK := m[id]
			if got != want || ok != wantOK {
				t.Fatalf("lookup %s: got %+v %v, want %+v %v", id, got, ok, want, wantOK)
			}
		}
		for _, settled := range []bool{false, true} {
			if got, want := k.sorted(settled), m.sorted(settled); !slices.Equal(got, want) {
				t.Fatalf("sorted(%v) differs from the model's: %d entries against %d", settled, len(got), len(want))
			}
		}
		if p := k.producers[7]; p != nil && len(p.blocks) > p.n/runBlockLen+2 {
			t.Fatalf("a run of %d entries holds %d blocks", p.n, len(p.blocks))
		}
		c := k.clone()
		if !c.equal(&k) || !k.equal(&c) {
			t.Fatal("a clone is not equal to its original")
		}
	})
}
