package core

import (
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// Settles queued one after another for one node and queue travel as one
// batch; anything in between, another node or another queue starts a
// new frame, so the order of everything sent is kept.
func TestSettlesForOneNodeAndQueueShareAFrame(t *testing.T) {
	settle := func(to uint32, queue string, req uint64) Outgoing {
		return Outgoing{To: to, Msg: &wire.Settle{ReqID: req, Queue: queue, ID: wire.MessageID{Producer: 1, Seq: req}, Lease: req}}
	}
	out := coalesceSettles([]Outgoing{
		settle(1, "a", 1), settle(1, "a", 2), settle(1, "a", 3),
		settle(2, "a", 4),
		settle(2, "b", 5),
		{To: 2, Msg: &wire.Publish{ReqID: 6, Queue: "b"}},
		settle(2, "b", 7), settle(2, "b", 8),
	})
	want := []struct {
		to   uint32
		reqs []uint64
	}{{1, []uint64{1, 2, 3}}, {2, []uint64{4}}, {2, []uint64{5}}, {2, []uint64{6}}, {2, []uint64{7, 8}}}
	if len(out) != len(want) {
		t.Fatalf("%d frames, want %d: %v", len(out), len(want), out)
	}
	for i, w := range want {
		got := wire.RequestIDs(out[i].Msg)
		if out[i].To != w.to || len(got) != len(w.reqs) {
			t.Fatalf("frame %d to n%d carries %v, want n%d with %v", i, out[i].To, got, w.to, w.reqs)
		}
		for j := range got {
			if got[j] != w.reqs[j] {
				t.Fatalf("frame %d carries %v, want %v", i, got, w.reqs)
			}
		}
	}
}

// A batch never grows past maxSettleBatch items.
func TestASettleBatchIsBounded(t *testing.T) {
	var in []Outgoing
	for i := range maxSettleBatch + 1 {
		in = append(in, Outgoing{To: 1, Msg: &wire.Settle{ReqID: uint64(i + 1), Queue: "a"}})
	}
	out := coalesceSettles(in)
	if len(out) != 2 || len(out[0].Msg.(*wire.SettleBatch).Items) != maxSettleBatch {
		t.Fatalf("%d settles made %d frames", len(in), len(out))
	}
}
