package node

import (
	"testing"

	"github.com/cairnmq/cairn/event"
)

// A node short of space has a queue checkpointed out of turn only when
// the checkpoint would hold at most half of what the replica keeps for
// the queue, and a log segment less at least: enough to matter, and
// never at each record of a queue that holds next to nothing.
func TestACheckpointReclaimsSpaceWhenItHalvesWhatTheQueueKeepsBySegmentsOrMore(t *testing.T) {
	const segment = 4096
	for _, c := range []struct {
		name        string
		state, kept int64
		want        bool
	}{
		{"a purge emptied a queue whose checkpoint holds 199 KB", 0, 202_082, true},
		{"drained to half", 50_000, 100_000, true},
		{"drained to a little more than half", 50_001, 100_000, false},
		{"nothing drained", 100_000, 100_000, false},
		{"an empty queue keeping less than a segment", 0, segment - 1, false},
		{"an empty queue keeping a segment", 0, segment, true},
		{"half of what it keeps, but less than a segment back", 3000, 6000, false},
	} {
		if got := reclaims(c.state, c.kept, segment); got != c.want {
			t.Errorf("%s: state %d of %d kept: reclaims %t, want %t", c.name, c.state, c.kept, got, c.want)
		}
	}
}

// emitsEnv is an environment of which only Emit may be used; it keeps
// what is emitted.
type emitsEnv struct {
	Env
	events []event.Event
}

func (e *emitsEnv) Emit(ev event.Event) { e.events = append(e.events, ev) }

// A node announces a certificate only when the metadata applied it: a
// proposal it refused (a stale epoch, a changed replica set) or a retry
// of a cut below the queue's certified one certifies nothing, and an
// announcement of it would tell the logs, the dashboard and the
// simulator's compaction checker of a cut no replica may compact to.
func TestOnlyAnAppliedCertificateIsAnnounced(t *testing.T) {
	env := &emitsEnv{}
	n := &Node{env: env, meta: &metaNode{state: newMetaState(DetectionPolicy{})}, queues: map[string]*replica{}}
	n.meta.state.queues["orders"] = &QueueMeta{Name: "orders", Incarnation: 7, State: QueueActive, CheckpointCut: 40}
	certify := func(name string, cut uint64) command {
		return command{kind: cmdCertifyCheckpoint, name: name, inc: 7, epoch: 3, node: 1, cut: cut, members: []NodeID{1, 2, 3}}
	}
	for _, c := range []struct {
		what string
		c    command
		res  result
	}{
		{"refused", certify("orders", 40), result{detail: "epoch 4 of n2, not 3 of n1"}},
		{"below the certified cut", certify("orders", 30), result{ok: true}},
		{"of an unknown queue", certify("invoices", 40), result{ok: true}},
	} {
		n.onCertified(c.c, c.res)
		if len(env.events) != 0 {
			t.Fatalf("a certificate %s was announced: %v", c.what, env.events)
		}
	}
	n.onCertified(certify("orders", 40), result{ok: true})
	if len(env.events) != 1 || env.events[0].Name != event.CheckpointCertified || env.events[0].Index() != 40 {
		t.Fatalf("the certificate of cut 40 was announced as %v", env.events)
	}
}
