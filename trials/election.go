package trials

import (
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// ElectionTrial is one measured metadata leader loss.
type ElectionTrial struct {
	Seed uint64
	// Latency runs from the leader's crash to the first announcement of a
	// leader in a later term; Elected is false if none came.
	Latency time.Duration
	Elected bool
	// Suspicions counts the failure detector's suspicions; False those of
	// nodes whose process was in fact running.
	Suspicions, False int
	// Violations from the run's checkers; a trial that breaks a promise
	// is not a measurement.
	Violations []sim.Violation
}

// ElectionScenario is the seed's ordinary scenario (network noise, sync
// latency, workload), with its faults replaced by one crash of the
// metadata leader at a drawn time between 2 and 5 seconds, disk errors
// switched off (they would crash other nodes mid-election and measure
// something else), and the given detection mode.
func ElectionScenario(seed uint64, mode uint8) sim.Scenario {
	sc := sim.QueueScenario(seed)
	// Three replicas, as every election trial measured before the swarm
	// drew five for some seeds: the trial is about the metadata group.
	sc.Detection, sc.Replicas = mode, 0
	d := &sc.Swarm.Disk
	d.SyncErrorRate, d.WriteErrorRate, d.ReadErrorRate = 0, 0, 0
	at := 2*time.Second + time.Duration(seed%3000)*time.Millisecond
	sc.Faults = []sim.Fault{{At: at, Kind: sim.FaultCrashLeader, Length: 2 * time.Second}}
	return sc
}

// RunElectionTrial runs the election scenario of seed and measures it.
func RunElectionTrial(seed uint64, mode uint8) ElectionTrial {
	sc := ElectionScenario(seed, mode)
	rep := props.RunQueue(sc, nil)
	t := ElectionTrial{Seed: seed, Violations: rep.Violations}
	crash := sc.Faults[0].At
	var term uint64
	for _, e := range rep.History.NodeEvents {
		switch {
		case e.Name == event.MetaLeader && e.At < crash:
			term = max(term, e.Term)
		case e.Name == event.MetaLeader && e.Term > term && !t.Elected:
			t.Latency, t.Elected = e.At-crash, true
		case e.Name == event.DetectSuspect:
			t.Suspicions++
			if e.TargetUp {
				t.False++
			}
		}
	}
	return t
}
