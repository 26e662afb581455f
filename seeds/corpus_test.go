package seeds_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

var update = flag.Bool("update", false, "rewrite the generated corpus files instead of checking them")

// namedSeeds are the workloads each named scenario is kept on.
var namedSeeds = []uint64{1, 2, 3}

// corpusFile is one scenario of the corpus.
type corpusFile struct {
	path    string
	comment string
	sc      sim.Scenario
}

// loadCorpus reads every scenario file under the corpus directories.
func loadCorpus(t *testing.T, dirs ...string) []corpusFile {
	t.Helper()
	var out []corpusFile
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.scenario"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(text), "\n")
			if !strings.HasPrefix(first, "# ") {
				t.Errorf("%s: the first line must be a comment saying what the scenario caught", path)
			}
			sc, err := sim.ParseScenario(text)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, corpusFile{path: path, comment: strings.TrimPrefix(first, "# "), sc: sc})
		}
	}
	return out
}

// TestCorpusPasses replays every scenario in the corpus: each must pass
// every checker, and do what it expects to.
func TestCorpusPasses(t *testing.T) {
	files := loadCorpus(t, "named", "bugs", "regressions")
	if len(files) < len(props.NamedScenarios)*len(namedSeeds) {
		t.Fatalf("only %d corpus files; the named scenarios alone make %d", len(files), len(props.NamedScenarios)*len(namedSeeds))
	}
	for _, f := range files {
		t.Run(f.path, func(t *testing.T) {
			t.Parallel()
			for _, v := range props.RunQueue(f.sc, nil).Violations {
				t.Errorf("%s\n  (%s)\n  replay: cairn-sim replay --scenario seeds/%s", v, f.comment, f.path)
			}
		})
	}
}

// TestNamedFilesAreCurrent keeps named/ in step with the scenario
// definitions in props: a changed definition must be written out again
// (go test ./seeds -run NamedFiles -update) and reviewed as a diff.
func TestNamedFilesAreCurrent(t *testing.T) {
	for _, ns := range props.NamedScenarios {
		for _, seed := range namedSeeds {
			path := filepath.Join("named", fmt.Sprintf("%s.seed%d.scenario", ns.Name, seed))
			text, err := ns.Scenario(seed).MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("# named failover scenario %s on seed %d's workload: %s\n%s", ns.Name, seed, ns.About, text)
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("%s is missing or stale; run go test ./seeds -run NamedFiles -update", path)
			}
		}
	}
}
