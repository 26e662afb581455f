package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var hashRe = regexp.MustCompile(`hash=([0-9a-f]{16})`)

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runMain(args, &out, &errOut)
	return code, out.String() + errOut.String()
}

func hashOf(t *testing.T, out string) string {
	t.Helper()
	m := hashRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no 16-hex-digit trace hash in output:\n%s", out)
	}
	return m[1]
}

func TestRunSeedTwiceSameHashOtherSeedOtherHash(t *testing.T) {
	code, a := run(t, "run", "--seed", "7")
	if code != exitOK {
		t.Fatalf("run --seed 7 exited %d:\n%s", code, a)
	}
	_, b := run(t, "run", "--seed", "7")
	_, c := run(t, "run", "--seed", "8")
	if hashOf(t, a) != hashOf(t, b) {
		t.Fatalf("seed 7 gave two hashes:\n%s\n%s", a, b)
	}
	if hashOf(t, a) == hashOf(t, c) {
		t.Fatalf("seeds 7 and 8 share a hash:\n%s\n%s", a, c)
	}
}

func TestReplayWritesTheTraceWithTheSameHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.txt")
	code, out := run(t, "replay", "--seed", "7", "--trace", path)
	if code != exitOK {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
	_, again := run(t, "run", "--seed", "7")
	if hashOf(t, out) != hashOf(t, again) {
		t.Fatal("replay and run disagree on the trace hash")
	}
	trace, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(trace), "n1   start inc=1") || !strings.Contains(string(trace), "c1   send to=") || strings.Count(string(trace), "\n") < 1000 {
		t.Fatalf("trace file looks empty or wrong (%d bytes)", len(trace))
	}
}

func TestSweepAndBoundaries(t *testing.T) {
	code, out := run(t, "run", "--seeds", "1-6", "--workers", "2", "--quiet")
	if code != exitOK || !strings.Contains(out, "seeds=6 published=") || !strings.Contains(out, "safety-violations=0") {
		t.Fatalf("sweep exited %d:\n%s", code, out)
	}
	code, out = run(t, "boundaries", "--seeds", "1-3")
	if code != exitOK || !strings.Contains(out, "storage.before.sync") || !strings.Contains(out, "boundaries over 3 seeds") {
		t.Fatalf("boundaries exited %d:\n%s", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, {"nope"}, {"run"}, {"run", "--seed", "x"}, {"run", "--seeds", "5-2"},
		{"run", "--seed", "1", "--seeds", "1-2"}, {"run", "--seeds", "1-3", "--trace", "t.txt"},
	} {
		if code, out := run(t, args...); code != exitUsage {
			t.Errorf("%q exited %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}

func TestCounterSystemStillRuns(t *testing.T) {
	code, out := run(t, "run", "--system", "counter", "--seed", "3")
	if code != exitOK || !strings.Contains(out, "confirmed=") {
		t.Fatalf("counter run exited %d:\n%s", code, out)
	}
}

func TestHuntNeedsPlantedBugs(t *testing.T) {
	code, out := run(t, "hunt", "--bug", "drop-nack", "--seeds", "1-2")
	if code != exitUsage || !strings.Contains(out, "cairn_bugs") {
		t.Fatalf("hunt in an ordinary build exited %d:\n%s", code, out)
	}
	if code, _ := run(t, "hunt", "--bug", "no-such-bug"); code != exitUsage {
		t.Fatalf("hunt for an unknown bug exited %d", code)
	}
}

func TestFailoverReport(t *testing.T) {
	code, out := run(t, "failover-report", "--seeds", "1-3", "--backlogs", "0", "--workers", "2")
	if code != exitOK || !strings.Contains(out, "owner+metadata leader") || !strings.Contains(out, "incomplete 0") {
		t.Fatalf("failover-report exited %d:\n%s", code, out)
	}
	for _, args := range [][]string{
		{"failover-report", "--seeds", "3-1"}, {"failover-report", "--backlogs", "x"},
		{"failover-report", "--detection", "psychic"},
	} {
		if code, out := run(t, args...); code != exitUsage {
			t.Errorf("%q exited %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}

// A seed's scenario, written out and run from the file, is the same run:
// the same trace hash. Editing the file (dropping every fault) changes it.
func TestScenarioFileRunsLikeItsSeed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s7.txt")
	if code, out := run(t, "scenario", "--seed", "7", "--out", file); code != exitOK {
		t.Fatalf("scenario exited %d:\n%s", code, out)
	}
	_, bySeed := run(t, "run", "--seed", "7")
	code, byFile := run(t, "run", "--scenario", file)
	if code != exitOK || hashOf(t, bySeed) != hashOf(t, byFile) {
		t.Fatalf("scenario file ran differently (exit %d):\n%s\n%s", code, bySeed, byFile)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "fault ") {
			kept = append(kept, line)
		}
	}
	calm := filepath.Join(dir, "calm.txt")
	if err := os.WriteFile(calm, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, "run", "--scenario", calm); hashOf(t, out) == hashOf(t, byFile) {
		t.Fatal("removing every fault left the run unchanged")
	}
	if code, _ := run(t, "run", "--scenario", filepath.Join(dir, "missing.txt")); code != exitUsage {
		t.Fatalf("a missing scenario file exited %d, want %d", code, exitUsage)
	}
}

func TestShrinkUsageAndPassingScenario(t *testing.T) {
	for _, args := range [][]string{
		{"shrink", "--seed", "1"},                                        // no --out
		{"shrink", "--out", "x.scenario"},                                // no input
		{"shrink", "--seed", "1", "--scenario", "f", "--out", "x"},       // two inputs
		{"shrink", "--seed", "1", "--out", "x", "--max-runs", "0"},       // no budget
		{"shrink", "--scenario", "/no/such/file", "--out", "x.scenario"}, // unreadable
	} {
		if code, out := run(t, args...); code != exitUsage {
			t.Errorf("%q exited %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
	out := filepath.Join(t.TempDir(), "min.scenario")
	code, text := run(t, "shrink", "--seed", "7", "--out", out)
	if code != exitOK || !strings.Contains(text, "nothing to shrink") {
		t.Fatalf("shrinking a passing seed exited %d:\n%s", code, text)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("shrink wrote a file for a scenario that passes")
	}
}

// A run asked for a CPU profile writes one pprof can read (gzip-framed),
// and a profile path that cannot be created is an error before any seed
// runs, not a profile silently missing.
func TestRunWritesACPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	code, out := run(t, "run", "--seeds", "1-2", "--quiet", "--cpu-profile", path)
	if code != exitOK {
		t.Fatalf("run --cpu-profile exited %d:\n%s", code, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the profile is %d bytes and not gzip-framed", len(b))
	}
	code, out = run(t, "run", "--seed", "1", "--cpu-profile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof"))
	if code == exitOK || !strings.Contains(out, "--cpu-profile") {
		t.Fatalf("an uncreatable profile path exited %d:\n%s", code, out)
	}
}
