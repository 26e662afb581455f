package node

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// cloneWorkload draws n records after from: publishes (some delayed),
// settles one at a time and in batches, promotes, dead letters, moves in
// and purges, stamped a millisecond apart so that a short window forgets
// as it goes.
func cloneWorkload(rng *rand.Rand, from uint64, n int, producer uint64) []record {
	id := func(seq uint64) wire.MessageID { return wire.MessageID{Producer: producer, Seq: seq} }
	var out []record
	for i := range n {
		at := int64(from+uint64(i)) * int64(time.Millisecond)
		seq := uint64(rng.IntN(int(from) + n + 1))
		// Half the settles and dead letters name a message of the first
		// producer's, which both states may hold.
		old := wire.MessageID{Producer: 7, Seq: uint64(rng.IntN(int(from) + 1))}
		switch k := rng.IntN(20); {
		case k < 9:
			r := record{typ: recordPublish, id: id(from + uint64(i)), payload: []byte{byte(i)}, at: at}
			if k == 0 {
				r.readyAt = at + int64(rng.IntN(50))*int64(time.Millisecond)
			}
			out = append(out, r)
		case k < 14:
			out = append(out, record{typ: recordSettle, id: id(seq), at: at}, record{typ: recordSettle, id: old, at: at})
		case k < 16:
			out = append(out, record{typ: recordSettles, ids: []wire.MessageID{id(seq), id(seq + 1), id(seq + 7)}, at: at})
		case k == 16:
			out = append(out, record{typ: recordPromote, until: at})
		case k == 17:
			out = append(out, record{typ: recordDeadLetter, id: old, to: "parked"})
		case k == 18:
			out = append(out, record{typ: recordMovedIn, id: wire.MessageID{Producer: 99, Seq: from + uint64(i)}, at: at, payload: []byte("m"),
				from: moveOrigin{queue: "other", inc: 1, index: from + uint64(i), settledThrough: from / 2}})
		case rng.IntN(10) > 0:
			out = append(out, record{typ: recordPublish, id: id(from + uint64(i)), payload: []byte{byte(i)}, at: at})
		default:
			out = append(out, record{typ: recordPurge, through: from/2 + uint64(i)/8, at: at})
		}
	}
	return out
}

// replayed applies records from index 1 on to a new builder's state.
func replayed(records ...[]record) *queueState {
	s := builderState("orders")
	for _, rs := range records {
		for _, r := range rs {
			s.apply(s.applied+1, r)
		}
	}
	return s
}

// readyOrder pops every ready message of s.
func readyOrder(s *queueState) []wire.MessageID {
	var ids []wire.MessageID
	for m := s.popReady(); m != nil; m = s.popReady() {
		ids = append(ids, m.id)
	}
	return ids
}

// A copy of a builder's state and the state it was copied from change
// independently: each, after records of its own, is the state a replay of
// the same records reaches, byte for byte and in the order it hands out
// ready messages. A window spanning several blocks and forgetting as it
// goes, delayed, dead-lettered, moved-in and purged messages are all in
// the workload.
func TestACopiedStateAndItsOriginalChangeIndependently(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		prefix := append([]record{
			{typ: recordCreate, policy: wire.PolicyMajority, members: []NodeID{1, 2, 3}},
			{typ: recordEpochMark, at: 1, window: int64(8 * time.Second)},
		}, cloneWorkload(rng, 3, 20000, 7)...)
		base := replayed(prefix)
		if base.recent.len() <= windowBlockLen {
			t.Fatalf("seed %d: the window holds %d entries, want more than one block", seed, base.recent.len())
		}
		copied := base.clone()
		// The copy's ID maps fill from its window in steps, each
		// reporting whether they are whole yet.
		steps := 1
		for !copied.fillMaps(1000) {
			steps++
		}
		if want := (copied.recent.len() + 999) / 1000; steps < want {
			t.Fatalf("seed %d: the copy's maps filled in %d steps of 1,000 entries, want %d for a window of %d", seed, steps, want, copied.recent.len())
		}
		next := uint64(len(prefix)) + 1
		forCopy, forBase := cloneWorkload(rng, next, 3000, 8), cloneWorkload(rng, next, 3000, 9)
		for i, r := range forCopy {
			copied.apply(next+uint64(i), r)
		}
		for i, r := range forBase {
			base.apply(next+uint64(i), r)
		}
		for _, c := range []struct {
			name      string
			got, want *queueState
		}{
			{"the copy", copied, replayed(prefix, forCopy)},
			{"the original", base, replayed(prefix, forBase)},
		} {
			if got, want := encodeState(c.got), encodeState(c.want); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: %s encodes to %d bytes unlike its replay's %d", seed, c.name, len(got), len(want))
			}
			if !c.got.known.equal(&c.want.known) {
				t.Fatalf("seed %d: %s remembers %d published and %d settled IDs, its replay %d and %d",
					seed, c.name, c.got.known.published, c.got.known.settled, c.want.known.published, c.want.known.settled)
			}
			if got, want := c.got.recent.sum(), c.got.recentSum; got != want {
				t.Fatalf("seed %d: %s keeps window digest %v, its entries sum to %v", seed, c.name, want, got)
			}
			got, want := readyOrder(c.got), readyOrder(c.want)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("seed %d: %s hands out %d ready messages unlike its replay's %d (or none)", seed, c.name, len(got), len(want))
			}
		}
	}
}

// A copy whose ID maps are not filled yet applies nothing: it would
// take a retried publish for a new one.
func TestACopyAppliesNothingBeforeItsMapsAreFilled(t *testing.T) {
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark, at: 1, window: int64(time.Minute)})
	s.apply(2, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: 1}, payload: []byte("x"), at: 2})
	c := s.clone()
	defer func() {
		if recover() == nil {
			t.Fatal("a copy applied a record before its ID maps were filled")
		}
	}()
	c.apply(3, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: 1}, payload: []byte("x"), at: 3})
}

// A state with a message leased is an owner's serving state, which is
// never copied: the copy would share the lease.
func TestCopyingAStateWithALeaseIsRefused(t *testing.T) {
	s := builderState("orders")
	s.apply(1, record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: 1}, payload: []byte("x")})
	m := s.popReady()
	m.lease = &lease{id: 1, msg: m}
	defer func() {
		if recover() == nil {
			t.Fatal("a state with a leased message was copied")
		}
	}()
	s.clone()
}

// BenchmarkFillMapsStep measures one step of filling a copied state's ID
// maps, fillStepEntries window entries, the work a new owner's tick does
// for its next checkpoint's base while it serves. The window is a full
// two minutes at 10,000 msg/s, published and settled.
func BenchmarkFillMapsStep(b *testing.B) {
	const rate = 10_000
	s := builderState("orders")
	s.apply(1, record{typ: recordEpochMark, at: 1, window: int64(2 * time.Minute)})
	index, at := uint64(1), int64(1)
	payload := []byte("x")
	for seq := range uint64(2 * 60 * rate) {
		id := wire.MessageID{Producer: 7, Seq: seq}
		at += int64(time.Second) / rate
		index++
		s.apply(index, record{typ: recordPublish, id: id, at: at, payload: payload})
		index++
		s.apply(index, record{typ: recordSettle, id: id, at: at})
	}
	var c *queueState
	for b.Loop() {
		if c == nil || !c.filling {
			b.StopTimer()
			c = s.clone()
			b.StartTimer()
		}
		c.fillMaps(fillStepEntries)
	}
}

// BenchmarkCloneBacklog measures the copy a new owner makes of the state
// it serves from, to keep as the base of its next checkpoint, in the
// handler that installs it: linear in the backlog (each live message is
// copied, sorted by index and put in the copy's map and ready queue).
func BenchmarkCloneBacklog(b *testing.B) {
	for _, backlog := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(backlog), func(b *testing.B) {
			s := builderState("orders")
			s.apply(1, record{typ: recordEpochMark, at: 1, window: int64(2 * time.Minute)})
			payload := make([]byte, 1024)
			for i := range backlog {
				s.apply(uint64(i+2), record{typ: recordPublish, id: wire.MessageID{Producer: 1, Seq: uint64(i)}, at: int64(i + 2), payload: payload})
			}
			for b.Loop() {
				if c := s.clone(); len(c.messages) != backlog {
					b.Fatalf("the copy holds %d messages, want %d", len(c.messages), backlog)
				}
			}
		})
	}
}
