package netsim

import (
	"math/rand/v2"
	"testing"
	"time"
)

func quiet() LinkProfile {
	return LinkProfile{Latency: Latency{Min: time.Millisecond, Max: 5 * time.Millisecond}}
}

func TestLinksAreFirstInFirstOutUnlessReordering(t *testing.T) {
	n := New(rand.New(rand.NewPCG(1, 1)), quiet())
	var last time.Duration
	for i := range 1000 {
		at := n.Route(time.Duration(i)*time.Microsecond, 1, 2, 100)
		if len(at) != 1 {
			t.Fatalf("message %d: %d copies on a lossless link", i, len(at))
		}
		if at[0] < last {
			t.Fatalf("message %d arrives at %v, before its predecessor at %v", i, at[0], last)
		}
		last = at[0]
	}
	p := quiet()
	p.Reorder = 0.5
	n.SetProfile(1, 2, p)
	inversions := 0
	last = 0
	for i := range 1000 {
		at := n.Route(time.Second+time.Duration(i)*time.Microsecond, 1, 2, 100)[0]
		if at < last {
			inversions++
		}
		last = max(last, at)
	}
	if inversions == 0 {
		t.Fatal("a reordering link never reordered")
	}
}

func TestPartitionsAreSilentAndNest(t *testing.T) {
	n := New(rand.New(rand.NewPCG(2, 2)), quiet())
	n.Block(1, 2)
	n.Partition([]Addr{1}, []Addr{2, 3})
	if got := n.Route(0, 1, 2, 10); got != nil {
		t.Fatalf("blocked link delivered at %v", got)
	}
	if got := n.Route(0, 2, 1, 10); got != nil {
		t.Fatal("symmetric partition let 2→1 through")
	}
	n.Unblock(1, 2) // ends the partition's block of 1→2; the one-way block remains
	if !n.Blocked(1, 2) {
		t.Fatal("ending one of two overlapping blocks reopened the link")
	}
	n.Unblock(1, 2)
	if n.Blocked(1, 2) || len(n.Route(0, 1, 2, 10)) != 1 {
		t.Fatal("link still cut after both blocks ended")
	}
	n.Isolate(3, []Addr{1, 2, 3})
	n.Heal(0)
	for _, pair := range [][2]Addr{{1, 3}, {3, 1}, {2, 1}} {
		if n.Blocked(pair[0], pair[1]) {
			t.Fatalf("Heal left %v cut", pair)
		}
	}
	if s := n.Stats(); s.Blocked != 2 {
		t.Fatalf("stats count %d blocked messages, want 2", s.Blocked)
	}
}

func TestClogHoldsMessagesUntilItEnds(t *testing.T) {
	n := New(rand.New(rand.NewPCG(3, 3)), quiet())
	n.Clog(1, 2, 2*time.Second)
	for i := range 10 {
		at := n.Route(time.Duration(i)*time.Millisecond, 1, 2, 10)[0]
		if at < 2*time.Second {
			t.Fatalf("clogged message arrived at %v", at)
		}
	}
	if at := n.Route(0, 2, 1, 10)[0]; at >= 2*time.Second {
		t.Fatalf("the reverse direction was clogged too (arrival %v)", at)
	}
}

func TestLossAndDuplicationRates(t *testing.T) {
	p := quiet()
	p.Loss, p.Duplicate = 0.1, 0.2
	n := New(rand.New(rand.NewPCG(4, 4)), p)
	copies := 0
	const sent = 20000
	for i := range sent {
		copies += len(n.Route(time.Duration(i), 1, 2, 10))
	}
	// Expected copies per message: 0.9 * 1.2 = 1.08.
	if got := float64(copies) / sent; got < 1.05 || got > 1.11 {
		t.Fatalf("%.3f copies per message, want about 1.08", got)
	}
}

func TestSameSeedSameFate(t *testing.T) {
	p := quiet()
	p.Loss, p.Duplicate, p.Reorder = 0.1, 0.1, 0.1
	fate := func() []time.Duration {
		n := New(rand.New(rand.NewPCG(5, 5)), p)
		var out []time.Duration
		for i := range 500 {
			out = append(out, n.Route(time.Duration(i)*time.Millisecond, Addr(1+i%3), Addr(1+(i+1)%3), i)...)
		}
		return out
	}
	a, b := fate(), fate()
	if len(a) != len(b) {
		t.Fatalf("two runs routed %d and %d copies", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("copy %d arrives at %v then %v", i, a[i], b[i])
		}
	}
}
