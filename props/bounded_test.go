package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// A queue under steady traffic that a consumer drains keeps a state (what
// its checkpoints hold) bounded by its live backlog and its deduplication
// window, not by how long it has run: the largest checkpoint of the last
// ten simulated seconds is no larger than half again the largest of the
// ten seconds after warm-up, though three times as many messages were
// published by then.
func TestCheckpointStateStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of simulated traffic")
	}
	sc := sim.QueueScenario(1)
	sc.Faults, sc.Swarm.Classes = nil, nil
	d := &sc.Swarm.Disk
	d.SyncErrorRate, d.WriteErrorRate, d.ReadErrorRate = 0, 0, 0
	sc.Swarm.Net = netsim.LinkProfile{Latency: netsim.Latency{Min: 100 * time.Microsecond, Max: 500 * time.Microsecond}}
	sc.Safety, sc.Liveness = 40*time.Second, 2*time.Second
	sc.Dedup = time.Second
	sc.Checkpoint = sim.CheckpointCadence{Records: 200, Segment: 8 << 10}
	sc.Workload = &sim.Workload{
		Queues:    []sim.QueueSpec{{Name: "steady", Policy: wire.PolicyMajority}},
		Producers: 1, Consumers: 1, PayloadMax: 256, AckChance: 1, Lease: 5 * time.Second, Window: 64,
		PublishEvery:   netsim.Latency{Min: 5 * time.Millisecond, Max: 5 * time.Millisecond},
		RequestTimeout: time.Second, Quiet: time.Second,
	}
	rep := RunQueue(sc, nil)
	for _, v := range rep.Violations {
		t.Fatal(v)
	}
	var early, late uint64
	builds := 0
	for _, e := range rep.History.NodeEvents {
		if e.Name != event.CheckpointBuilt {
			continue
		}
		builds++
		switch {
		case e.At >= 10*time.Second && e.At < 20*time.Second:
			early = max(early, e.Value)
		case e.At >= 30*time.Second && e.At < 40*time.Second:
			late = max(late, e.Value)
		}
	}
	t.Logf("%d checkpoints built; largest 10-20s %d bytes, 30-40s %d bytes", builds, early, late)
	if early == 0 || late == 0 {
		t.Fatalf("no checkpoint in one of the windows (early %d, late %d): the test measures nothing", early, late)
	}
	if late > early*3/2 {
		t.Fatalf("checkpoints grew from %d to %d bytes with the history: the state is not bounded", early, late)
	}
}
