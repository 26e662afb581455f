package props

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
)

// ckptRun builds an event sequence for the checkpoint protocol checkers:
// each call to on adds one node's event a millisecond after the last.
type ckptRun struct{ evs []ckptEvent }

func (r *ckptRun) on(id node.NodeID, e event.Event) *ckptRun {
	r.evs = append(r.evs, ckptEvent{At: time.Duration(len(r.evs)+1) * time.Millisecond, Node: id, Event: e})
	return r
}

// The queue incarnation, owner epoch and replica set the cases use.
const (
	tq     = "q0"
	tinc   = 7
	tepoch = 2
)

var tmembers = []uint32{1, 2, 3}

func durable(cut uint64, digest string) event.Event {
	return event.NewCheckpointDurable(tq, tinc, cut, digest)
}

func proposed(cut uint64) event.Event {
	return event.NewCheckpointProposed(tq, tinc, cut, tepoch, tmembers)
}

func certified(cut uint64) event.Event {
	return event.NewCheckpointCertified(tq, tinc, cut, tepoch, tmembers)
}

// checkCase runs one checker over one case and holds it to the case's
// expectation: no violation, or exactly one saying want.
func checkCase(t *testing.T, name string, check func([]ckptEvent) []sim.Violation, r *ckptRun, want string) {
	t.Helper()
	got := check(r.evs)
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("%s: unexpected %v", name, got)
	case want != "" && (len(got) != 1 || !strings.Contains(got[0].Detail, want)):
		t.Errorf("%s: got %v, want one violation saying %q", name, got, want)
	}
}

func TestCompactionAfterCertificateChecker(t *testing.T) {
	cases := []struct {
		name string
		run  *ckptRun
		want string // a fragment of the violation, or "" for none
	}{
		{"compaction below a certified cut and its own checkpoint", new(ckptRun).
			on(2, durable(50, "aa")).on(1, certified(40)).on(2, event.NewQueueCompacted(tq, tinc, 41)), ""},
		{"compaction right after the certificate is applied elsewhere", new(ckptRun).
			on(2, durable(40, "aa")).on(1, certified(40)).on(2, event.NewQueueCompacted(tq, tinc, 33)), ""},
		{"compaction before any certificate", new(ckptRun).
			on(2, durable(50, "aa")).on(2, event.NewQueueCompacted(tq, tinc, 41)).on(1, certified(50)),
			"n2 dropped its log through index 40 at 2ms, but the newest certificate any node had applied was at 0"},
		{"compaction past the certified cut", new(ckptRun).
			on(2, durable(50, "aa")).on(1, certified(30)).on(2, event.NewQueueCompacted(tq, tinc, 41)),
			"the newest certificate any node had applied was at 30"},
		{"another incarnation's certificate covers nothing", new(ckptRun).
			on(2, durable(50, "aa")).on(1, event.NewCheckpointCertified(tq, tinc+1, 50, tepoch, tmembers)).
			on(2, event.NewQueueCompacted(tq, tinc, 41)),
			"the newest certificate any node had applied was at 0"},
		{"compaction past its own checkpoint", new(ckptRun).
			on(2, durable(30, "aa")).on(1, certified(40)).on(2, event.NewQueueCompacted(tq, tinc, 41)),
			"its own newest durable checkpoint was at 30"},
		{"a retired replica's checkpoint is gone", new(ckptRun).
			on(2, durable(50, "aa")).on(1, certified(50)).on(2, event.NewQueueRetired(tq, tinc)).
			on(2, event.NewQueueCompacted(tq, tinc, 41)),
			"its own newest durable checkpoint was at 0"},
		{"a new replica's checkpoint outlives the old one's removal", new(ckptRun).
			on(2, durable(30, "aa")).on(2, event.NewQueueRetired(tq, tinc)).on(2, durable(50, "bb")).
			on(2, event.NewQueueReplaced(tq, tinc)).on(1, certified(50)).on(2, event.NewQueueCompacted(tq, tinc, 41)), ""},
		// A replica that takes a checkpoint from another resets its log
		// and reports no compaction: nothing here to judge.
		{"a checkpoint taken from another replica", new(ckptRun).
			on(3, durable(50, "aa")).on(3, event.NewCheckpointInstalled(tq, 50, 1)), ""},
	}
	for _, c := range cases {
		checkCase(t, c.name, checkCompactionAfterCertificate, c.run, c.want)
	}
}

func TestCertificateReceiptsChecker(t *testing.T) {
	everyReceipt := func() *ckptRun {
		return new(ckptRun).on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, durable(40, "aa"))
	}
	cases := []struct {
		name string
		run  *ckptRun
		want string // a fragment of the violation, or "" for none
	}{
		{"every member checkpointed the cut first", everyReceipt().on(1, proposed(40)).on(1, certified(40)).on(2, certified(40)), ""},
		{"a member's checkpoint found at a restart", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, durable(40, "aa")).on(3, durable(60, "bb")).
			on(3, durable(40, "aa")).on(1, proposed(40)).on(1, certified(40)), ""},
		{"a member had not checkpointed yet", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(1, proposed(40)).on(3, durable(40, "aa")).on(1, certified(40)),
			"n1 proposed at 3ms, in epoch 2, a certificate of cut 40 naming n1,n2,n3, but n3 (no checkpoint yet) held no durable checkpoint at that cut"},
		{"a member checkpointed an older cut only", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, durable(20, "cc")).on(1, proposed(40)),
			"n3 (latest checkpoint at 20) held no durable checkpoint at that cut"},
		{"another incarnation's checkpoint is no receipt", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, event.NewCheckpointDurable(tq, tinc+1, 40, "aa")).
			on(1, proposed(40)),
			"n3 (no checkpoint yet) held no durable checkpoint at that cut"},
		{"members disagree on the state", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, durable(40, "bb")).on(1, proposed(40)),
			"their checkpoints at that cut disagree: n1 holds state aa, n3 holds state bb"},
		{"a certificate no owner proposed", everyReceipt().on(1, certified(40)),
			"n1 applied at 4ms a certificate of cut 40 in epoch 2 naming n1,n2,n3 that no owner proposed"},
		{"a retired member's checkpoint is no receipt", everyReceipt().on(3, event.NewQueueRetired(tq, tinc)).on(1, proposed(40)),
			"n3 (no checkpoint yet) held no durable checkpoint at that cut"},
		// Seed 855850: a node retired its replica and made a new one of
		// the same incarnation, which installed a checkpoint before the
		// old replica's files were removed (queue.replaced).
		{"a new replica's checkpoint outlives the old one's removal", new(ckptRun).
			on(1, durable(40, "aa")).on(2, durable(40, "aa")).on(3, durable(20, "cc")).on(3, event.NewQueueRetired(tq, tinc)).
			on(3, durable(40, "aa")).on(3, event.NewQueueReplaced(tq, tinc)).on(1, proposed(40)).on(1, certified(40)), ""},
		{"a proposal for another replica set", everyReceipt().
			on(1, event.NewCheckpointProposed(tq, tinc, 40, tepoch, []uint32{1, 2, 4})),
			"n4 (no checkpoint yet) held no durable checkpoint at that cut"},
	}
	for _, c := range cases {
		checkCase(t, c.name, checkCertificateReceipts, c.run, c.want)
	}
}
