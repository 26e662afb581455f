package live

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/prometheus/client_golang/prometheus"
)

// A running node's registry exposes what its event logger derives from
// the events the node emits: a one-node cluster elects itself, and its
// election is counted in the node's own registry and logged at info. A
// pedantic registry, which checks every collected series against the
// descriptors its collector declared, accepts the runtime's collector,
// so the event instruments are described as they are collected.
func TestNodeEventsReachItsMetrics(t *testing.T) {
	tn := start(t, singleConfig(t))
	waitFor(t, 5*time.Second, "the election to be counted", func() bool {
		m := series(t, tn.m.reg, "cairn_meta_leader_elections_total")
		return m != nil && m.GetCounter().GetValue() == 1
	})
	if !tn.logsMention("level=INFO", "msg="+string(event.MetaLeader)) {
		t.Errorf("the election left no info line:\n%s", tn.logs.String())
	}

	c := dial(t, tn.ClientAddr())
	if err := c.CreateQueue(ctxFor(t, 10*time.Second), "jobs", client.PolicyMajority); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the queue's creation to be logged", func() bool {
		return tn.logsMention("level=INFO", "msg="+string(event.MetaActivated), "q=jobs")
	})

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newQueueCollector(tn.Runtime))
	if m := series(t, reg, "cairn_meta_leader_elections_total"); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("the runtime's collector reports elections as %v, want 1", m)
	}
	if series(t, reg, "cairn_queue_last_index", "queue=jobs") == nil {
		t.Errorf("the runtime's collector no longer reports the queue gauges")
	}
}
