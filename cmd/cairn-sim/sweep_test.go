package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// A sweep starts its workers from os.Executable, which under go test is
// this test binary; TestMain lets it act as the worker. With fakeEnv set
// the worker makes reports up instead of simulating, so the sweep's
// plumbing can be tested over hundreds of seeds in a moment.
const (
	fakeEnv     = "CAIRN_SWEEP_TEST_FAKE"       // any value: fake reports
	fakeFailEnv = "CAIRN_SWEEP_TEST_FAIL_EVERY" // every n-th seed has a safety violation
	fakeDieEnv  = "CAIRN_SWEEP_TEST_DIE_AT"     // the worker process exits on this seed
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerCommand {
		if os.Getenv(fakeEnv) != "" {
			os.Exit(fakeWorker())
		}
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeWorker answers like a worker with reports that are a pure function
// of the seed.
func fakeWorker() int {
	failEvery, _ := strconv.ParseUint(os.Getenv(fakeFailEnv), 10, 64)
	dieAt, _ := strconv.ParseUint(os.Getenv(fakeDieEnv), 10, 64)
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		seed, _ := strconv.ParseUint(in.Text(), 10, 64)
		if seed%20 == 10 {
			// Slow down some failing seeds, so that with several workers
			// later seeds finish first and the order must be restored.
			time.Sleep(50 * time.Millisecond)
		}
		if seed == dieAt {
			fmt.Fprintf(os.Stderr, "fake worker: dying on seed %d\n", seed)
			return 7
		}
		rep := seedReport{
			Seed: seed, Hash: seed * 7919, Events: int(seed), SimTime: time.Duration(seed) * time.Millisecond,
			Stats: props.Stats{Published: int(seed), Confirmed: int(seed / 2)},
			Coverage: sim.Coverage{
				Probes: map[string]int{}, Hits: map[string]int{"x.before.y": int(seed%5) + 1},
				Near: map[string]map[string]int{"x.before.y": {sim.NoFault: 1}},
			},
			Faults: map[string]int{"crash": 1},
		}
		if seed%3 == 0 {
			rep.Coverage.Probes[sim.ProbeRecoveryTransferred] = 2
			rep.Coverage.Near["x.before.y"]["crash"] = int(seed%5) + 1
		}
		if failEvery > 0 && seed%failEvery == 0 {
			rep.Violations = []sim.Violation{{Kind: sim.Safety, Checker: "fake", Detail: fmt.Sprintf("planted in seed %d", seed)}}
		}
		enc.Encode(rep)
	}
	return 0
}

// sweepTo runs a command that writes a JSON summary and reads it back,
// with the command's standard output.
func sweepTo(t *testing.T, wantCode int, path string, args ...string) (*sweepSummary, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runMain(append([]string{args[0], "--json", path}, args[1:]...), &stdout, &stderr)
	out := stdout.String()
	if code != wantCode {
		t.Fatalf("%q exited %d, want %d:\n%s%s", args, code, wantCode, out, stderr.String())
	}
	s, err := readSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, out
}

// counts is a summary without what may differ between equal sweeps: the
// wall time, and the ranges, which a merge lists per part.
func counts(s *sweepSummary) sweepSummary {
	c := *s
	c.Wall, c.Ranges = 0, nil
	return c
}

func TestSweepGivesTheSameSummaryWhateverTheWorkersAndShards(t *testing.T) {
	t.Setenv(fakeEnv, "1")
	t.Setenv(fakeFailEnv, "10")
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	one, out1 := sweepTo(t, exitSafety, file("one.json"), "sweep", "--seeds", "1-97", "--workers", "1")
	three, out3 := sweepTo(t, exitSafety, file("three.json"), "sweep", "--seeds", "1-97", "--workers", "3")
	var parts []string
	for i := 1; i <= 3; i++ {
		p := file(fmt.Sprintf("shard%d.json", i))
		code, out := run(t, "sweep", "--seeds", "1-97", "--shard", fmt.Sprintf("%d/3", i), "--workers", "2", "--json", p)
		if code != exitSafety {
			t.Fatalf("shard %d/3 exited %d:\n%s", i, code, out)
		}
		parts = append(parts, p)
	}
	merged, outM := sweepTo(t, exitSafety, file("merged.json"), append([]string{"sweep-merge"}, parts...)...)

	if !reflect.DeepEqual(counts(one), counts(three)) || !reflect.DeepEqual(counts(one), counts(merged)) {
		t.Fatalf("summaries differ:\n1 worker:  %+v\n3 workers: %+v\nmerged:    %+v", counts(one), counts(three), counts(merged))
	}
	if one.Seeds != 97 || one.Stats.Published != 97*98/2 || one.Safety != 9 || one.Probes[sim.ProbeRecoveryTransferred] != (tally{32, 64}) {
		t.Fatalf("wrong sums: seeds %d published %d safety %d probe %+v", one.Seeds, one.Stats.Published, one.Safety, one.Probes[sim.ProbeRecoveryTransferred])
	}
	if got := merged.coveredText(); got != "seeds 1-97" || len(merged.Ranges) != 3 {
		t.Fatalf("the shards cover %q in %d ranges, want seeds 1-97 in 3", got, len(merged.Ranges))
	}
	var seeds []uint64
	for _, f := range three.Failures {
		seeds = append(seeds, f.Seed)
		if f.Kind != "safety" || f.Replay != fmt.Sprintf("cairn-sim replay --seed %d --trace trace-%d.txt", f.Seed, f.Seed) {
			t.Fatalf("failure entry %+v", f)
		}
	}
	if !slices.Equal(seeds, []uint64{10, 20, 30, 40, 50, 60, 70, 80, 90}) {
		t.Fatalf("failures %v, want every tenth seed in order", seeds)
	}
	// Printed failures come in seed order too, with the replay line, and
	// the report ends with the probes never reached.
	for _, out := range []string{out1, out3} {
		if i, j := strings.Index(out, "seed=20 "), strings.Index(out, "seed=30 "); i < 0 || j < i {
			t.Fatalf("failures out of order or missing:\n%s", out)
		}
		if !strings.Contains(out, "replay: cairn-sim replay --seed 90") || !strings.Contains(out, "seeds=97 published=4753 ") {
			t.Fatalf("no replay line or summary line:\n%s", out)
		}
		if !strings.HasSuffix(strings.TrimSpace(out), fmt.Sprintf("never reached (%d of %d probes): ", len(sim.Probes)-1, len(sim.Probes))+strings.Join(neverReached(one), ", ")) {
			t.Fatalf("the report does not end with the probes never reached:\n%s", out)
		}
	}
	if !strings.Contains(outM, "merged 3 summaries: seeds 1-97") || !strings.Contains(outM, "x.before.y") {
		t.Fatalf("merge output:\n%s", outM)
	}
}

func neverReached(s *sweepSummary) []string {
	var out []string
	for _, p := range sim.Probes {
		if s.Probes[p.Name].Seeds == 0 {
			out = append(out, p.Name)
		}
	}
	return out
}

// A worker process that dies costs the seed it held, reported as a
// simulator crash with the worker's last words; the sweep goes on.
func TestSweepSurvivesAWorkerDying(t *testing.T) {
	t.Setenv(fakeEnv, "1")
	t.Setenv(fakeDieEnv, "5")
	s, out := sweepTo(t, exitCrash, filepath.Join(t.TempDir(), "s.json"), "sweep", "--seeds", "1-12", "--workers", "2")
	if s.Seeds != 12 || s.Crashes != 1 || s.Stats.Published != 78-5 {
		t.Fatalf("seeds %d crashes %d published %d, want 12, 1, 73", s.Seeds, s.Crashes, s.Stats.Published)
	}
	if len(s.Failures) != 1 || s.Failures[0].Seed != 5 || s.Failures[0].Kind != "simulator-crash" {
		t.Fatalf("failures %+v", s.Failures)
	}
	if !strings.Contains(out, "fake worker: dying on seed 5") || !strings.Contains(out, "seed=5 SIMULATOR CRASH") {
		t.Fatalf("the crash report lacks the worker's stderr:\n%s", out)
	}
}

func TestSweepMergeRefusesOverlapsAndNamesGaps(t *testing.T) {
	t.Setenv(fakeEnv, "1")
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	c := filepath.Join(dir, "c.json")
	sweepTo(t, exitOK, a, "sweep", "--seeds", "1-30", "--shard", "1/3")
	sweepTo(t, exitOK, c, "sweep", "--seeds", "1-30", "--shard", "3/3")
	if code, out := run(t, "sweep-merge", a, a); code != exitUsage || !strings.Contains(out, "overlap") {
		t.Fatalf("merging a file with itself exited %d:\n%s", code, out)
	}
	code, out := run(t, "sweep-merge", c, a)
	if code != exitOK || !strings.Contains(out, "seeds 1-10, 21-30 (MISSING 11-20)") || !strings.Contains(out, "seeds=20 ") {
		t.Fatalf("merge with a gap exited %d:\n%s", code, out)
	}
}

func TestShardsPartitionTheRange(t *testing.T) {
	for count := uint64(1); count <= 25; count++ {
		for n := uint64(1); n <= 8; n++ {
			whole := seedRange{100, 100 + count - 1}
			next, smallest, largest := whole.first, count, uint64(0)
			for i := uint64(1); i <= n; i++ {
				r, ok := shardOf(whole, i, n)
				size := uint64(0)
				if ok {
					if r.first != next {
						t.Fatalf("%d seeds, shard %d/%d starts at %d, want %d", count, i, n, r.first, next)
					}
					size = r.last - r.first + 1
					next = r.last + 1
				}
				smallest, largest = min(smallest, size), max(largest, size)
			}
			if next != whole.last+1 || largest-smallest > 1 {
				t.Fatalf("%d seeds in %d shards: covered up to %d, sizes %d..%d", count, n, next-1, smallest, largest)
			}
		}
	}
}

func TestSweepUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sweep", "--shard", "3/2"}, {"sweep", "--shard", "0/2"}, {"sweep", "--shard", "x"},
		{"sweep", "--seeds", "5-1"}, {"sweep", "--workers", "0"}, {"sweep", "extra"}, {"sweep-merge"},
		{"sweep-merge", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if code, out := run(t, args...); code != exitUsage {
			t.Errorf("%q exited %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}

// Real seeds: the summary does not depend on the number of worker
// processes or on sharding, and a range with failovers reaches the
// failover probes and boundaries.
func TestSweepRealSeeds(t *testing.T) {
	dir := t.TempDir()
	one, out := sweepTo(t, exitOK, filepath.Join(dir, "one.json"), "sweep", "--seeds", "1-6", "--workers", "1")
	two, _ := sweepTo(t, exitOK, filepath.Join(dir, "two.json"), "sweep", "--seeds", "1-6", "--workers", "2")
	a, _ := sweepTo(t, exitOK, filepath.Join(dir, "a.json"), "sweep", "--seeds", "1-6", "--shard", "1/2")
	b, _ := sweepTo(t, exitOK, filepath.Join(dir, "b.json"), "sweep", "--seeds", "1-6", "--shard", "2/2")
	a.merge(b)
	if !reflect.DeepEqual(counts(one), counts(two)) || !reflect.DeepEqual(counts(one), counts(a)) {
		t.Fatalf("summaries differ:\n1 worker:  %+v\n2 workers: %+v\nshards:    %+v", counts(one), counts(two), counts(a))
	}
	if one.Stats.Failovers == 0 || one.Boundaries["recovery.before.install"] == nil || one.Probes[sim.ProbeRedeliveredNoNack].Seeds == 0 {
		t.Fatalf("seeds 1-6 reached no failover or no redelivery:\n%s", out)
	}
	if !strings.Contains(out, "seeds=6 published=") || !strings.Contains(out, "safety-violations=0") || !strings.Contains(out, "probes (seeds") {
		t.Fatalf("report:\n%s", out)
	}
}

// The coverage report lists exactly the functions covdata puts at 0.0%,
// in its order, with the module prefix cut from their positions.
func TestUncoveredFunctionsAreTheZeroes(t *testing.T) {
	out := []byte("github.com/cairnmq/cairn/node/a.go:10:\tkept\t\t75.0%\n" +
		"github.com/cairnmq/cairn/node/a.go:20:\tneverA\t\t0.0%\n" +
		"github.com/cairnmq/cairn/storage/b.go:5:\t*Log.neverB\t0.0%\n" +
		"total:\t\t(statements)\t80.0%\n")
	got := uncovered(out)
	want := []uncoveredFunc{{pos: "node/a.go:20", name: "neverA"}, {pos: "storage/b.go:5", name: "*Log.neverB"}}
	if !slices.Equal(got, want) {
		t.Fatalf("uncovered = %+v, want %+v", got, want)
	}
}
