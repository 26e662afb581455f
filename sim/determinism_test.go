package sim_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/sim"
)

// determinismSeeds cover clean runs, crash-heavy runs, partitions and
// fsync failures (the swarm draws a different mix for each).
var determinismSeeds = []uint64{1, 2, 3, 7, 15, 42, 99, 1234, counterSeedBase + 7, counterSeedBase + 15,
	leaderFaultBase + 5, leaderFaultBase + 6}

// runHash runs the queue system for seed, or the counter for seeds offset
// by counterSeedBase, and returns the trace hash.
func runHash(seed uint64) uint64 {
	if seed >= leaderFaultBase {
		sc := sim.QueueScenario(seed - leaderFaultBase)
		sc.Faults = append(sc.Faults,
			sim.Fault{At: 2 * time.Second, Kind: sim.FaultCrashLeader, Length: 700 * time.Millisecond},
			sim.Fault{At: 3 * time.Second, Kind: sim.FaultIsolateLeader, Length: time.Second},
			sim.Fault{At: 4500 * time.Millisecond, Kind: sim.FaultSplit, Group: []int{0}, Length: 800 * time.Millisecond},
			sim.Fault{At: 6 * time.Second, Kind: sim.FaultCrashLeaderOwner, Length: 500 * time.Millisecond},
		)
		slices.SortStableFunc(sc.Faults, func(a, b sim.Fault) int { return int(a.At - b.At) })
		return sim.NewWorld(sc, sim.NewQueueSystem(sc), nil).Run().TraceHash
	}
	if seed >= counterSeedBase {
		return sim.NewWorld(sim.CounterScenario(seed-counterSeedBase), sim.NewCounterSystem(), nil).Run().TraceHash
	}
	sc := sim.QueueScenario(seed)
	return sim.NewWorld(sc, sim.NewQueueSystem(sc), nil).Run().TraceHash
}

// Seed offsets select variants: counter scenarios, and queue scenarios
// with leader crashes and partitions added.
const (
	counterSeedBase = 1 << 32
	leaderFaultBase = 1 << 33
)

// childEnv makes the test binary print hashes instead of testing, when
// TestTraceHashStableAcrossProcesses runs it as a child process.
const childEnv = "CAIRN_SIM_HASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		for _, seed := range determinismSeeds {
			fmt.Printf("%d %016x\n", seed, runHash(seed))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTraceHashStableAcrossRuns runs each seed twice in this process and
// once in a fresh child process; all three trace hashes must agree, and
// different seeds must give different hashes. A second run in the same
// process catches state leaking between runs (globals, caches); the child
// process catches anything seeded per process (map hash seeds, ASLR,
// maphash).
func TestTraceHashStableAcrossRuns(t *testing.T) {
	first := make(map[uint64]uint64)
	seen := make(map[uint64]uint64)
	for _, seed := range determinismSeeds {
		a, b := runHash(seed), runHash(seed)
		if a != b {
			t.Fatalf("seed %d: trace hash %016x then %016x in one process", seed, a, b)
		}
		if other, dup := seen[a]; dup {
			t.Fatalf("seeds %d and %d share trace hash %016x", other, seed, a)
		}
		seen[a] = seed
		first[seed] = a
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(determinismSeeds) {
		t.Fatalf("child printed %d lines, want %d:\n%s", len(lines), len(determinismSeeds), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		seed, _ := strconv.ParseUint(fields[0], 10, 64)
		hash, _ := strconv.ParseUint(fields[1], 16, 64)
		if hash != first[seed] {
			t.Errorf("seed %d: child process hash %016x, this process %016x", seed, hash, first[seed])
		}
	}
}
